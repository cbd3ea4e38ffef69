//! Signed result URLs. They carry their own authorization (an HMAC over the
//! blob key and expiry), so browsers and media players can fetch them
//! without the API key.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, AvatarId, JobId, VoiceId};
use mediagen_core::{ApiError, ErrorCode};
use mediagen_store::{content_type_for, BlobRange, SignedUrlError};
use serde::Deserialize;

use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::routes::avatars::{poster_key, video_key};
use crate::state::AppState;

#[derive(Deserialize)]
pub struct SignedQuery {
    /// Unix seconds (read as text, so a bad value gets the error envelope).
    pub expires: Option<String>,
    pub signature: Option<String>,
}

/// Download a result file
///
/// The URLs in job results point here. `Range` requests are answered with
/// 206. A changed or missing signature → 403 `invalid_signature`; an expired
/// URL → 403 `url_expired`; a file that is gone, or whose job, avatar or
/// voice is gone → 404.
#[utoipa::path(get, path = "/blobs/{key}", tag = "files",
    params(("key" = String, Path), ("expires" = i64, Query), ("signature" = String, Query)),
    responses((status = 200, description = "The file"), (status = 206, description = "A byte range"),
              (status = 307, description = "With `storage_redirect`: the file at a presigned URL of the S3 store"),
              (status = 403, description = "Bad or expired signature"), (status = 404), (status = 416)))]
pub async fn download(
    State(state): State<AppState>,
    Path(key): Path<String>,
    ApiQuery(q): ApiQuery<SignedQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    verify(&state, &key, &q)?;
    let Some(content_type) = live_content_type(&state, &key).await? else {
        return Err(ApiError::new(ErrorCode::ResourceNotFound)
            .with_message("The file no longer exists.")
            .into());
    };
    if state.config.storage_redirect {
        // The store serves the bytes itself, for as long as this URL is
        // valid and no longer (a job's files are deleted when its URLs
        // have expired).
        let expires: i64 = q.expires.as_deref().unwrap_or("0").parse().unwrap_or(0);
        let ttl = (expires - now_ms() / 1000).max(1) as u64;
        if let Some(url) = state
            .blobs
            .presigned_url(&key, std::time::Duration::from_secs(ttl))
            .await?
        {
            let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
            if let Ok(v) = HeaderValue::from_str(&url) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            return Ok(response);
        }
    }
    serve(&state, &key, &content_type, &headers).await
}

/// The content type of what a signed key names, while that still exists:
/// a registered output of a job, the clip or poster of a built-in avatar or
/// of an account's avatar, or an account's voice preview. Anything else
/// (uploads, a job's working files, keys of deleted things) is `None`, so a
/// valid signature alone never reaches a file.
async fn live_content_type(state: &AppState, key: &str) -> ApiResult<Option<String>> {
    let parts: Vec<&str> = key.split('/').collect();
    let stem = |file: &str| file.split('.').next().unwrap_or("").to_owned();
    let owned = |keys: &[&str]| {
        keys.contains(&key)
            .then(|| content_type_for(key).to_owned())
    };
    Ok(match parts.as_slice() {
        ["jobs", job_id, ..] => match JobId::parse(job_id) {
            Some(id) => state.db.job_by_id(&id).await?.and_then(|job| {
                job.outputs
                    .into_iter()
                    .find(|o| o.key == key)
                    .map(|o| o.content_type)
            }),
            None => None,
        },
        ["avatars", "premade", file] => {
            let id = stem(file);
            state
                .avatars
                .iter()
                .find(|a| **a == id)
                .and_then(|a| owned(&[&video_key(a), &poster_key(a)]))
        }
        ["avatars", account, file] => {
            match (AccountId::parse(account), AvatarId::parse(&stem(file))) {
                (Some(account), Some(id)) => state
                    .db
                    .avatar(&account, &id)
                    .await?
                    .and_then(|a| owned(&[&a.video_key, &a.poster_key])),
                _ => None,
            }
        }
        ["voices", account, file] => match (AccountId::parse(account), VoiceId::parse(&stem(file)))
        {
            (Some(account), Some(id)) => state
                .db
                .voice(&account, &id)
                .await?
                .and_then(|v| owned(&[&v.preview_key])),
            _ => None,
        },
        _ => None,
    })
}

/// Checks a signed URL's signature (403 `invalid_signature`), then its
/// expiry (403 `url_expired`).
pub fn verify(state: &AppState, key: &str, q: &SignedQuery) -> ApiResult<()> {
    let (Some(expires), Some(signature)) = (q.expires.as_deref(), q.signature.as_deref()) else {
        return Err(ApiError::new(ErrorCode::InvalidSignature).into());
    };
    let expires: i64 = expires
        .parse()
        .map_err(|_| ApiError::invalid_parameter("expires", "must be Unix seconds"))?;
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
pub async fn serve(
    state: &AppState,
    key: &str,
    content_type: &str,
    headers: &HeaderMap,
) -> ApiResult<Response> {
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
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    // `nosniff` and `no-referrer` come from the layer around every route.
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
