//! `GET /speech-to-text/realtime`: ElevenLabs' realtime speech-to-text on
//! our live session (the relay of crate::routes::realtime, its messages
//! read by [`Scribe`]).

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Json;
use mediagen_core::{ApiError, JobKind};
use std::collections::HashMap;

use mediagen_jobs::elevenlabs::elevenlabs_names;
use mediagen_jobs::elevenlabs::realtime::ScribeSession;
use mediagen_jobs::elevenlabs::stream_input::{StreamInput, StreamInputQuery};
use mediagen_jobs::tts_realtime::LiveTtsRequest;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::jobs::JobSpec;
use crate::routes::realtime::{open, websocket};
use crate::routes::tokens::mint;
use crate::routes::with_ignored;
use crate::state::AppState;
use crate::voices::cloned_voice;

/// The session: its query checked (400, ElevenLabs' parameter names),
/// then the upgrade (426), then as `GET /v1/speech-to-text/realtime`.
pub async fn live_stt(
    State(state): State<AppState>,
    auth: Auth,
    Query(pairs): Query<Vec<(String, String)>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let session = ScribeSession::parse(
        &pairs,
        state.catalog.recognisers.as_ref(),
        state.config.session_idle_seconds,
    )?;
    let upgrade = websocket(upgrade)?;
    let spec = JobSpec::of(&session.request, false)?;
    let response = open(&state, &auth, spec, upgrade, Box::new(session.dialect)).await?;
    Ok(with_ignored(response, &session.ignored))
}

/// `GET /text-to-speech/{voice_id}/stream-input`: ElevenLabs' speech from
/// streamed input on our live speech session: its query checked (400,
/// ElevenLabs' parameter names), then the upgrade (426), then as
/// `GET /v1/text-to-speech/realtime`.
pub async fn stream_input(
    State(state): State<AppState>,
    auth: Auth,
    Path(voice_id): Path<String>,
    Query(fields): Query<HashMap<String, String>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let asked = StreamInputQuery::parse(&voice_id, &fields, &state.catalog)?;
    let upgrade = websocket(upgrade)?;
    let cloned = cloned_voice(&state, &auth.account_id, &asked.query.voice_id).await?;
    let idle = asked
        .idle_seconds
        .unwrap_or(state.config.session_idle_seconds);
    let request = LiveTtsRequest::parse(asked.query, state.catalog.voices.as_ref(), cloned, idle)
        .map_err(elevenlabs_names)?;
    let spec = JobSpec::of(&request, false)?;
    let response = open(
        &state,
        &auth,
        spec,
        upgrade,
        Box::new(StreamInput::default()),
    )
    .await?;
    Ok(with_ignored(response, &asked.ignored))
}

/// `POST /single-use-token/{token_type}`: `{token}`, a single-use token
/// for a browser's session (ours of `POST /v1/tokens`): `realtime_scribe`
/// opens a realtime transcription, `tts_websocket` a stream-input speech.
pub async fn token(
    State(state): State<AppState>,
    auth: Auth,
    Path(token_type): Path<String>,
) -> ApiResult<Json<Value>> {
    let kind = match token_type.as_str() {
        "realtime_scribe" => JobKind::SttRealtime,
        _ => {
            return Err(ApiError::invalid_parameter("token_type", "must be realtime_scribe").into())
        }
    };
    let minted = mint(&state, &auth, kind).await?;
    Ok(Json(json!({"token": minted.token})))
}
