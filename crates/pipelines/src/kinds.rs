//! The kinds this build runs, each once: its pipeline, the engines a
//! worker claiming it loads, and the `/v1/models` capability whose engines
//! it runs on. The worker's registry, what a worker process loads
//! ([`Needs::of_kinds`]) and which models have a live worker
//! (`ModelStatus::job_kinds`) all read this table, so a kind added here
//! appears in each with no other edit.

use std::sync::Arc;

use mediagen_core::{Capability, JobKind, JobRequest};
use mediagen_store::Db;
use mediagen_worker::testing::SleepPipeline;
use mediagen_worker::{Pipeline, Registry};

use crate::avatar::ExpandPipeline;
use crate::avatar_upload::AvatarUploadPipeline;
use crate::dub::{DubEditPipeline, DubPipeline};
use crate::engines::{Engines, Needs};
use crate::image::ImagePipeline;
use crate::sound::SoundPipeline;
use crate::stt::SttPipeline;
use crate::tts_job::TtsPipeline;
use crate::video::TrimPipeline;
use crate::voice::VoiceChangePipeline;
use crate::voice_clone::VoiceClonePipeline;

/// A kind this build runs.
#[derive(Clone, Copy)]
pub struct Runs {
    pub kind: JobKind,
    /// The engines its pipeline runs on.
    pub needs: Needs,
    /// The capability of `/v1/models` whose engines it runs: a model of it
    /// has a live worker when one claims this kind.
    pub capability: Option<Capability>,
    /// Its pipeline, on loaded engines.
    pub make: fn(&Engines, &Db) -> Arc<dyn Pipeline>,
}

const SPEECH: Needs = Needs {
    tts: true,
    stt: true,
};
const VOICES: Needs = Needs {
    tts: true,
    stt: false,
};
const RECOGNISERS: Needs = Needs {
    tts: false,
    stt: true,
};

/// The row of the kind of request `R`: its kind is the request's.
const fn row<R: JobRequest>(
    needs: Needs,
    capability: Option<Capability>,
    make: fn(&Engines, &Db) -> Arc<dyn Pipeline>,
) -> Runs {
    Runs {
        kind: R::KIND,
        needs,
        capability,
        make,
    }
}

/// Every kind this build runs (`test.sleep` only with test jobs on).
pub const PIPELINES: &[Runs] = &[
    // The recogniser times the words of `withTimestamps`.
    row::<mediagen_jobs::tts::TtsRequest>(SPEECH, Some(Capability::TextToSpeech), |e, _| {
        Arc::new(TtsPipeline {
            catalog: e.tts.clone(),
            stt: e.stt.clone(),
        })
    }),
    row::<mediagen_jobs::stt::SttRequest>(RECOGNISERS, Some(Capability::SpeechToText), |e, _| {
        Arc::new(SttPipeline {
            catalog: e.stt.clone(),
        })
    }),
    row::<mediagen_jobs::stt_realtime::LiveSttRequest>(RECOGNISERS, None, |e, _| {
        Arc::new(crate::stt_realtime::LiveSttPipeline {
            catalog: e.stt.clone(),
        })
    }),
    row::<mediagen_jobs::tts_realtime::LiveTtsRequest>(VOICES, None, |e, _| {
        Arc::new(crate::tts_realtime::LiveTtsPipeline {
            catalog: e.tts.clone(),
        })
    }),
    row::<mediagen_jobs::voice::ChangeRequest>(SPEECH, None, |e, _| {
        Arc::new(VoiceChangePipeline {
            tts: e.tts.clone(),
            stt: e.stt.clone(),
        })
    }),
    row::<mediagen_jobs::voice_clone::CloneRequest>(SPEECH, None, |e, db| {
        Arc::new(VoiceClonePipeline::new(
            e.tts.clone(),
            e.stt.clone(),
            db.clone(),
            e.stock.clone(),
        ))
    }),
    row::<mediagen_jobs::voice_design::DesignRequest>(VOICES, None, |e, _| {
        Arc::new(crate::voice_design::VoiceDesignPipeline { tts: e.tts.clone() })
    }),
    row::<mediagen_jobs::dub::DubRequest>(SPEECH, Some(Capability::Translation), |e, _| {
        Arc::new(DubPipeline {
            tts: e.tts.clone(),
            stt: e.stt.clone(),
            translator: e.translator.clone(),
            languages: e.dubbing.clone(),
            stock: e.stock.clone(),
        })
    }),
    row::<mediagen_jobs::dub::DubEdit>(VOICES, Some(Capability::Translation), |e, _| {
        Arc::new(DubEditPipeline { tts: e.tts.clone() })
    }),
    row::<mediagen_jobs::video::TrimRequest>(Needs::NONE, None, |_, _| Arc::new(TrimPipeline)),
    row::<mediagen_jobs::avatar::ExpandRequest>(Needs::NONE, None, |_, _| Arc::new(ExpandPipeline)),
    row::<mediagen_jobs::avatar_upload::AvatarUpload>(Needs::NONE, None, |_, db| {
        Arc::new(AvatarUploadPipeline { db: db.clone() })
    }),
    row::<mediagen_jobs::sound::SoundRequest>(
        Needs::NONE,
        Some(Capability::SoundGeneration),
        |e, _| {
            Arc::new(SoundPipeline {
                models: e.diffusion.clone(),
            })
        },
    ),
    row::<mediagen_jobs::image::ImageRequest>(
        Needs::NONE,
        Some(Capability::ImageGeneration),
        |e, _| {
            Arc::new(ImagePipeline {
                icons: e.icons.clone(),
                models: e.diffusion.clone(),
            })
        },
    ),
    row::<mediagen_worker::testing::SleepPayload>(Needs::NONE, None, |_, _| {
        Arc::new(SleepPipeline)
    }),
];

/// The pipelines of `table` on `engines` (with `test.sleep` when
/// `test_jobs`).
pub fn registry(table: &[Runs], engines: &Engines, db: &Db, test_jobs: bool) -> Registry {
    let mut registry = Registry::new();
    for runs in table {
        if runs.kind != JobKind::TestSleep || test_jobs {
            registry.register((runs.make)(engines, db));
        }
    }
    registry
}

/// What a worker claiming `kinds` of `table` loads (every kind's needs when
/// `kinds` is empty).
pub fn needs(table: &[Runs], kinds: &[JobKind]) -> Needs {
    table
        .iter()
        .filter(|r| kinds.is_empty() || kinds.contains(&r.kind))
        .fold(Needs::NONE, |all, r| all.with(r.needs))
}

impl Needs {
    /// What the job kinds `kinds` run on (every kind's when empty), as
    /// the table of kinds says ([`PIPELINES`]).
    pub fn of_kinds(kinds: &[JobKind]) -> Needs {
        needs(PIPELINES, kinds)
    }
}

impl Engines {
    /// The pipelines of every kind this build has (with the test kinds
    /// when `test_jobs`).
    pub fn registry(&self, db: &Db, test_jobs: bool) -> Registry {
        registry(PIPELINES, self, db, test_jobs)
    }
}

/// The kinds of `table` that run on `capability`'s engines.
pub fn of_capability(table: &[Runs], capability: Capability) -> Vec<JobKind> {
    table
        .iter()
        .filter(|r| r.capability == Some(capability))
        .map(|r| r.kind)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_runs_once() {
        let mut kinds: Vec<JobKind> = PIPELINES.iter().map(|r| r.kind).collect();
        kinds.sort_unstable();
        assert_eq!(kinds, JobKind::ALL.to_vec());
    }

    #[tokio::test]
    async fn each_row_makes_the_pipeline_of_its_kind() {
        // A pipeline's kind is its request's; the row must say the same.
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("kinds.db").display());
        let db = Db::connect(&url).await.unwrap();
        let settings = crate::EngineSettings {
            models_dir: dir.path().to_owned(),
            threads: 1,
            stt_concurrency: 1,
        };
        let engines = Engines::discover(&settings, Needs::NONE);
        for runs in PIPELINES {
            assert_eq!((runs.make)(&engines, &db).kind(), runs.kind);
        }
        let all = registry(PIPELINES, &engines, &db, true).kinds();
        assert_eq!(all, JobKind::ALL.to_vec());
        let public = registry(PIPELINES, &engines, &db, false).kinds();
        assert!(!public.contains(&JobKind::TestSleep) && public.len() == all.len() - 1);
    }

    #[test]
    fn a_kind_added_to_the_table_is_loaded_for_and_listed() {
        // Before: a sleeping worker loads nothing and serves no model.
        assert_eq!(needs(PIPELINES, &[JobKind::TestSleep]), Needs::NONE);
        assert_eq!(
            of_capability(PIPELINES, Capability::TextToSpeech),
            [JobKind::Tts]
        );
        // One more row, and nothing else changed.
        let mut table: Vec<Runs> = PIPELINES
            .iter()
            .filter(|r| r.kind != JobKind::TestSleep)
            .copied()
            .collect();
        table.push(Runs {
            kind: JobKind::TestSleep,
            needs: VOICES,
            capability: Some(Capability::TextToSpeech),
            make: |_, _| Arc::new(SleepPipeline),
        });
        assert_eq!(needs(&table, &[JobKind::TestSleep]), VOICES);
        assert_eq!(needs(&table, &[JobKind::TestSleep, JobKind::Stt]), SPEECH);
        assert_eq!(
            of_capability(&table, Capability::TextToSpeech),
            [JobKind::Tts, JobKind::TestSleep]
        );
        // Every kind (an empty list) needs every engine.
        assert_eq!(needs(&table, &[]), SPEECH);
        assert_eq!(needs(PIPELINES, &[JobKind::VideoTrim]), Needs::NONE);
    }
}
