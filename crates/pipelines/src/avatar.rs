//! `avatar.expand`: an avatar clip (or any video) made exactly as long as
//! asked, or as long as a voice track that is put under it; a built-in
//! presenter with a voice track is drawn talking instead.

use mediagen_core::time::round_ms;
use std::cell::Cell;
use std::path::Path;

use mediagen_core::ErrorCode;
use mediagen_media::avatar::{frame, CATALOG, FPS, SECONDS, SIZE};
use mediagen_media::expand::{
    mouth_track, plan_seamless, plan_simple, render, render_drawn, seam_score, thumbnails, Mode,
    Output,
};
use mediagen_media::media::demuxer;
use mediagen_media::pcm;
use mediagen_media::video::inspect;
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

pub use mediagen_jobs::avatar::*;

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
        .map_err(crate::failure::media_failure)?;
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
    let probed = inspect(source)
        .map_err(|e| unreadable(&e))?
        .ok_or_else(|| {
            JobFailure::abort(ErrorCode::NotVideo, "the source has no picture stream")
        })?;
    // Read at the rate its frames come at (never a rate guessed from one
    // odd timestamp), at most MAX_FPS; priced on the frames and pixels
    // made before anything is decoded (the hold raised, or the job stops).
    let info = mediagen_media::video::VideoInfo {
        fps: probed.frame_rate(MAX_FPS),
        ..probed
    };
    ctx.meter_blocking(expansion_units(
        req.seconds,
        info.fps,
        info.width & !1,
        info.height & !1,
    ))?;
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
impl RequestPipeline for ExpandPipeline {
    type Request = ExpandRequest;

    async fn work(&self, ctx: JobContext, req: ExpandRequest) -> Result<Value, JobFailure> {
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
            let (job, req, out, scratch) =
                (ctx.clone(), req.clone(), out.clone(), dir.path().to_owned());
            ctx.blocking(move || {
                let ctx = job;
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
