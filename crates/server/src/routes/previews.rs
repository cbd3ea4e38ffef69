//! Voice previews: `previewUrl` of every voice points here. The samples are
//! made ahead, by workers as they start (`pipelines::previews`), and kept
//! in the blob store: a request here only serves one, or answers 503 at
//! once. It causes no work and bills no account.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use mediagen_core::time::now_ms;
use mediagen_core::{ApiError, ErrorCode};

use crate::error::{ApiResult, Error};
use crate::extract::ApiQuery;
use crate::jobs::signed_url;
use crate::routes::blobs::{serve, verify, SignedQuery};
use crate::state::AppState;

pub use mediagen_jobs::tts::preview_key;

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
        (status = 503, description = "`service_unavailable`: no worker has made the preview yet (`Retry-After`); workers make every catalog voice's preview as they start")))]
pub async fn get(
    State(state): State<AppState>,
    Path(file): Path<String>,
    ApiQuery(q): ApiQuery<SignedQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let key = format!("previews/{file}");
    verify(&state, &key, &q)?;
    let voice_id = file.strip_suffix(".mp3").unwrap_or(&file).to_owned();
    if state.catalog.voices.voice(&voice_id).is_none() {
        return Err(ApiError::new(ErrorCode::VoiceNotFound).into());
    }
    // Made ahead by the workers as they start: a preview URL (asked for
    // without a key) never causes work, and no account pays for it.
    if !state.blobs.exists(&key).await? {
        return Err(Error::from(
            ApiError::new(ErrorCode::ServiceUnavailable)
                .with_message("This preview is not made yet: workers make them as they start. Ask again in a moment."),
        )
        .with_retry_after(5));
    }
    serve(&state, &key, "audio/mpeg", &headers).await
}
