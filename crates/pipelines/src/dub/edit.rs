//! `dubbing.edit`: the edited lines of a finished dub spoken again and
//! mixed anew.

use mediagen_core::time::round_ms;
use std::sync::Arc;
use std::time::Instant;

use mediagen_core::ErrorCode;
use mediagen_media::pcm::PcmFile;
use mediagen_media::video::inspect;
use mediagen_speech::tts::{Foreign, TtsCatalog};
use mediagen_speech::voice::RATE;
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

use super::cast::Cast;
use super::run::{dub_fit, f32_samples, finish, store, Assembled, Dubbed, Kept};
use crate::respeak::{speak_line, Line, Spoken};
use crate::tts::tts_failure;
use mediagen_jobs::dub::DubEdit;

/// `dubbing.edit`: the edited lines of a dub spoken again and mixed anew.
pub struct DubEditPipeline {
    pub tts: Arc<TtsCatalog>,
}

impl DubEditPipeline {
    #[allow(clippy::too_many_arguments)]
    fn edit(
        &self,
        e: &DubEdit,
        input: &std::path::Path,
        scratch: &std::path::Path,
        bed: PcmFile,
        lines: Vec<f32>,
        kept: Kept,
        tables: Vec<Option<Vec<f32>>>,
        ctx: &JobContext,
        timings: &mut Value,
    ) -> Result<Dubbed, JobFailure> {
        let unreadable = |e: &dyn std::fmt::Display| {
            JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string())
        };
        let video = inspect(input).map_err(|e| unreadable(&e))?;
        if kept.lengths.len() != e.segments.len()
            || kept.lengths.iter().sum::<usize>() != lines.len()
        {
            return Err(JobFailure::abort(
                ErrorCode::DubUnavailable,
                "the stored dub does not match its lines",
            ));
        }
        // The lines as they were spoken.
        let mut at = 0;
        let mut spoken: Vec<Spoken> = Vec::with_capacity(e.segments.len());
        for (s, n) in e.segments.iter().zip(&kept.lengths) {
            spoken.push(Spoken {
                placed: crate::respeak::Placed {
                    start: s.spoken_start,
                    end: s.spoken_end,
                    speedup: s.speedup,
                    overrun: s.overrun,
                },
                samples: lines[at..at + n].to_vec(),
            });
            at += n;
        }
        let mut texts: Vec<Line> = e
            .segments
            .iter()
            .map(|s| Line {
                start: s.start,
                end: s.end,
                text: s.translated_text.clone(),
                foreign: (!s.untranslated.is_empty()).then(|| Foreign {
                    language: e.source_language.clone(),
                    words: s.untranslated.clone(),
                }),
            })
            .collect();
        // Dubs made before casts were kept spoke in one voice.
        let mut cast = kept.cast.clone().unwrap_or_else(|| {
            Cast::single(
                e.voice_id.clone(),
                kept.toward.clone(),
                None,
                e.segments.len(),
            )
        });
        if cast.who.len() != e.segments.len() {
            return Err(JobFailure::abort(
                ErrorCode::DubUnavailable,
                "the stored dub does not match its lines",
            ));
        }
        // Lines given to another speaker (checked against the dub's
        // speakers when the edit was asked for).
        for edit in &e.edits {
            let Some(who) = &edit.speaker else { continue };
            let part = cast
                .parts
                .iter()
                .position(|p| p.id.as_deref() == Some(who.as_str()))
                .ok_or_else(|| {
                    JobFailure::abort(ErrorCode::DubUnavailable, "the dub has no such speaker")
                })?;
            if let Some(slot) = cast.who.get_mut(edit.index) {
                *slot = part;
            }
        }
        let converted_from = cast.sources(&self.tts)?;
        let voices = cast.voicings(&converted_from, &tables);
        let clock = Instant::now();
        let total = bed.duration();
        for (done, edit) in e.edits.iter().enumerate() {
            let i = edit.index;
            if let Some(text) = &edit.translated_text {
                // The caller's own words: read as the target language's.
                texts[i].text = text.clone();
                texts[i].foreign = None;
            }
            let cursor = if i == 0 {
                0.0
            } else {
                spoken[i - 1].placed.end + crate::respeak::MIN_GAP
            };
            let next = e.segments.get(i + 1).map_or(total, |s| s.start);
            spoken[i] = speak_line(
                &self.tts,
                &voices[cast.who[i]],
                &texts[i],
                cursor,
                next,
                &dub_fit(e.request.max_speedup),
            )
            .map_err(tts_failure)?;
            ctx.set_progress(((done + 1) * 80 / e.edits.len()) as i64);
            if ctx.is_cancelled() {
                return Err(JobFailure::abort(
                    ErrorCode::Cancelled,
                    "The job was cancelled.",
                ));
            }
        }
        timings["synthesize"] = json!(round_ms(clock.elapsed().as_secs_f64()));
        let assembled = Assembled {
            bed,
            lines: texts,
            sources: e.segments.iter().map(|s| s.source_text.clone()).collect(),
            spoken,
            cast,
            source_language: e.source_language.clone(),
            transcript: kept.transcript,
            tables: Vec::new(),
        };
        finish(
            &e.request,
            input,
            video.as_ref(),
            scratch,
            assembled,
            ctx,
            timings,
        )
    }
}

#[async_trait::async_trait]
impl RequestPipeline for DubEditPipeline {
    type Request = DubEdit;

    async fn work(&self, ctx: JobContext, edit: DubEdit) -> Result<Value, JobFailure> {
        let (dir, input) = ctx.scratch_with(&edit.request.input, "input").await?;
        let stored = |name: &str| format!("jobs/{}/dub/{name}", edit.source_job);
        let gone = |e: mediagen_store::BlobError| {
            JobFailure::abort(
                ErrorCode::DubUnavailable,
                format!("the dub's stored lines are gone: {e}"),
            )
        };
        let bed = ctx
            .blobs
            .readable_file(&stored("bed.f32"), &dir.path().join("bed.f32"))
            .await
            .map_err(gone)
            .and_then(|path| PcmFile::open(&path, RATE).map_err(JobFailure::storage))?;
        let lines = f32_samples(
            &ctx.blobs
                .get_bytes(&stored("lines.f32"))
                .await
                .map_err(gone)?,
        );
        let kept: Kept = serde_json::from_slice(
            &ctx.blobs
                .get_bytes(&stored("kept.json"))
                .await
                .map_err(gone)?,
        )
        .map_err(|e| JobFailure::abort(ErrorCode::DubUnavailable, e.to_string()))?;
        // The neural clones' tables (an edit moves lines between parts, so
        // every part's).
        let tables = match &kept.cast {
            Some(cast) => cast.styles(&ctx).await?,
            None => vec![None],
        };
        let this = Self {
            tts: self.tts.clone(),
        };
        let (e, job, scratch) = (edit.clone(), ctx.clone(), dir.path().to_owned());
        let (dubbed, timings) = ctx
            .blocking(move || {
                let mut timings = json!({});
                this.edit(
                    &e,
                    &input,
                    &scratch,
                    bed,
                    lines,
                    kept,
                    tables,
                    &job,
                    &mut timings,
                )
                .map(|d| (d, timings))
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        let mut result = store(&ctx, &edit.request, dubbed, timings).await?;
        result["sourceJobId"] = json!(edit.source_job);
        result["editedSegments"] = json!(edit.edits.iter().map(|e| e.index).collect::<Vec<_>>());
        Ok(result)
    }
}
