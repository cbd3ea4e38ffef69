//! Voice previews: `previewUrl` of every voice points here. The sample is
//! synthesized the first time it is asked for, then kept in the blob store.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use mediagen_core::time::now_ms;
use mediagen_core::{ApiError, ErrorCode};
use mediagen_pipelines::tts::preview_mp3;

use crate::error::{ApiResult, Error};
use crate::extract::ApiQuery;
use crate::jobs::signed_url;
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
    responses((status = 200, description = "audio/mpeg"), (status = 403), (status = 404, description = "`voice_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    Path(file): Path<String>,
    ApiQuery(q): ApiQuery<SignedQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let key = format!("previews/{file}");
    verify(&state, &key, &q)?;
    let voice_id = file.strip_suffix(".mp3").unwrap_or(&file).to_owned();
    if state.tts.voice(&voice_id).is_none() {
        return Err(ApiError::new(ErrorCode::VoiceNotFound).into());
    }
    if !state.blobs.exists(&key).await? {
        let catalog = state.tts.clone();
        let id = voice_id.clone();
        let mp3 = tokio::task::spawn_blocking(move || preview_mp3(&catalog, &id))
            .await
            .map_err(Error::internal)?
            .map_err(Error::internal)?;
        state.blobs.put(&key, mp3.into()).await?;
    }
    serve(&state, &key, "audio/mpeg", &headers).await
}
