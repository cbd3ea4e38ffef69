//! Layers around every request: request ids and error bodies, metrics,
//! authentication with rate limits, and idempotent POSTs.

use std::time::{Duration, Instant};

use axum::body::{to_bytes, Body};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mediagen_core::keys::{is_token, is_well_formed};
use mediagen_core::time::{iso8601, now_ms};
use mediagen_core::{ids::random_base62, AccountId, ApiError, ErrorCode, JobKind, KeyId, Level};
use mediagen_http::bearer;
use mediagen_store::{AuthKey, IdempotencyState};
use sha2::{Digest, Sha256};

use crate::error::{too_large, DatabaseDown, Error, PendingError};
use crate::state::AppState;

/// The request id of the current request.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Who is calling: set by [`authenticate`] for every `/v1` route.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account_id: AccountId,
    pub key_id: KeyId,
    pub level: Level,
    pub is_operator: bool,
}

/// The `Idempotency-Key` of the current POST, for handlers that create jobs.
#[derive(Debug, Clone)]
pub struct IdempotencyKey(pub String);

/// 403 `insufficient_permissions` unless the caller's key holds `level`.
pub fn require(principal: &Principal, level: Level) -> Result<(), ApiError> {
    if principal.level < level {
        return Err(ApiError::new(ErrorCode::InsufficientPermissions)
            .with_message(format!(
                "This endpoint needs a key with {} permission; this key has {}.",
                level.as_str(),
                principal.level.as_str()
            ))
            .with_detail("required", level.as_str())
            .with_detail("granted", principal.level.as_str()));
    }
    Ok(())
}

/// Outermost layer: assigns the request id (or keeps a sane one from the
/// client), writes error bodies with it, and logs server faults.
pub async fn request_id(mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 64
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .map(str::to_owned)
        .unwrap_or_else(|| format!("req_{}", random_base62(20)));
    req.extensions_mut().insert(RequestId(id.clone()));
    let authenticated = req.headers().contains_key(header::AUTHORIZATION);
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let mut response = next.run(req).await;
    if let Some(pending) = response.extensions_mut().remove::<PendingError>() {
        if pending.api.status() >= 500 {
            tracing::error!(request_id = %id, %method, %path, code = pending.api.code.as_str(),
                cause = pending.cause.as_deref().unwrap_or(""), "request failed");
        }
        let body = pending.api.body(&id).to_string();
        let (mut parts, _) = response.into_parts();
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        parts.headers.remove(header::CONTENT_LENGTH);
        if pending.api.status() == 401 {
            // RFC 6750: a 401 names the scheme the client should use.
            parts.headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mediagen\""),
            );
        }
        response = Response::from_parts(parts, Body::from(body));
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", v);
    }
    security_headers(authenticated, response.headers_mut());
    response
}

/// Headers every answer carries: no content sniffing, no referrer (signed
/// URLs must not travel to other sites in `Referer`), and answers to
/// authenticated requests are never stored by caches. HTML pages set their
/// own `Content-Security-Policy`; any other HTML gets the strictest one.
fn security_headers(authenticated: bool, h: &mut HeaderMap) {
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    let content_type = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if authenticated && content_type.starts_with("application/json") {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if content_type.starts_with("text/html") && !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
    }
}

/// The boundary of a `multipart/*` Content-Type (`None` for other types).
fn form_boundary(content_type: &str) -> Option<String> {
    let mut params = content_type.split(';');
    let essence = params.next()?.trim().to_ascii_lowercase();
    if !essence.starts_with("multipart/") {
        return None;
    }
    let boundary = params
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_owned())
        .unwrap_or_default();
    Some(boundary)
}

/// Hashes a form's bytes with every occurrence of its boundary left out,
/// across chunk edges.
struct FormHasher<'a> {
    boundary: Vec<u8>,
    pending: Vec<u8>,
    hasher: &'a mut Sha256,
}

impl FormHasher<'_> {
    fn update(&mut self, chunk: &[u8]) {
        self.pending.extend_from_slice(chunk);
        let n = self.boundary.len();
        if n == 0 {
            self.hasher.update(&self.pending);
            self.pending.clear();
            return;
        }
        let (mut i, mut start) = (0, 0);
        while i + n <= self.pending.len() {
            if self.pending[i..i + n] == self.boundary[..] {
                self.hasher.update(&self.pending[start..i]);
                self.hasher.update(b"\0boundary\0");
                i += n;
                start = i;
            } else {
                i += 1;
            }
        }
        // Keep what could still begin a boundary.
        let keep_from = self.pending.len().saturating_sub(n - 1).max(start);
        self.hasher.update(&self.pending[start..keep_from]);
        self.pending.drain(..keep_from);
    }

    fn finish(self) {
        self.hasher.update(&self.pending);
    }
}

/// Streams an upload to a temporary file (under `upload_body_limit`, 413
/// beyond it), hashing every byte but the form's boundary, and gives back
/// a body that reads it from there; the file is removed when that body is
/// dropped.
async fn spool(
    state: &AppState,
    body: Body,
    boundary: &str,
    hasher: &mut Sha256,
) -> Result<Body, Error> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    // The process's scratch directory (`scratch::claim`).
    let tmp = tempfile::env::temp_dir();
    tokio::fs::create_dir_all(&tmp).await.map_err(Error::disk)?;
    let file = tempfile::NamedTempFile::new_in(&tmp).map_err(Error::disk)?;
    let mut out = tokio::fs::File::from_std(file.reopen().map_err(Error::disk)?);
    let limit = state.config.upload_body_limit as u64;
    let mut total = 0u64;
    let mut form = FormHasher {
        boundary: boundary.as_bytes().to_vec(),
        pending: Vec::new(),
        hasher,
    };
    let mut stream = body.into_data_stream();
    let idle = std::time::Duration::from_secs_f64(state.config.upload_idle_seconds);
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_secs_f64(state.config.upload_timeout_seconds);
    let timed_out = || Error::from(mediagen_http::form::timed_out());
    loop {
        let wait = idle.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let Some(chunk) = tokio::time::timeout(wait, stream.next())
            .await
            .map_err(|_| timed_out())?
        else {
            break;
        };
        let chunk = chunk.map_err(|_| {
            Error::from(ApiError::invalid_parameter(
                "body",
                "the upload was cut off",
            ))
        })?;
        total += chunk.len() as u64;
        if total > limit {
            return Err(too_large(limit as usize));
        }
        form.update(&chunk);
        out.write_all(&chunk).await.map_err(Error::disk)?;
    }
    form.finish();
    out.flush().await.map_err(Error::disk)?;
    let reader = tokio::fs::File::open(file.path())
        .await
        .map_err(Error::disk)?;
    // The temporary file lives as long as the stream reading it.
    let stream = tokio_util::io::ReaderStream::new(reader).map(move |r| {
        let _keep = &file;
        r
    });
    Ok(Body::from_stream(stream))
}

/// The id of the key whose secret a response shows (a created key).
fn secret_of(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let secret = v["key"].as_str()?;
    is_well_formed(secret).then(|| v["id"].as_str().unwrap_or("").to_owned())
}

/// The key id of a stored response whose secret was withheld.
fn withheld_secret(stored: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(stored).ok()?;
    (v["secretWithheld"] == true).then(|| v["id"].as_str().unwrap_or("").to_owned())
}

/// While a request has found the database unreachable, the API's routes
/// answer 503 with `Retry-After` at once (after a ping of at most 1 s that
/// would clear it) instead of each waiting for a connection; a response
/// that found it unreachable sets the mark ([`DatabaseDown`]).
pub async fn database_gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let gated = path.starts_with("/v1/") || path.starts_with("/elevenlabs/");
    if gated && state.db.is_down() {
        let answered = tokio::time::timeout(Duration::from_secs(1), state.db.ping()).await;
        if answered != Ok(true) {
            return Error::unavailable("database", "unreachable at the last query").into_response();
        }
    }
    let response = next.run(req).await;
    if response.extensions().get::<DatabaseDown>().is_some() {
        state.db.mark_down();
    }
    response
}

/// Counts requests and their latency by matched route.
pub async fn record_metrics(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    // Labels come from closed sets: a method the API has no route for is
    // `other` (each would otherwise be a series of its own).
    let method = match *req.method() {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let response = next.run(req).await;
    state.metrics.record(
        method,
        &route,
        response.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    response
}

fn invalid(reason: &str, message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidApiKey)
        .with_message(message)
        .with_detail("reason", reason)
}

/// The credentials a route takes: a key always; on a route that opens a
/// live session, also a single-use token minted for that kind of session.
#[derive(Clone)]
pub struct Gate {
    pub state: AppState,
    pub token: Option<JobKind>,
}

impl Gate {
    /// A route that takes keys only.
    pub fn keys(state: &AppState) -> Self {
        Self {
            state: state.clone(),
            token: None,
        }
    }
}

/// Authenticates the Bearer key, or a session route's single-use token
/// (401 on any failure), applies the key's rate limits (429) and adds
/// `X-RateLimit-*` headers to the response.
///
/// A single-use token is spent by the session it opens: an upgrade refused
/// after the token was taken (a full account, no free session slot, the
/// rate limit, a bad query) leaves it unspent, to be tried again.
pub async fn authenticate(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    let (found, spent) = match credential(&gate, req.headers(), req.uri().query()).await {
        Ok(found) => found,
        Err(e) => return e.into_response(),
    };
    let response = admit(&gate.state, found, req, next).await;
    if let Some(token) = spent {
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            if let Err(e) = gate.state.db.unspend_token(&token).await {
                tracing::warn!(error = %e, "a refused session's token could not be given back");
            }
        }
    }
    response
}

/// Serves `req` for the key `found` (401 unless it is valid), within the
/// account's connection cap and rate limits.
async fn admit(state: &AppState, found: Option<AuthKey>, mut req: Request, next: Next) -> Response {
    let now = now_ms();
    let auth = match found {
        None => {
            return Error::from(invalid("unknown_key", "The API key is not valid.")).into_response()
        }
        Some(a) if a.revoked_at.is_some_and(|t| t <= now) => {
            return Error::from(invalid("revoked", "The API key has been revoked.")).into_response()
        }
        Some(a) if a.expires_at.is_some_and(|t| t <= now) => {
            return Error::from(invalid("expired", "The API key has expired.")).into_response()
        }
        Some(a) => a,
    };
    // The connection has shown a key: it leaves its address's anonymous
    // cap and counts for the account, within its cap (crate::edge).
    if let Some(connection) = req.extensions().get::<crate::edge::Connection>() {
        if !connection.authenticated(auth.account_id.as_str()) {
            let mut refused = Error::from(
                ApiError::new(ErrorCode::ConnectionLimitExceeded)
                    .with_detail("limit", state.config.max_connections_per_account),
            )
            .into_response();
            refused
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return refused;
        }
    }
    // Limits bound the account: all its keys share one count.
    let counted = auth.account_id.as_str().to_owned();
    req.extensions_mut().insert(Principal {
        account_id: auth.account_id,
        key_id: auth.key_id,
        level: auth.level,
        is_operator: auth.is_operator,
    });
    // A read is served while its request is counted (one database round
    // trip fewer on its path when the counters are in the database); its
    // answer is dropped if the count refuses it. Anything else is counted
    // before it runs.
    let reads = matches!(*req.method(), Method::GET | Method::HEAD);
    let (rate, served) = if reads {
        let (rate, served) = tokio::join!(state.limiter.check(&counted, now / 1000), next.run(req));
        (rate, Some(served))
    } else {
        let rate = state.limiter.check(&counted, now / 1000).await;
        let served = match &rate {
            Ok(r) if r.allowed => Some(next.run(req).await),
            _ => None,
        };
        (rate, served)
    };
    let rate = match rate {
        Ok(rate) => rate,
        Err(e) => return Error::from(e).into_response(),
    };
    let mut response = match served {
        Some(response) if rate.allowed => response,
        _ => {
            let wait = (rate.reset - now / 1000).max(1) as u64;
            Error::from(
                ApiError::new(ErrorCode::RateLimitExceeded)
                    .with_detail("limit", rate.limit)
                    .with_detail("remaining", rate.remaining)
                    .with_detail("reset", rate.reset)
                    .with_detail("reset_time", iso8601(rate.reset * 1000)),
            )
            .with_retry_after(wait)
            .into_response()
        }
    };
    let h = response.headers_mut();
    h.insert("x-ratelimit-limit", HeaderValue::from(rate.limit));
    h.insert("x-ratelimit-remaining", HeaderValue::from(rate.remaining));
    h.insert("x-ratelimit-reset", HeaderValue::from(rate.reset));
    if let Ok(v) = HeaderValue::from_str(&iso8601(rate.reset * 1000)) {
        h.insert("x-ratelimit-reset-time", v);
    }
    response
}

/// The key a request acts for (`None`: unknown), and the token spent for
/// it. On a session route a token (`?token=`, or as the Bearer) is spent
/// here, before the key's level, limits or anything else are looked at; a
/// token anywhere else is no key.
async fn credential(
    gate: &Gate,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<(Option<AuthKey>, Option<String>), Error> {
    let presented = bearer(headers);
    if let Some(kind) = gate.token {
        let token = query
            .and_then(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .find(|(name, _)| name == "token")
                    .map(|(_, v)| v.into_owned())
            })
            .or_else(|| {
                presented
                    .as_ref()
                    .ok()
                    .filter(|b| is_token(b))
                    .map(|b| (*b).to_owned())
            });
        if let Some(token) = token {
            if !is_token(&token) {
                return Err(invalid("unknown_token", "The token is not valid.").into());
            }
            return match gate.state.db.redeem_token(&token, kind).await? {
                Some(key) => Ok((Some(key), Some(token))),
                None => Err(invalid(
                    "unknown_token",
                    "The token is not valid: unknown, already used, expired or for another kind of session.",
                )
                .into()),
            };
        }
    }
    let key = presented?;
    if !is_well_formed(key) {
        return Err(invalid("unknown_key", "The API key is not valid.").into());
    }
    Ok((gate.state.keys.lookup(&gate.state.db, key).await?, None))
}

/// 403 unless the caller's key holds the route's `level` (declared with the
/// route in `app.rs`). Runs right after authentication, before the
/// idempotency replay, any cache and any reading of the body.
pub async fn require_level(State(level): State<Level>, req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>() else {
        return Error::new(ErrorCode::MissingApiKey).into_response();
    };
    if let Err(e) = require(principal, level) {
        return Error::from(e).into_response();
    }
    next.run(req).await
}

/// Makes POSTs with an `Idempotency-Key` safe to retry: the first response
/// is stored and replayed to retries with the same body; the same key with a
/// different body is refused (422); a retry while the first is still running
/// gets 409. Only JSON responses below 500 are stored: a server fault, a
/// rate-limit refusal or a refusal of the body's type, size or pace (415,
/// 413, 408) leaves the key free for a retry. The fingerprint covers the
/// method, the path, the body's media type and the body.
pub async fn idempotency(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(raw) = req.headers().get("idempotency-key") else {
        return next.run(req).await;
    };
    let key = match raw.to_str() {
        Ok(k) if !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()) => {
            k.to_owned()
        }
        _ => {
            return Error::from(ApiError::invalid_parameter(
                "Idempotency-Key",
                "must be 1–255 visible ASCII characters",
            ))
            .into_response()
        }
    };
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return next.run(req).await;
    };
    // The route's level was checked before this runs (`require_level`).
    // A form's boundary is chosen anew by most clients on every retry, so
    // it is left out of the fingerprint.
    let boundary = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(form_boundary);
    let (parts, body) = req.into_parts();
    let mut hasher = Sha256::new();
    hasher.update(parts.method.as_str());
    hasher.update(b" ");
    hasher.update(parts.uri.to_string());
    hasher.update(b"\n");
    // The body's type (without its parameters: a form's boundary) is part
    // of what was asked.
    let media_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    hasher.update(media_type.as_bytes());
    hasher.update(b"\n");
    // The fingerprint is of the exact request: an upload's every byte,
    // hashed as it is spooled to disk (never held in memory); any other
    // body whole, as canonical JSON when it is JSON (whatever its
    // Content-Type says), else as sent.
    let body = if let Some(boundary) = boundary {
        match spool(&state, body, &boundary, &mut hasher).await {
            Ok(body) => body,
            Err(e) => return e.into_response(),
        }
    } else {
        match to_bytes(body, state.config.json_body_limit).await {
            Ok(bytes) => {
                match serde_json::from_slice::<serde_json::Value>(&bytes) {
                    Ok(v) => hasher.update(v.to_string().as_bytes()),
                    Err(_) => hasher.update(&bytes),
                }
                Body::from(bytes)
            }
            Err(_) => return Error::new(ErrorCode::PayloadTooLarge).into_response(),
        }
    };
    let hash = hex::encode(hasher.finalize());
    match state
        .db
        .idempotency_begin(&principal.account_id, &key, &hash)
        .await
    {
        Err(e) => return Error::from(e).into_response(),
        Ok(IdempotencyState::Mismatch) => {
            return Error::new(ErrorCode::IdempotencyKeyReused).into_response();
        }
        Ok(IdempotencyState::InProgress) => {
            return Error::new(ErrorCode::IdempotencyKeyInUse)
                .with_retry_after(1)
                .into_response();
        }
        Ok(IdempotencyState::Replay { status, body }) => {
            if let Some(id) = withheld_secret(&body) {
                return Error::from(
                    ApiError::new(ErrorCode::ResourceAlreadyExists)
                        .with_message(format!(
                            "This request already created key `{id}`; a key's secret is \
                             shown only once. Revoke it and create another if it was lost."
                        ))
                        .with_detail("keyId", id),
                )
                .into_response();
            }
            // A queued job's answer points at the job, as the first one did.
            let location = (status == 202)
                .then(|| serde_json::from_str::<serde_json::Value>(&body).ok())
                .flatten()
                .and_then(|v| v["id"].as_str().map(|id| format!("/v1/jobs/{id}")))
                .and_then(|l| HeaderValue::from_str(&l).ok());
            let mut response = (
                StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
            if let Some(location) = location {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
                .headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            return response;
        }
        Ok(IdempotencyState::Started) => {}
    }
    let request_id = parts
        .extensions
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_default();
    let mut req = Request::from_parts(parts, body);
    req.extensions_mut().insert(IdempotencyKey(key.clone()));
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let is_error = response.extensions().get::<PendingError>().is_some();
    // A refusal of the request's form before it was read (its type or
    // size) is not an answer to it: the corrected retry runs.
    let unread = [
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        StatusCode::PAYLOAD_TOO_LARGE,
        StatusCode::REQUEST_TIMEOUT,
    ];
    let storable = status.as_u16() < 500 && !unread.contains(&status) && (is_json || is_error);
    if !storable {
        if let Err(e) = state
            .db
            .idempotency_abandon(&principal.account_id, &key)
            .await
        {
            tracing::error!(error = %e, "releasing an idempotency key failed");
        }
        return response;
    }
    let (parts, body) = response.into_parts();
    // An error's body is written by the outer layer; store it the same way.
    let bytes = match parts.extensions.get::<PendingError>() {
        Some(p) => bytes::Bytes::from(p.api.body(&request_id).to_string()),
        None => match to_bytes(body, usize::MAX).await {
            Ok(b) => b,
            Err(e) => return Error::internal(e).into_response(),
        },
    };
    // A key's secret is never stored: the record keeps its id only.
    let stored = match secret_of(&bytes) {
        Some(id) => serde_json::json!({ "id": id, "secretWithheld": true }).to_string(),
        None => String::from_utf8_lossy(&bytes).into_owned(),
    };
    if let Err(e) = state
        .db
        .idempotency_finish(&principal.account_id, &key, parts.status.as_u16(), &stored)
        .await
    {
        tracing::error!(error = %e, "storing an idempotent response failed");
    }
    let body = if parts.extensions.get::<PendingError>().is_some() {
        Body::empty()
    } else {
        Body::from(bytes)
    };
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form_hash(chunks: &[&[u8]], boundary: &str) -> String {
        let mut hasher = Sha256::new();
        let mut form = FormHasher {
            boundary: boundary.as_bytes().to_vec(),
            pending: Vec::new(),
            hasher: &mut hasher,
        };
        for c in chunks {
            form.update(c);
        }
        form.finish();
        hex::encode(hasher.finalize())
    }

    /// The same form under two boundaries, cut anywhere, hashes alike; a
    /// changed byte of content does not.
    #[test]
    fn form_fingerprints_ignore_the_boundary_only() {
        let body = |b: &str, x: u8| {
            let mut v =
                format!("--{b}\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n").into_bytes();
            v.extend_from_slice(&[1, 2, x, 4]);
            v.extend_from_slice(format!("\r\n--{b}--\r\n").as_bytes());
            v
        };
        let (a, b) = (body("AAAA1234", 3), body("zz-other-boundary", 3));
        let whole = form_hash(&[&a], "AAAA1234");
        for cut in 0..a.len() {
            assert_eq!(form_hash(&[&a[..cut], &a[cut..]], "AAAA1234"), whole);
        }
        for cut in 0..b.len() {
            assert_eq!(
                form_hash(&[&b[..cut], &b[cut..]], "zz-other-boundary"),
                whole
            );
        }
        assert_ne!(form_hash(&[&body("AAAA1234", 9)], "AAAA1234"), whole);
        assert_eq!(
            form_boundary("Multipart/Form-Data; charset=utf-8; Boundary=\"x y\"").as_deref(),
            Some("x y")
        );
        assert_eq!(form_boundary("application/json"), None);
    }
}
