use axum::extract::State;
use axum::Json;
use mediagen_core::time::iso8601;
use mediagen_core::ApiError;
use serde::Serialize;

use mediagen_core::page::RawPageQuery;
use mediagen_core::Page;
use mediagen_store::LedgerEntry;

use crate::error::ApiResult;
use crate::extract::{ApiQuery, Auth};
use crate::routes::{page_of, page_params, ListEnvelope};
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
    auth: Auth,
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

/// One movement of the account's credits.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerView {
    pub id: i64,
    /// `grant` (added or removed by the operator, or the starting
    /// balance), `reserve` (held for a job), `top_up` (more held for a job
    /// that measured more than its estimate), `capture` (charged for a
    /// finished job) or `refund` (a hold given back).
    pub entry: String,
    /// Credits the movement concerns; its direction follows `entry`: a
    /// grant adds them to the balance (a negative grant removes them), a
    /// reserve or a top-up takes them from it, a refund gives them back,
    /// and a capture turns held credits into used ones (the balance stays).
    pub amount: i64,
    /// The balance after this movement.
    pub balance_after: i64,
    /// The job it belongs to, if any.
    pub job_id: Option<String>,
    pub note: Option<String>,
    pub created_at: String,
}

impl From<LedgerEntry> for LedgerView {
    fn from(e: LedgerEntry) -> Self {
        Self {
            id: e.id,
            entry: e.entry,
            amount: e.amount,
            balance_after: e.balance_after,
            job_id: e.job_id,
            note: e.note,
            created_at: iso8601(e.created_at),
        }
    }
}

/// The caller's credit ledger
///
/// Every movement of the account's credits, newest first, in the list
/// envelope: grants, holds for jobs, charges and refunds, each with the
/// balance after it (what the console's chart draws).
#[utoipa::path(get, path = "/v1/account/ledger", tag = "account", security(("bearer" = ["read"])),
    params(("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<LedgerView>), (status = 400)))]
pub async fn ledger(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<RawPageQuery>,
) -> ApiResult<Json<Page<LedgerView>>> {
    let params = page_params(&q)?;
    let rows = state
        .db
        .ledger_page(&auth.account_id, params.limit.into(), params.offset())
        .await?;
    Ok(Json(page_of(rows, params, LedgerView::from)))
}
