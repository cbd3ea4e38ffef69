//! `avatar.expand`: an avatar clip (or any video) made exactly as long as
//! asked, or as long as a voice track that is put under it; a built-in
//! presenter with a voice track is drawn talking instead.

use mediagen_core::time::round_ms;
use std::cell::Cell;
use std::collections::HashMap;
use std::path::Path;

use mediagen_core::{ApiError, ErrorCode};
use mediagen_media::avatar::{frame, CATALOG, FPS, SECONDS, SIZE};
use mediagen_media::expand::{
    mouth_track, plan_seamless, plan_simple, render, render_drawn, seam_score, thumbnails, Mode,
    Output,
};
use mediagen_media::media::demuxer;
use mediagen_media::pcm;
use mediagen_media::video::{inspect, Container};
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The longest output, seconds (ten minutes).
pub const MAX_SECONDS: f64 = 600.0;

/// A validated expansion (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExpandRequest {
    /// Blob key of the source clip.
    pub source: String,
    pub avatar_id: Option<String>,
    pub file_id: Option<String>,
    /// The built-in presenter to draw talking over `audio`.
    pub talking: Option<String>,
    /// Output seconds.
    pub seconds: f64,
    /// Blob key of the sound put under the picture.
    pub audio: Option<String>,
    pub audio_file_id: Option<String>,
    pub mode: Mode,
    pub format: Container,
    pub seed: u64,
}

/// The options of an expansion besides its source: `duration` or the
/// length of the `audioFileId` (resolved by the caller), `mode`, `format`,
/// `seed`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpandOptions {
    /// Requested seconds; `None` when the audio sets the length.
    pub duration: Option<f64>,
    pub audio_file_id: Option<String>,
    pub mode: Mode,
    pub format: Container,
    pub seed: u64,
}

impl ExpandOptions {
    pub fn parse(fields: &HashMap<String, String>) -> Result<Self, ApiError> {
        const KNOWN: [&str; 8] = [
            "avatarId",
            "fileId",
            "duration",
            "audioFileId",
            "mode",
            "format",
            "seed",
            "dryRun",
        ];
        if let Some(key) = fields.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ApiError::invalid_parameter(key, "unknown parameter"));
        }
        let duration = match fields.get("duration") {
            None => None,
            Some(d) => {
                let d: f64 = d.trim().parse().map_err(|_| {
                    ApiError::invalid_parameter("duration", "must be seconds (a number)")
                })?;
                Some(Self::check_seconds("duration", d)?)
            }
        };
        let audio_file_id = fields.get("audioFileId").cloned();
        match (&duration, &audio_file_id) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    "send either `duration` or `audioFileId` (whose length sets the duration), not both",
                ))
            }
            (None, None) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    "required (seconds), unless `audioFileId` is sent",
                ))
            }
            _ => {}
        }
        let mode = match fields.get("mode") {
            None => Mode::Seamless,
            Some(m) => Mode::parse(m).ok_or_else(|| {
                ApiError::invalid_parameter(
                    "mode",
                    "must be one of seamless, pingpong, loop, freeze",
                )
            })?,
        };
        let format = match fields.get("format") {
            None => Container::Mp4,
            Some(f) => Container::parse(f).ok_or_else(|| {
                ApiError::invalid_parameter("format", "must be one of mp4, webm, mov, mkv")
            })?,
        };
        let seed = match fields.get("seed") {
            None => 0,
            Some(s) => s.parse().map_err(|_| {
                ApiError::invalid_parameter("seed", "must be a non-negative integer")
            })?,
        };
        Ok(Self {
            duration,
            audio_file_id,
            mode,
            format,
            seed,
        })
    }

    /// A length in seconds: more than 0, at most [`MAX_SECONDS`] (422
    /// naming `parameter` otherwise).
    pub fn check_seconds(parameter: &str, seconds: f64) -> Result<f64, ApiError> {
        if !seconds.is_finite() || seconds <= 0.0 {
            return Err(ApiError::unprocessable(
                parameter,
                "the duration must be more than 0 seconds",
            ));
        }
        if seconds > MAX_SECONDS {
            return Err(ApiError::unprocessable(
                parameter,
                format!("the duration may be at most {MAX_SECONDS} seconds (got {seconds})"),
            ));
        }
        Ok(seconds)
    }
}

/// 422 for a source without a picture.
pub fn not_a_video(parameter: &str) -> ApiError {
    ApiError::unprocessable(
        parameter,
        "the file has no picture stream (an avatar needs video)",
    )
}

pub struct ExpandPipeline;

fn failed(e: impl std::fmt::Display) -> JobFailure {
    JobFailure::abort(ErrorCode::ExpansionFailed, e.to_string())
}

/// A frame counter that reports progress and stops a cancelled job.
fn ticker(ctx: &JobContext, total: usize) -> impl Fn() -> bool + '_ {
    let done = Cell::new(0usize);
    move || {
        let k = done.get() + 1;
        done.set(k);
        if k.is_multiple_of(25) {
            ctx.set_progress((k * 100 / total.max(1)) as i64);
        }
        ctx.is_cancelled()
    }
}

/// What a finished expansion reports.
struct Made {
    frames: usize,
    fps: f64,
    width: u32,
    height: u32,
    jumps: usize,
    seam: f64,
}

fn talking(
    ctx: &JobContext,
    look_id: &str,
    (audio, demuxer): (&Path, &'static str),
    scratch: &Path,
    seconds: f64,
    out: &Output,
) -> Result<Made, JobFailure> {
    let look = CATALOG
        .iter()
        .find(|l| l.id == look_id)
        .ok_or_else(|| JobFailure::abort(ErrorCode::InvalidPayload, "unknown presenter"))?;
    let fps = f64::from(FPS);
    let frames = ((seconds * fps).round() as usize).max(1);
    let pcm = pcm::decode(audio, demuxer, &scratch.join("voice.f32"), 16_000, seconds)
        .map_err(|e| JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string()))?;
    let samples = pcm
        .read_at(0, ((seconds + 1.0) * 16_000.0) as usize)
        .map_err(failed)?;
    let mouth = mouth_track(&samples, fps, frames);
    let tick = ticker(ctx, frames);
    render_drawn((SIZE, SIZE), fps, frames, out, &tick, |k| {
        let t = (k as f32 / FPS as f32) % SECONDS as f32;
        frame(look, t, mouth[k]).data().to_vec()
    })
    .map_err(failed)?;
    Ok(Made {
        frames,
        fps,
        width: SIZE,
        height: SIZE,
        jumps: 0,
        seam: 0.0,
    })
}

fn expand(
    ctx: &JobContext,
    req: &ExpandRequest,
    source: &Path,
    scratch: &Path,
    out: &Output,
) -> Result<Made, JobFailure> {
    let unreadable =
        |e: &dyn std::fmt::Display| JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string());
    let info = inspect(source)
        .map_err(|e| unreadable(&e))?
        .ok_or_else(|| {
            JobFailure::abort(ErrorCode::NotVideo, "the source has no picture stream")
        })?;
    let cache = scratch.join("frames.yuv");
    let thumbs = thumbnails(source, &info, Some(&cache)).map_err(|e| unreadable(&e))?;
    if thumbs.is_empty() {
        return Err(JobFailure::abort(
            ErrorCode::NotVideo,
            "the source has no frames",
        ));
    }
    let total = ((req.seconds * info.fps).round() as usize).max(1);
    let plan = match req.mode {
        Mode::Seamless => plan_seamless(&thumbs, info.fps, total, req.seed),
        mode => plan_simple(mode, thumbs.len(), total),
    };
    let seam = seam_score(&thumbs, &plan);
    let tick = ticker(ctx, total);
    render(source, &info, thumbs.len(), &plan, Some(&cache), out, &tick).map_err(failed)?;
    Ok(Made {
        frames: total,
        fps: info.fps,
        width: info.width & !1,
        height: info.height & !1,
        jumps: plan.jumps,
        seam,
    })
}

#[async_trait::async_trait]
impl Pipeline for ExpandPipeline {
    fn kind(&self) -> &'static str {
        "avatar.expand"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: ExpandRequest = ctx.payload()?;
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let audio = match &req.audio {
            Some(key) => Some(
                ctx.blobs
                    .readable_file(key, &dir.path().join("audio"))
                    .await
                    .map_err(JobFailure::storage)?,
            ),
            None => None,
        };
        let source = match &req.talking {
            Some(_) => None,
            None => Some(
                ctx.blobs
                    .readable_file(&req.source, &dir.path().join("source"))
                    .await
                    .map_err(JobFailure::storage)?,
            ),
        };
        let out = dir.path().join(format!("expanded.{}", req.format.as_str()));
        let made = {
            let (ctx, req, out, scratch) =
                (ctx.clone(), req.clone(), out.clone(), dir.path().to_owned());
            tokio::task::spawn_blocking(move || {
                // The sound's demuxer, found again by a probe limited to
                // the allowed ones: every read of it names it.
                let audio = match &audio {
                    Some(path) => Some((
                        path.as_path(),
                        demuxer(path).map_err(|e| {
                            JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string())
                        })?,
                    )),
                    None => None,
                };
                let output = Output {
                    container: req.format,
                    path: &out,
                    audio,
                };
                match (&req.talking, audio, &source) {
                    (Some(look), Some(audio), _) => {
                        talking(&ctx, look, audio, &scratch, req.seconds, &output)
                    }
                    (_, _, Some(source)) => expand(&ctx, &req, source, &scratch, &output),
                    _ => Err(JobFailure::abort(
                        ErrorCode::InvalidPayload,
                        "nothing to expand",
                    )),
                }
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??
        };
        ctx.put_output_file(
            "/videoUrl",
            &format!("expanded.{}", req.format.as_str()),
            &out,
        )
        .await?;
        Ok(json!({
            "duration": round_ms(made.frames as f64 / made.fps),
            "frames": made.frames,
            "fps": round_ms(made.fps),
            "width": made.width,
            "height": made.height,
            "mode": if req.talking.is_some() { "talking" } else { req.mode.as_str() },
            "jumps": made.jumps,
            "seamScore": made.seam,
            "format": req.format,
            "contentType": req.format.content_type(),
            "avatarId": req.avatar_id,
            "fileId": req.file_id,
            "audioFileId": req.audio_file_id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn options_are_validated() {
        let ok =
            ExpandOptions::parse(&fields(&[("duration", "37.4"), ("mode", "pingpong")])).unwrap();
        assert_eq!((ok.duration, ok.mode), (Some(37.4), Mode::Pingpong));
        for bad in ["0", "-3", "601"] {
            let e = ExpandOptions::parse(&fields(&[("duration", bad)])).unwrap_err();
            assert_eq!(e.code, ErrorCode::UnprocessableEntity, "{bad}");
            assert_eq!(e.details["parameter"], "duration");
        }
        for bad in [
            fields(&[]),
            fields(&[("duration", "x")]),
            fields(&[("duration", "3"), ("audioFileId", "file_1")]),
            fields(&[("duration", "3"), ("mode", "bounce")]),
            fields(&[("duration", "3"), ("format", "gif")]),
            fields(&[("duration", "3"), ("colour", "red")]),
        ] {
            let e = ExpandOptions::parse(&bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParameter, "{bad:?}");
        }
    }
}
