use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::tts::{TtsBody, TtsRequest};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;
use crate::submission::JobJson;
use crate::voices::cloned_voice;

/// Text to speech
///
/// Synthesizes `text` with a catalog voice or a cloned voice of the
/// account. Answers the job object; when finished within the server's sync
/// wait (the usual case) with `status: "completed"` and `result: {audioUrl,
/// duration (seconds), format, sampleRate, characters, voiceId}` (and
/// `baseVoiceId` for a cloned voice). Numbers, currency, dates, times and
/// abbreviations are read out (English and Spanish rules; espeak-ng's for
/// other languages); long text is synthesized sentence by sentence. Price:
/// `costs.tts` credits per character (default 1).
#[utoipa::path(post, path = "/v1/text-to-speech", tag = "voice", security(("bearer" = ["write"])),
    request_body = TtsBody,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming text, format, sampleRate or speed"),
              (status = 402), (status = 404, description = "`voice_not_found`")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    JobJson { body, job }: JobJson<TtsBody>,
) -> ApiResult<Response> {
    let req = parsed(&state, &auth, body).await?;
    job.submit(&state, &auth, &req).await
}

/// Text to speech, streamed
///
/// The same body as `POST /v1/text-to-speech`; answers `200` with the audio
/// itself (chunked), starting as soon as the first sentence is synthesized.
/// `X-Job-Id` names the job, which ends `completed` with an `audioUrl` of the
/// whole audio. Closing the connection early stops the job: it is charged
/// for the sentences sent in full and the rest is refunded. A worker makes
/// the audio and this process relays it; when no worker begins it within
/// `sync_wait_seconds` the job is cancelled (nothing charged): 503
/// `service_unavailable` with `Retry-After`. Streams best as `mp3`, `ogg`,
/// `pcm` or `wav` (whose header then gives no length).
#[utoipa::path(post, path = "/v1/text-to-speech/stream", tag = "voice", security(("bearer" = ["write"])),
    request_body = TtsBody,
    responses((status = 200, description = "Chunked audio in the requested format", content_type = "audio/mpeg"),
              (status = 400), (status = 402), (status = 404, description = "`voice_not_found`"),
              (status = 503, description = "`service_unavailable`: no worker began the speech in time (`Retry-After`)")))]
pub async fn stream(
    State(state): State<AppState>,
    auth: Auth,
    JobJson { body, job }: JobJson<TtsBody>,
) -> ApiResult<Response> {
    let req = parsed(&state, &auth, body).await?;
    if job.dry_run {
        return job.submit(&state, &auth, &req).await;
    }
    crate::streaming::stream_tts(state, &auth, job.opts, req).await
}

/// The body checked against the catalog (and the account's cloned voice,
/// when `voiceId` names one).
async fn parsed(state: &AppState, auth: &Auth, body: TtsBody) -> ApiResult<TtsRequest> {
    let cloned = cloned_voice(state, &auth.account_id, &body.voice_id).await?;
    Ok(TtsRequest::parse(
        body,
        state.catalog.voices.as_ref(),
        cloned,
    )?)
}
