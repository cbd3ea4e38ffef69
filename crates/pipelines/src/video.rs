//! `video.trim`: cut an uploaded video to time ranges, joined in order.

use crate::failure::{media_failure, media_result};
use mediagen_core::ErrorCode;
use mediagen_media::video::{
    inspect, inspect_near, keyframe_overrun, smart_cut_refusal, trim_accurate, trim_fast,
    trim_smart,
};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

pub use mediagen_jobs::video::*;

pub struct TrimPipeline;

#[async_trait::async_trait]
impl RequestPipeline for TrimPipeline {
    type Request = TrimRequest;

    async fn work(&self, ctx: JobContext, req: TrimRequest) -> Result<Value, JobFailure> {
        // The scratch directory goes when this function returns, however.
        let (dir, input) = ctx.scratch_with(&req.input, "input").await?;
        let out = dir.path().join(format!("trimmed.{}", req.format.as_str()));
        let scratch = dir.path().to_owned();
        let asked: f64 = req.ranges.iter().map(|r| r.end - r.start).sum();
        let (trimmed, reencoded, fallback, info, written, overrun) = {
            let (input, out, req) = (input.clone(), out.clone(), req.clone());
            // Progress by step: probed (20), cut (90), checked (the end).
            let progress = ctx.clone();
            ctx.blocking(move || {
                let points: Vec<f64> = req.ranges.iter().flat_map(|r| [r.start, r.end]).collect();
                let (info, packets) = inspect_near(&input, &points)
                    .map_err(media_failure)?
                    .ok_or_else(|| JobFailure::abort(ErrorCode::NotVideo, "the file has no video stream"))?;
                progress.set_progress(20);
                // What the keyframes make the cut read beyond its ranges
                // is priced before any of it is read (the hold raised, or
                // the job stopped), and a fast copy may not drag in more
                // than MAX_FAST_OVERRUN a range.
                let overruns = keyframe_overrun(&info, &packets, &req.ranges, req.mode == Mode::Fast);
                if req.mode == Mode::Fast {
                    if let Some(worst) = overruns.iter().copied().filter(|o| *o > MAX_FAST_OVERRUN).reduce(f64::max) {
                        return Err(JobFailure::refused(mediagen_core::ApiError::unprocessable(
                            "mode",
                            format!(
                                "this file's keyframes are far apart: fast mode would copy {worst:.0} s more than a range asks (at most {MAX_FAST_OVERRUN:.0} s); use mode accurate"
                            ),
                        )));
                    }
                }
                let overrun = overrun_seconds(&overruns);
                progress.meter_blocking(asked + overrun)?;
                let mut reencoded = None;
                let mut fallback = None;
                let trimmed = match req.mode {
                    Mode::Fast => {
                        let fits = ["h264", "hevc"].contains(&info.video_codec.as_str())
                            && req.format.accepts(&info.video_codec)
                            && info
                                .audio_codec
                                .as_deref()
                                .is_none_or(|a| req.format.accepts(a));
                        if !fits {
                            return Err(JobFailure::abort(ErrorCode::IncompatibleFormat,
                                format!(
                                    "fast mode copies H.264 or HEVC video into mp4, mov or mkv ({} into {} cannot be copied); use mode accurate",
                                    info.video_codec,
                                    req.format.as_str()
                                ),
                            ));
                        }
                        trim_fast(&input, &info, &packets, &req.ranges, req.format, &scratch, &out)
                    }
                    Mode::Accurate => match smart_cut_refusal(&info, req.format) {
                        None => trim_smart(
                            &input, &info, &packets, &req.ranges, req.format, &scratch, &out,
                        )
                            .map(|(t, seconds)| {
                                reencoded = Some(seconds);
                                t
                            }),
                        Some(reason) => {
                            fallback = Some(reason);
                            trim_accurate(&input, &info, &req.ranges, req.format, &out)
                        }
                    },
                };
                // The probe accepted the file: a tool failing on it now
                // found it damaged (422), unless the work was stopped or
                // the disk had no room.
                let trimmed = media_result(trimmed)?;
                progress.set_progress(90);
                // What was cut, as written: a source shorter than its header
                // (a truncated upload) yields less than the ranges planned.
                let written = inspect(&out)
                    .ok()
                    .flatten()
                    .map(|o| o.duration)
                    .ok_or_else(|| JobFailure::abort(ErrorCode::TrimFailed, "the trimmed file is unreadable"))?;
                Ok((trimmed, reencoded, fallback, info, written, overrun))
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??
        };
        ctx.put_output_file(
            "/videoUrl",
            &format!("trimmed.{}", req.format.as_str()),
            &out,
        )
        .await?;
        let planned: f64 = trimmed.ranges.iter().map(|r| r.end - r.start).sum();
        let output_seconds = planned.min(written);
        // Charged for what was cut, never for more than was asked, and for
        // what the keyframes made it copy or decode beyond the ranges
        // (past FREE_OVERRUN a range).
        ctx.meter(output_seconds.min(asked) + overrun).await?;
        Ok(json!({
            "reencodedSeconds": (reencoded.unwrap_or(match req.mode {
                Mode::Fast => 0.0,
                Mode::Accurate => output_seconds,
            }) * 1000.0).round() / 1000.0,
            "fallbackReason": fallback,
            "keyframeOverrunSeconds": (overrun * 1000.0).round() / 1000.0,
            "duration": (output_seconds * 1000.0).round() / 1000.0,
            "ranges": trimmed.ranges,
            "mode": req.mode,
            "method": trimmed.method,
            "format": req.format,
            "contentType": req.format.content_type(),
            // The picture keeps the source's size and rate in every mode.
            "width": info.width,
            "height": info.height,
            "fps": (info.fps * 1000.0).round() / 1000.0,
        }))
    }
}
