//! Voice previews: `previewUrl` of every voice points here. The sample is
//! made by a worker (a `voice.preview` job) the first time it is asked
//! for, then kept in the blob store: the API process runs no engine.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use mediagen_core::time::now_ms;
use mediagen_core::KeyId;
use mediagen_core::{ApiError, ErrorCode};
use std::time::Duration;

use mediagen_core::job::JobStatus;
use mediagen_core::Level;
use mediagen_jobs::tts::PreviewRequest;
use serde_json::json;

use crate::error::{ApiResult, Error};
use crate::extract::ApiQuery;
use crate::extract::JobOptions;
use crate::jobs::{create, signed_url, wait_for, JobSpec};
use crate::middleware::Principal;
use crate::routes::blobs::{serve, verify, SignedQuery};
use crate::state::AppState;

/// The blob key of a voice's preview.
pub fn preview_key(voice_id: &str) -> String {
    format!("previews/{voice_id}.mp3")
}

/// A signed URL of a voice's preview, valid for `url_ttl_seconds`.
pub fn preview_url(state: &AppState, voice_id: &str) -> String {
    let expires = now_ms() / 1000 + state.config.url_ttl_seconds as i64;
    signed_url(state, &preview_key(voice_id), expires).replacen("/blobs/previews/", "/previews/", 1)
}

/// Voice preview
///
/// A few seconds of the voice, as mp3. Signed like result URLs (no API key).
#[utoipa::path(get, path = "/previews/{file}", tag = "voice",
    params(("file" = String, Path, description = "`<voiceId>.mp3`"), ("expires" = i64, Query), ("signature" = String, Query)),
    responses((status = 200, description = "audio/mpeg"), (status = 403), (status = 404, description = "`voice_not_found`"),
        (status = 503, description = "`service_unavailable`: no worker has made the preview yet (`Retry-After`)")))]
pub async fn get(
    State(state): State<AppState>,
    Path(file): Path<String>,
    ApiQuery(q): ApiQuery<SignedQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let key = format!("previews/{file}");
    verify(&state, &key, &q)?;
    let voice_id = file.strip_suffix(".mp3").unwrap_or(&file).to_owned();
    if state.catalog.voice(&voice_id).is_none() {
        return Err(ApiError::new(ErrorCode::VoiceNotFound).into());
    }
    if !state.blobs.exists(&key).await? {
        let made = made_by_a_worker(&state, &voice_id).await?;
        let mp3 = state.blobs.get_bytes(&made).await?;
        state.blobs.put(&key, mp3).await?;
    }
    serve(&state, &key, "audio/mpeg", &headers).await
}

/// Has a worker make the preview (a `voice.preview` job of the operator
/// account, at no cost; requests for the same voice share one job) and
/// returns the key of the file it stored. 503 while no worker has made it
/// within `sync_wait_seconds`.
async fn made_by_a_worker(state: &AppState, voice_id: &str) -> ApiResult<String> {
    let operator = state
        .db
        .operator_account()
        .await?
        .ok_or_else(|| Error::internal("no operator account"))?;
    let who = Principal {
        account_id: operator.id,
        // The server asks on its own behalf: no key.
        key_id: KeyId::from_stored(String::new()),
        level: Level::Admin,
        is_operator: true,
    };
    let opts = JobOptions {
        respond_async: true,
        idempotency_key: Some(format!("voice-preview:{voice_id}")),
        webhook_url: None,
    };
    let spec = JobSpec {
        kind: "voice.preview",
        payload: json!(PreviewRequest {
            voice_id: voice_id.to_owned()
        }),
        units: 0.0,
        dry_run: false,
        media_seconds: 0.0,
    };
    let (job, _) = create(state, &who, opts, spec).await?;
    state.events.job_submitted();
    let wait = Duration::from_secs_f64(state.config.sync_wait_seconds);
    let job = wait_for(state, job, wait).await?;
    match (job.status, job.outputs.first()) {
        (JobStatus::Completed, Some(output)) => Ok(output.key.clone()),
        (JobStatus::Queued | JobStatus::Processing, _) => Err(Error::from(
            ApiError::new(ErrorCode::ServiceUnavailable)
                .with_message("The preview is being made; ask again in a moment."),
        )
        .with_retry_after(5)),
        _ => Err(Error::internal("the preview job failed")),
    }
}
