use axum::extract::State;
use axum::Json;
use mediagen_core::time::iso8601;
use mediagen_core::ApiError;
use serde::Serialize;

use crate::error::ApiResult;
use crate::extract::{Auth, Read};
use crate::state::AppState;

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Credits {
    /// Available for new work.
    pub balance: i64,
    /// Held by queued and running jobs.
    pub reserved: i64,
    /// Charged for completed jobs, all time.
    pub used: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub requests_per_minute: u32,
    pub requests_per_hour: u32,
    pub max_concurrent_jobs: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallerKey {
    pub id: String,
    pub level: mediagen_core::Level,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountView {
    pub id: String,
    pub name: String,
    pub credits: Credits,
    pub limits: Limits,
    /// The key that made this request.
    pub key: CallerKey,
    pub created_at: String,
}

/// The caller's account
///
/// Credit balance, credits held by running jobs, credits used, and limits.
#[utoipa::path(get, path = "/v1/account", tag = "account", security(("bearer" = ["read"])),
    responses((status = 200, body = AccountView)))]
pub async fn get_account(
    State(state): State<AppState>,
    auth: Auth<Read>,
) -> ApiResult<Json<AccountView>> {
    let a = state
        .db
        .account(&auth.account_id)
        .await?
        .ok_or_else(|| ApiError::not_found("account", &auth.account_id))?;
    Ok(Json(AccountView {
        id: a.id.into_string(),
        name: a.name,
        credits: Credits {
            balance: a.balance,
            reserved: a.reserved,
            used: a.used,
        },
        limits: Limits {
            requests_per_minute: state.config.rate_limit_per_minute,
            requests_per_hour: state.config.rate_limit_per_hour,
            max_concurrent_jobs: state.config.max_concurrent_jobs,
        },
        key: CallerKey {
            id: auth.key_id.to_string(),
            level: auth.level,
        },
        created_at: iso8601(a.created_at),
    }))
}
