use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::time::{iso8601, now_ms, parse_iso8601};
use mediagen_core::{AccountId, KeyId};
use mediagen_core::{ApiError, ErrorCode, Level, Page};
use mediagen_store::KeyRecord;
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery, Auth, PathId};
use crate::routes::{page_of, page_params, ListEnvelope};
use crate::state::AppState;

/// An API key as listed: never its secret.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub id: String,
    pub name: String,
    pub level: Level,
    /// The first characters of the key, to recognise it.
    pub prefix: String,
    /// `active`, `expired` or `revoked` (a revocation time in the future
    /// keeps the key active until then).
    pub status: &'static str,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
}

impl From<KeyRecord> for KeyView {
    fn from(k: KeyRecord) -> Self {
        let now = now_ms();
        let status = match (k.revoked_at, k.expires_at) {
            (Some(t), _) if t <= now => "revoked",
            (_, Some(t)) if t <= now => "expired",
            _ => "active",
        };
        Self {
            id: k.id.into(),
            name: k.name,
            level: k.level,
            prefix: k.prefix,
            status,
            created_at: iso8601(k.created_at),
            expires_at: k.expires_at.map(iso8601),
            revoked_at: k.revoked_at.map(iso8601),
        }
    }
}

/// A key just created: the only time its secret is shown.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedKey {
    #[serde(flatten)]
    pub view: KeyView,
    /// The 64-character secret. Store it now: it cannot be shown again.
    pub key: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateKey {
    /// A label such as `production`.
    #[serde(default)]
    pub name: Option<String>,
    /// `read`, `write` or `admin`.
    #[schema(pattern = "^(read|write|admin)$")]
    pub level: String,
    /// ISO 8601 time after which the key stops working.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
}

fn future_time(parameter: &str, value: &str) -> ApiResult<i64> {
    let t = parse_iso8601(value).ok_or_else(|| {
        ApiError::invalid_parameter(
            parameter,
            "must be an ISO 8601 timestamp such as 2027-01-31T00:00:00Z",
        )
    })?;
    Ok(t)
}

/// Creates a key for `account_id` from a validated body.
pub async fn create_key_for(
    state: &AppState,
    account_id: &AccountId,
    body: CreateKey,
) -> ApiResult<(StatusCode, Json<CreatedKey>)> {
    let level = Level::parse(&body.level)
        .ok_or_else(|| ApiError::invalid_parameter("level", "must be one of read, write, admin"))?;
    let name = body.name.unwrap_or_default().trim().to_owned();
    if name.chars().count() > 100 {
        return Err(ApiError::invalid_parameter("name", "must be at most 100 characters").into());
    }
    let expires_at = match body.expires_at.as_deref() {
        None => None,
        Some(s) => {
            let t = future_time("expiresAt", s)?;
            if t <= now_ms() {
                return Err(ApiError::unprocessable("expiresAt", "must be in the future").into());
            }
            Some(t)
        }
    };
    let cap = state.config.max_keys_per_account;
    let (record, secret) = state
        .db
        .create_key_within(account_id, &name, level, expires_at, i64::from(cap))
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::KeyLimitExceeded).with_detail("limit", cap))?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            view: record.into(),
            key: secret.expose().to_owned(),
        }),
    ))
}

/// Create an API key
///
/// For the caller's account. The secret is in the response only. Rotation:
/// create a new key, switch clients to it, then revoke the old one.
#[utoipa::path(post, path = "/v1/keys", tag = "keys", security(("bearer" = ["admin"])), request_body = CreateKey,
    responses((status = 201, body = CreatedKey), (status = 400), (status = 403),
              (status = 409, description = "`key_limit_exceeded`: the account holds `max_keys_per_account` live keys"),
              (status = 422, description = "`unprocessable_entity`: `expiresAt` is not in the future")))]
pub async fn create_key(
    State(state): State<AppState>,
    auth: Auth,
    ApiJson(body): ApiJson<CreateKey>,
) -> ApiResult<(StatusCode, Json<CreatedKey>)> {
    create_key_for(&state, &auth.account_id, body).await
}

/// List API keys
#[utoipa::path(get, path = "/v1/keys", tag = "keys", security(("bearer" = ["admin"])),
    params(("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<KeyView>)))]
pub async fn list_keys(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<RawPageQuery>,
) -> ApiResult<Json<Page<KeyView>>> {
    let params = page_params(&q)?;
    let rows = state
        .db
        .list_keys(&auth.account_id, params.limit.into(), params.offset())
        .await?;
    Ok(Json(page_of(rows, params, KeyView::from)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokeQuery {
    revoke_at: Option<String>,
}

/// Revoke an API key
///
/// At once, or at `revokeAt` (ISO 8601) to leave clients time to switch.
/// Revocation is final: a key revoked or scheduled before keeps the earlier
/// time (a later call can bring a scheduled revocation forward, never undo
/// or postpone it).
#[utoipa::path(delete, path = "/v1/keys/{id}", tag = "keys", security(("bearer" = ["admin"])),
    params(("id" = String, Path), ("revokeAt" = Option<String>, Query, format = DateTime, description = "ISO 8601; default now")),
    responses((status = 200, body = KeyView), (status = 404)))]
pub async fn revoke_key(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<KeyId>,
    ApiQuery(q): ApiQuery<RevokeQuery>,
) -> ApiResult<Json<KeyView>> {
    let at = match q.revoke_at.as_deref() {
        Some(s) => future_time("revokeAt", s)?.max(now_ms()),
        None => now_ms(),
    };
    let key = state
        .db
        .revoke_key(&auth.account_id, &id, at)
        .await?
        .ok_or_else(|| ApiError::not_found("key", &id))?;
    state.keys.forget(&key.id);
    Ok(Json(key.into()))
}
