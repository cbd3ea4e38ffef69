//! Signed result URLs. They carry their own authorization (an HMAC over the
//! blob key and expiry), so browsers and media players can fetch them
//! without the API key.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use mediagen_core::time::now_ms;
use mediagen_core::{ApiError, ErrorCode};
use mediagen_store::{content_type_for, BlobRange, SignedUrlError};
use serde::Deserialize;

use crate::error::ApiResult;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct SignedQuery {
    pub expires: Option<i64>,
    pub signature: Option<String>,
}

/// Download a result file
///
/// The URLs in job results point here. `Range` requests are answered with
/// 206. A changed or missing signature → 403 `invalid_signature`; an expired
/// URL → 403 `url_expired`; a file that is gone → 404.
#[utoipa::path(get, path = "/blobs/{key}", tag = "files",
    params(("key" = String, Path), ("expires" = i64, Query), ("signature" = String, Query)),
    responses((status = 200, description = "The file"), (status = 206, description = "A byte range"),
              (status = 403, description = "Bad or expired signature"), (status = 404), (status = 416)))]
pub async fn download(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(q): Query<SignedQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    verify(&state, &key, &q)?;
    serve(&state, &key, &headers).await
}

/// Checks a signed URL's signature (403 `invalid_signature`), then its
/// expiry (403 `url_expired`).
pub fn verify(state: &AppState, key: &str, q: &SignedQuery) -> ApiResult<()> {
    let (Some(expires), Some(signature)) = (q.expires, q.signature.as_deref()) else {
        return Err(ApiError::new(ErrorCode::InvalidSignature).into());
    };
    state
        .signer
        .verify(key, expires, signature, now_ms() / 1000)
        .map_err(|e| match e {
            SignedUrlError::Invalid => ApiError::new(ErrorCode::InvalidSignature),
            SignedUrlError::Expired => ApiError::new(ErrorCode::UrlExpired),
        })?;
    Ok(())
}

/// Streams a stored blob, honouring a single `Range`.
pub async fn serve(state: &AppState, key: &str, headers: &HeaderMap) -> ApiResult<Response> {
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(BlobRange::parse);
    let read = state.blobs.get(key, range).await?;
    let partial = range.is_some();
    let len = read.range.end - read.range.start;
    let mut response =
        Body::from_stream(read.stream.map_err(std::io::Error::other)).into_response();
    *response.status_mut() = if partial {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type_for(key)),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    if partial {
        let value = format!(
            "bytes {}-{}/{}",
            read.range.start,
            read.range.end - 1,
            read.size
        );
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(header::CONTENT_RANGE, v);
        }
    }
    Ok(response)
}
