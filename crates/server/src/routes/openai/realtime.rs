//! `GET /v1/realtime?intent=transcription`: OpenAI's realtime
//! transcription session on our live session (the relay of
//! crate::routes::realtime, its events read by [`Realtime`]).

use std::collections::HashMap;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::response::Response;
use mediagen_jobs::openai::realtime::{Realtime, TranscriptionSession};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::jobs::JobSpec;
use crate::routes::realtime::{open, websocket};
use crate::state::AppState;

/// Realtime transcription (OpenAI)
///
/// OpenAI's realtime transcription session, a WebSocket, for its clients
/// (`client.realtime.connect(extra_query={"intent": "transcription"})`):
/// `session.update` (`audio.input.format` `audio/pcm` at 24000 Hz or
/// `audio/pcmu`; `transcription.language`, `transcription.prompt`;
/// `turn_detection` `server_vad` with `silence_duration_ms`, or `null`
/// for manual commits), `input_audio_buffer.append`, `commit` and
/// `clear` in; `session.created`, `session.updated`,
/// `input_audio_buffer.speech_started`, `speech_stopped`, `committed`,
/// `cleared`, `conversation.item.input_audio_transcription.delta` (what
/// the stable part of the turn adds) and `.completed` (the turn's text),
/// and `error` out. Only `intent=transcription` is served. Priced,
/// bounded and closed as `GET /v1/speech-to-text/realtime`
/// (docs/compatibility.md).
#[utoipa::path(get, path = "/v1/realtime", tag = "voice", security(("bearer" = ["write"])),
    params(mediagen_jobs::openai::realtime::RealtimeQuery),
    responses((status = 101, description = "Switching to the session's WebSocket"),
              (status = 400, description = "`invalid_parameter`: `intent` is not transcription"),
              (status = 402, description = "`insufficient_credits`: the first 30 s are not covered"),
              (status = 426, description = "Not a WebSocket upgrade"),
              (status = 429, description = "`session_limit_exceeded`"),
              (status = 503, description = "`no_session_slot`")))]
pub async fn transcription_session(
    State(state): State<AppState>,
    auth: Auth,
    Query(fields): Query<HashMap<String, String>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let session = TranscriptionSession::parse(
        &fields,
        state.catalog.recognisers.as_ref(),
        state.config.session_idle_seconds,
    )?;
    let upgrade = websocket(upgrade)?;
    let spec = JobSpec::of(&session.request, false)?;
    let dialect: Box<Realtime> = Box::new(session.dialect);
    open(&state, &auth, spec, upgrade, dialect).await
}
