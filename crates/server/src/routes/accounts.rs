//! Operator endpoints: accounts and credit grants.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::time::iso8601;
use mediagen_core::AccountId;
use mediagen_core::{ApiError, Page};
use mediagen_store::Account;
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery, Operator, PathId};
use crate::routes::keys::{create_key_for, CreateKey, CreatedKey};
use crate::routes::{page_of, page_params, ListEnvelope};
use crate::state::AppState;

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountRecord {
    pub id: String,
    pub name: String,
    pub operator: bool,
    pub balance: i64,
    pub reserved: i64,
    pub used: i64,
    pub created_at: String,
}

impl From<Account> for AccountRecord {
    fn from(a: Account) -> Self {
        Self {
            id: a.id.into(),
            name: a.name,
            operator: a.is_operator,
            balance: a.balance,
            reserved: a.reserved,
            used: a.used,
            created_at: iso8601(a.created_at),
        }
    }
}

/// The most credits an account holds (grants and starting balances are
/// checked against it, so balances never overflow).
pub const MAX_BALANCE: i64 = 1_000_000_000_000_000;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateAccount {
    /// 1–100 characters (not only spaces).
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    pub name: String,
    /// Credits to start with, 0 to 10^15.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_000_i64)]
    pub credits: i64,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrantCredits {
    /// Credits to add; negative to remove (never below zero). Not zero, at
    /// most 10^15 either way.
    #[schema(schema_with = grant_amount)]
    pub amount: i64,
    #[serde(default)]
    pub note: Option<String>,
}

/// A grant's amount: a whole number from 1 to [`MAX_BALANCE`] either way.
fn grant_amount() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    let range = |min: i64, max: i64| {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::Int64,
            )))
            .minimum(Some(min))
            .maximum(Some(max))
    };
    let one_of = OneOfBuilder::new()
        .item(range(1, MAX_BALANCE))
        .item(range(-MAX_BALANCE, -1))
        .description(Some(
            "Credits to add; negative to remove (never below zero). Not zero, at most 10^15 \
             either way.",
        ))
        .build();
    utoipa::openapi::schema::Schema::OneOf(one_of)
}

async fn existing(state: &AppState, id: &AccountId) -> ApiResult<Account> {
    Ok(state
        .db
        .account(id)
        .await?
        .ok_or_else(|| ApiError::not_found("account", id))?)
}

/// Create an account (operator)
#[utoipa::path(post, path = "/v1/accounts", tag = "accounts", security(("bearer" = ["admin"])), request_body = CreateAccount,
    responses((status = 201, body = AccountRecord), (status = 403, description = "Not the operator account")))]
pub async fn create_account(
    State(state): State<AppState>,
    _op: Operator,
    ApiJson(body): ApiJson<CreateAccount>,
) -> ApiResult<(StatusCode, Json<AccountRecord>)> {
    let name = mediagen_core::params::trim_spaces(&body.name);
    let longest = mediagen_jobs::bounds::Bound::of::<CreateAccount>("name").max_length();
    if name.is_empty() || name.chars().count() > longest {
        return Err(
            ApiError::invalid_parameter("name", format!("must be 1–{longest} characters")).into(),
        );
    }
    if !(0..=MAX_BALANCE).contains(&body.credits) {
        return Err(ApiError::invalid_parameter(
            "credits",
            format!("must be from 0 to {MAX_BALANCE}"),
        )
        .into());
    }
    let account = state.db.create_account(name, false, body.credits).await?;
    Ok((StatusCode::CREATED, Json(account.into())))
}

/// List accounts (operator)
#[utoipa::path(get, path = "/v1/accounts", tag = "accounts", security(("bearer" = ["admin"])),
    params(("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<AccountRecord>)))]
pub async fn list_accounts(
    State(state): State<AppState>,
    _op: Operator,
    ApiQuery(q): ApiQuery<RawPageQuery>,
) -> ApiResult<Json<Page<AccountRecord>>> {
    let params = page_params(&q)?;
    let rows = state
        .db
        .list_accounts(params.limit.into(), params.offset())
        .await?;
    Ok(Json(page_of(rows, params, AccountRecord::from)))
}

/// Get an account (operator)
#[utoipa::path(get, path = "/v1/accounts/{id}", tag = "accounts", security(("bearer" = ["admin"])),
    params(("id" = String, Path)), responses((status = 200, body = AccountRecord), (status = 404)))]
pub async fn get_account(
    State(state): State<AppState>,
    _op: Operator,
    PathId(id): PathId<AccountId>,
) -> ApiResult<Json<AccountRecord>> {
    Ok(Json(existing(&state, &id).await?.into()))
}

/// Grant credits (operator)
#[utoipa::path(post, path = "/v1/accounts/{id}/credits", tag = "accounts", security(("bearer" = ["admin"])),
    params(("id" = String, Path)), request_body = GrantCredits,
    responses((status = 200, body = AccountRecord), (status = 404), (status = 422, description = "Would make the balance negative")))]
pub async fn grant_credits(
    State(state): State<AppState>,
    _op: Operator,
    PathId(id): PathId<AccountId>,
    ApiJson(body): ApiJson<GrantCredits>,
) -> ApiResult<Json<AccountRecord>> {
    let account = existing(&state, &id).await?;
    if body.amount == 0 || body.amount.unsigned_abs() > MAX_BALANCE as u64 {
        return Err(ApiError::invalid_parameter(
            "amount",
            format!("must not be zero, and at most {MAX_BALANCE} either way"),
        )
        .into());
    }
    if account.balance + body.amount > MAX_BALANCE {
        return Err(ApiError::new(mediagen_core::ErrorCode::UnprocessableEntity)
            .with_message(format!(
                "That would take the balance above the most an account holds ({MAX_BALANCE})."
            ))
            .with_detail("parameter", "amount")
            .with_detail("limit", "max_balance")
            .into());
    }
    if state
        .db
        .grant_credits(&id, body.amount, body.note.as_deref())
        .await?
        .is_none()
    {
        return Err(ApiError::new(mediagen_core::ErrorCode::UnprocessableEntity)
            .with_message("Removing that many credits would make the balance negative.")
            .with_detail("parameter", "amount")
            .into());
    }
    Ok(Json(existing(&state, &id).await?.into()))
}

/// Create a key for an account (operator)
#[utoipa::path(post, path = "/v1/accounts/{id}/keys", tag = "accounts", security(("bearer" = ["admin"])),
    params(("id" = String, Path)), request_body = CreateKey,
    responses((status = 201, body = CreatedKey), (status = 404),
              (status = 422, description = "`unprocessable_entity`: `expiresAt` is not in the future")))]
pub async fn create_account_key(
    State(state): State<AppState>,
    _op: Operator,
    PathId(id): PathId<AccountId>,
    ApiJson(body): ApiJson<CreateKey>,
) -> ApiResult<(StatusCode, Json<CreatedKey>)> {
    existing(&state, &id).await?;
    create_key_for(&state, &id, body).await
}
