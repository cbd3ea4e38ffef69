//! `GET /speech-to-text/realtime`: ElevenLabs' realtime speech-to-text on
//! our live session (the relay of crate::routes::realtime, its messages
//! read by [`Scribe`]).

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Json;
use mediagen_core::{ApiError, JobKind};
use mediagen_jobs::elevenlabs::realtime::ScribeSession;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::jobs::JobSpec;
use crate::routes::realtime::{open, websocket};
use crate::routes::tokens::mint;
use crate::routes::with_ignored;
use crate::state::AppState;

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
        state.catalog.as_ref(),
        state.config.session_idle_seconds,
    )?;
    let upgrade = websocket(upgrade)?;
    let spec = JobSpec::of(&session.request, false)?;
    let response = open(&state, &auth, spec, upgrade, Box::new(session.dialect)).await?;
    Ok(with_ignored(response, &session.ignored))
}

/// `POST /single-use-token/{token_type}`: `{token}`, a single-use token
/// for a browser's session (ours of `POST /v1/tokens`): `realtime_scribe`
/// opens a realtime transcription.
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
