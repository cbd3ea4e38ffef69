//! Single-use tokens for live sessions: a browser cannot set headers on a
//! WebSocket, so a server holding a write key mints a token and hands it
//! to the page, which opens one session with it (`?token=`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use mediagen_core::time::iso8601;
use mediagen_core::{ApiError, ErrorCode, JobKind};
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth};
use crate::state::AppState;

/// How long a token stays valid (ElevenLabs' single-use tokens: 15 min).
pub const TOKEN_TTL_SECONDS: i64 = 15 * 60;
/// Unused, unexpired tokens an account may hold at once.
pub const MAX_OPEN_TOKENS: i64 = 1000;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateToken {
    /// The kind of live session the token opens.
    #[schema(schema_with = session_kinds)]
    pub kind: String,
}

fn session_kinds() -> utoipa::openapi::schema::Object {
    let kinds: Vec<&str> = JobKind::sessions().map(JobKind::name).collect();
    mediagen_core::schema::one_of_strings(&kinds)
}

/// A token just minted: shown once.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionToken {
    /// `session_token`.
    pub object: &'static str,
    /// Opens one session of `kind`, once, as the key that minted it.
    pub token: String,
    pub kind: String,
    pub expires_at: String,
}

/// A token for one session of `kind`, as `auth`'s key.
pub async fn mint(state: &AppState, auth: &Auth, kind: JobKind) -> ApiResult<SessionToken> {
    let minted = state
        .db
        .mint_token(
            &auth.account_id,
            &auth.key_id,
            kind,
            TOKEN_TTL_SECONDS * 1000,
            MAX_OPEN_TOKENS,
        )
        .await?
        .ok_or_else(|| {
            ApiError::new(ErrorCode::TokenLimitExceeded).with_detail("limit", MAX_OPEN_TOKENS)
        })?;
    Ok(SessionToken {
        object: "session_token",
        token: minted.token,
        kind: minted.kind.name().to_owned(),
        expires_at: iso8601(minted.expires_at),
    })
}

/// Create a single-use session token
///
/// For browsers, which cannot set headers on a WebSocket: the token opens
/// one live session of `kind` (`?token=` on the session's route, or as its
/// Bearer), once, within 15 minutes, as the key that minted it (its
/// account, its level; revoking the key voids it). It is spent when its
/// session opens: an upgrade refused once it was presented (429, 503
/// `no_session_slot`, a bad query) leaves it for another try. Anywhere
/// else it is no key (401).
#[utoipa::path(post, path = "/v1/tokens", tag = "keys", security(("bearer" = ["write"])), request_body = CreateToken,
    responses((status = 201, body = SessionToken), (status = 400), (status = 403),
              (status = 429, description = "`token_limit_exceeded`: the account holds 1000 unused tokens")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    ApiJson(body): ApiJson<CreateToken>,
) -> ApiResult<(StatusCode, Json<SessionToken>)> {
    let kind = JobKind::parse(&body.kind)
        .filter(|k| k.is_session())
        .ok_or_else(|| {
            let kinds: Vec<&str> = JobKind::sessions().map(JobKind::name).collect();
            ApiError::invalid_parameter("kind", format!("must be one of {}", kinds.join(", ")))
        })?;
    Ok((StatusCode::CREATED, Json(mint(&state, &auth, kind).await?)))
}
