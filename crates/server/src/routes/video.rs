use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::video::TrimOptions;

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::media_input::MediaJob;
use crate::state::AppState;
use mediagen_jobs::video::TrimRequest;

/// Trim a video
///
/// `multipart/form-data` with a `file` part (a video ffmpeg reads) and the
/// options as text parts (`ranges` as JSON text), or a JSON body with the
/// `fileId` of an uploaded file. Options: `ranges` (required: `[{start,
/// end}]`, seconds as numbers or `"HH:MM:SS.mmm"` strings, kept in the order
/// given and joined into one video), `mode` (`accurate`, the default:
/// frame-exact cut points; `fast`: stream copy of picture and sound, each
/// start snaps to the keyframe at or before it, each end to the first
/// complete point at or after it, and the result reports the times used),
/// `format` (`mp4` default, `webm`, `mov`, `mkv`), `clamp` (true: ranges
/// past the end are cut at the end instead of refused).
///
/// The job's `result`: `{videoUrl, duration (seconds), ranges (as applied),
/// mode, method (reencode or stream_copy), format, contentType, width,
/// height, fps}`. A range with start ≥ end or past the end (without
/// `clamp`), or more than `max_trim_ranges` ranges → 422 `invalid_range`
/// naming its index. Not media → 415; unreadable media → 422. Price:
/// `costs.video.trim` credits per second of output, rounded up.
#[utoipa::path(post, path = "/v1/video/trim", tag = "video", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::video::VideoTrimForm = "multipart/form-data"))),
    responses((status = 200, body = crate::jobs::JobView), (status = 202, body = crate::jobs::JobView),
              (status = 400, description = "`invalid_parameter` naming ranges, mode, format…"),
              (status = 404, description = "No file with that `fileId`"), (status = 415, description = "Not audio or video"),
              (status = 422, description = "`invalid_range` or `unreadable_media`")))]
pub async fn trim(
    State(state): State<AppState>,
    auth: Auth,
    input: MediaJob<TrimRequest>,
) -> ApiResult<Response> {
    let duration = input.input.file.duration.unwrap_or(0.0);
    let options = TrimOptions::parse(input.fields(), duration, state.config.max_trim_ranges)?;
    input
        .submit(&state, &auth, |file| options.with_file(file))
        .await
}
