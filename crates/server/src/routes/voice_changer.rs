use axum::extract::{Request, State};
use axum::response::Response;
use mediagen_pipelines::voice::ChangeOptions;

use crate::error::ApiResult;
use crate::extract::{Auth, JobOptions, Write};
use crate::media_input::media_input;
use crate::routes::voices::target_profile;
use crate::state::AppState;

/// Change the voice in a file
///
/// `multipart/form-data` with a `file` part (speech in any audio or video
/// container ffmpeg reads) and the options as text parts, or a JSON body
/// with the `fileId` of an uploaded file. Options: `voiceId` (required: a
/// cloned voice of the account), `mode` (`convert`, the default and for now
/// the only mode: the words, timing and intonation stay; the pitch moves to
/// the target's median and range and the formants by the ratio of the
/// spectral centroids, with the WORLD vocoder), `format` and `sampleRate`
/// of audio output as in text-to-speech (mp3 at 24 kHz by default).
///
/// The job's `result`: `{audioUrl, duration (seconds, the input's), format,
/// sampleRate, contentType, voiceId, fileId, mode, converter, pitchBefore,
/// pitchAfter, targetPitch}` (pitches are medians in Hz, measured); a video
/// input comes back as `videoUrl` with its picture copied and the new sound
/// (mp4, or mkv for codecs mp4 cannot hold). Unknown `voiceId` → 404
/// `voice_not_found`; a catalog voice → 422 (not a conversion target yet).
/// Price: `costs."voice.change"` credits per second of input, rounded up.
#[utoipa::path(post, path = "/v1/voice-changer", tag = "voice", security(("bearer" = ["write"])),
    request_body(content_type = "multipart/form-data", description = "`file` and options as text parts (or JSON with `fileId`)"),
    responses((status = 200, body = crate::jobs::JobView), (status = 202, body = crate::jobs::JobView),
              (status = 400), (status = 404, description = "`voice_not_found` or no such file"),
              (status = 415), (status = 422)))]
pub async fn change(
    State(state): State<AppState>,
    auth: Auth<Write>,
    opts: JobOptions,
    req: Request,
) -> ApiResult<Response> {
    let input = media_input(&state, &auth, req).await?;
    let options = ChangeOptions::parse(&input.fields)?;
    let target = target_profile(&state, &auth.account_id, &options.voice_id).await?;
    let units = input.file.duration.unwrap_or(0.0).ceil();
    input
        .submit(&state, &auth, opts, "voice.change", units, |file| {
            options.with(file.blob_key.clone(), file.id.clone(), target)
        })
        .await
}
