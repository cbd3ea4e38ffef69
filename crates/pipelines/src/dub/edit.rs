//! `dubbing.edit`: the edited lines of a finished dub spoken again and
//! mixed anew.

use mediagen_core::time::round_ms;
use std::sync::Arc;
use std::time::Instant;

use mediagen_core::{ApiError, ErrorCode};
use mediagen_media::pcm::PcmFile;
use mediagen_media::video::inspect;
use mediagen_speech::tts::TtsCatalog;
use mediagen_speech::voice::RATE;
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::options::DubRequest;
use super::run::{
    dub_fit, f32_samples, finish, store, tts_failure, Assembled, Dubbed, DubbedLine, Kept,
};
use crate::respeak::{speak_line, Line, Spoken, Toward};

/// A new text for one line of a dub.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LineEdit {
    pub index: usize,
    pub translated_text: String,
}

/// An edit of a finished dub (also the job's payload): only the edited
/// lines are spoken again; the rest is taken from the dub as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubEdit {
    /// The job whose dub is edited (its stored bed and lines are read).
    pub source_job: String,
    pub request: DubRequest,
    pub source_language: String,
    /// The catalog voice that spoke the dub.
    pub voice_id: String,
    pub segments: Vec<DubbedLine>,
    pub edits: Vec<LineEdit>,
}

/// Longest edited line, in characters.
const MAX_LINE: usize = 1000;

impl DubEdit {
    /// Validates `edits` against a finished dub's job (`kind`, `payload`
    /// and `result` as stored). Errors name the parameter.
    pub fn parse(
        source_job: &str,
        kind: &str,
        payload: &Value,
        result: &Value,
        mut edits: Vec<LineEdit>,
    ) -> Result<Self, ApiError> {
        let request: DubRequest = match kind {
            "dubbing" => serde_json::from_value(payload.clone()),
            _ => serde_json::from_value(payload["request"].clone()),
        }
        .map_err(|_| ApiError::unprocessable("jobId", "not a dubbing job"))?;
        let segments: Vec<DubbedLine> = serde_json::from_value(result["segments"].clone())
            .map_err(|_| ApiError::unprocessable("jobId", "the dub has no lines"))?;
        if edits.is_empty() {
            return Err(ApiError::invalid_parameter(
                "segments",
                "give at least one line to change",
            ));
        }
        // What the dub holds is not the document's to say: a well-formed
        // edit naming lines it lacks (or one twice) is 422.
        if edits.len() > segments.len() {
            return Err(ApiError::unprocessable(
                "segments",
                format!("give 1 to {} lines to change", segments.len()),
            ));
        }
        edits.sort_by_key(|e| e.index);
        for e in edits.iter_mut() {
            if e.index >= segments.len() {
                return Err(ApiError::unprocessable(
                    "segments",
                    format!(
                        "index {} is past the last line ({})",
                        e.index,
                        segments.len() - 1
                    ),
                ));
            }
            e.translated_text = e.translated_text.trim().to_owned();
            let chars = e.translated_text.chars().count();
            if chars == 0 || chars > MAX_LINE {
                return Err(ApiError::invalid_parameter(
                    "segments",
                    format!(
                        "line {}: translatedText must be 1 to {MAX_LINE} characters",
                        e.index
                    ),
                ));
            }
        }
        if edits.windows(2).any(|w| w[0].index == w[1].index) {
            return Err(ApiError::unprocessable(
                "segments",
                "each line may be changed once per call",
            ));
        }
        Ok(Self {
            source_job: source_job.to_owned(),
            request,
            source_language: result["sourceLanguage"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            voice_id: result["voiceId"].as_str().unwrap_or_default().to_owned(),
            segments,
            edits,
        })
    }

    /// Seconds of the edited lines' slots (billed).
    pub fn seconds(&self) -> f64 {
        self.edits
            .iter()
            .map(|e| {
                let s = &self.segments[e.index];
                (s.end - s.start).max(0.0)
            })
            .sum()
    }
}

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
            })
            .collect();
        let base_profile = match &kept.toward {
            Some(_) => Some(self.tts.profile(&e.voice_id).map_err(tts_failure)?),
            None => None,
        };
        let toward = match (&kept.toward, &base_profile) {
            (Some(target), Some(source)) => Some(Toward { target, source }),
            _ => None,
        };
        let clock = Instant::now();
        let total = bed.duration();
        for (done, edit) in e.edits.iter().enumerate() {
            let i = edit.index;
            texts[i].text = edit.translated_text.clone();
            let cursor = if i == 0 {
                0.0
            } else {
                spoken[i - 1].placed.end + crate::respeak::MIN_GAP
            };
            let next = e.segments.get(i + 1).map_or(total, |s| s.start);
            spoken[i] = speak_line(
                &self.tts,
                &e.voice_id,
                toward,
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
            speaker: e.voice_id.clone(),
            toward: kept.toward,
            source_language: e.source_language.clone(),
            transcript: kept.transcript,
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
impl Pipeline for DubEditPipeline {
    fn kind(&self) -> &'static str {
        "dubbing.edit"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let edit: DubEdit = ctx.payload()?;
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let input = ctx
            .blobs
            .readable_file(&edit.request.input, &dir.path().join("input"))
            .await
            .map_err(JobFailure::storage)?;
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
        let this = Self {
            tts: self.tts.clone(),
        };
        let (e, job, scratch) = (edit.clone(), ctx.clone(), dir.path().to_owned());
        let (dubbed, timings) = tokio::task::spawn_blocking(move || {
            let mut timings = json!({});
            this.edit(&e, &input, &scratch, bed, lines, kept, &job, &mut timings)
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
