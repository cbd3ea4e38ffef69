use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::time::iso8601;
use mediagen_core::{ApiError, DeliveryId, Page, TypedId, WebhookId};
use mediagen_store::{DeliveryRecord, WebhookRecord};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery, Auth, PathId};
use crate::routes::{page_of, page_params, ListEnvelope};
use crate::state::AppState;
use crate::webhooks::signing::new_secret;
use crate::webhooks::target::check_url;
use crate::webhooks::EVENTS;

/// Endpoints an account may register.
const MAX_ENDPOINTS: u64 = 20;

/// A webhook endpoint.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    /// `whk_…`.
    pub id: String,
    pub url: String,
    /// The events sent to it.
    pub events: Vec<String>,
    /// `whsec_…`: verifies the signatures (Standard Webhooks). Shown once,
    /// in the answer that creates the endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// ISO 8601 UTC.
    pub created_at: String,
}

impl WebhookView {
    fn new(w: WebhookRecord, with_secret: bool) -> Self {
        Self {
            id: w.id.into_string(),
            url: w.url,
            events: w.events,
            secret: with_secret.then_some(w.secret),
            created_at: iso8601(w.created_at),
        }
    }
}

/// One event for one endpoint, and how its sending went.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// `msg_…`: the `webhook-id` header of every attempt.
    pub id: String,
    /// `job.completed`, `job.failed` or `job.cancelled`.
    pub event: String,
    pub job_id: String,
    /// `pending` (to be sent, or retried), `delivered`, or `failed` (given
    /// up after a day of retries, or the job is gone).
    pub status: String,
    pub attempts: i64,
    /// The endpoint's last HTTP status.
    pub last_status: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it is sent next (ISO 8601 UTC), while pending.
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<DeliveryRecord> for DeliveryView {
    fn from(d: DeliveryRecord) -> Self {
        Self {
            id: d.id.into_string(),
            event: d.event,
            job_id: d.job_id.into_string(),
            next_attempt_at: (d.status == "pending").then(|| iso8601(d.next_attempt_at)),
            status: d.status,
            attempts: d.attempts,
            last_status: d.last_status,
            last_error: d.last_error,
            created_at: iso8601(d.created_at),
            updated_at: iso8601(d.updated_at),
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody {
    /// Where events are posted: an `http` or `https` URL, at most 2048
    /// characters, not on a loopback, private or link-local network
    /// (unless the server allows it: `webhook_allow_private`).
    #[schema(
        min_length = 8,
        max_length = 2048,
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://"
    )]
    pub url: String,
    /// Of `job.completed`, `job.failed`, `job.cancelled`; default all.
    #[schema(schema_with = events_schema)]
    #[serde(default)]
    pub events: Option<Vec<String>>,
}

fn events_schema() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(super::one_of_strings(&EVENTS))
        .min_items(Some(1))
        .build()
}

/// Register a webhook endpoint
///
/// Job events of the account (`job.completed`, `job.failed`,
/// `job.cancelled`) are posted to `url` as Standard Webhooks: the body
/// `{type, timestamp, data: <the job as GET /v1/jobs/{id} shows it>}`,
/// signed in `webhook-id`, `webhook-timestamp` and `webhook-signature` with
/// the `secret` this answer shows once. A delivery that does not get a 2xx
/// is retried with the same `webhook-id` after 5 s, 30 s, 2 min, 10 min,
/// 30 min, 1 h, 3 h, 6 h and 14 h (24 h 43 min in all). At most 20 endpoints an account.
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", security(("bearer" = ["admin"])),
    request_body = WebhookBody,
    responses((status = 201, body = WebhookView),
              (status = 400, description = "`invalid_parameter` naming url or events"),
              (status = 422, description = "`unprocessable_entity`: a URL that does not parse, carries credentials or is on an internal network, or 20 endpoints already")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    ApiJson(body): ApiJson<WebhookBody>,
) -> ApiResult<(StatusCode, Json<WebhookView>)> {
    let url = check_url(body.url.trim(), "url", state.config.webhook_allow_private)?;
    let mut events = body
        .events
        .unwrap_or_else(|| EVENTS.iter().map(|e| (*e).to_owned()).collect());
    events.sort();
    events.dedup();
    if events.is_empty() || events.iter().any(|e| !EVENTS.contains(&e.as_str())) {
        return Err(ApiError::invalid_parameter(
            "events",
            format!("must be some of {}", EVENTS.join(", ")),
        )
        .into());
    }
    let (_, registered) = state.db.list_webhooks(&auth.account_id, 1, 0).await?;
    if registered >= MAX_ENDPOINTS {
        return Err(ApiError::unprocessable(
            "url",
            format!("the account has {MAX_ENDPOINTS} endpoints already"),
        )
        .into());
    }
    let record = state
        .db
        .create_webhook(&auth.account_id, url.as_str(), &events, &new_secret())
        .await?;
    Ok((StatusCode::CREATED, Json(WebhookView::new(record, true))))
}

/// List webhook endpoints
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", security(("bearer" = ["admin"])),
    params(("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<WebhookView>)))]
pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<RawPageQuery>,
) -> ApiResult<Json<Page<WebhookView>>> {
    let params = page_params(&q)?;
    let rows = state
        .db
        .list_webhooks(&auth.account_id, params.limit.into(), params.offset())
        .await?;
    Ok(Json(page_of(rows, params, |w| WebhookView::new(w, false))))
}

/// Get a webhook endpoint
#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks", security(("bearer" = ["admin"])),
    params(("id" = String, Path)), responses((status = 200, body = WebhookView), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<WebhookId>,
) -> ApiResult<Json<WebhookView>> {
    let w = state
        .db
        .webhook(&auth.account_id, &id)
        .await?
        .ok_or_else(|| WebhookId::not_found(&id))?;
    Ok(Json(WebhookView::new(w, false)))
}

/// Delete a webhook endpoint
///
/// Its pending deliveries are dropped with it.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", security(("bearer" = ["admin"])),
    params(("id" = String, Path)), responses((status = 200, description = "`{id, deleted: true}`"), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<WebhookId>,
) -> ApiResult<Json<Value>> {
    if !state.db.delete_webhook(&auth.account_id, &id).await? {
        return Err(WebhookId::not_found(&id).into());
    }
    Ok(Json(json!({ "id": id, "deleted": true })))
}

/// An endpoint's deliveries
///
/// Newest first: each event sent to the endpoint, its attempts and how
/// the last one went.
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks", security(("bearer" = ["admin"])),
    params(("id" = String, Path), ("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<DeliveryView>), (status = 404)))]
pub async fn deliveries(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<WebhookId>,
    ApiQuery(q): ApiQuery<RawPageQuery>,
) -> ApiResult<Json<Page<DeliveryView>>> {
    let params = page_params(&q)?;
    if state.db.webhook(&auth.account_id, &id).await?.is_none() {
        return Err(WebhookId::not_found(&id).into());
    }
    let rows = state
        .db
        .list_deliveries(&auth.account_id, &id, params.limit.into(), params.offset())
        .await?;
    Ok(Json(page_of(rows, params, DeliveryView::from)))
}

/// Send a delivery again
///
/// Within a second, with the same `webhook-id` and body. Its attempts
/// count anew: if this one fails, the usual retries follow.
#[utoipa::path(post, path = "/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", tag = "webhooks",
    security(("bearer" = ["admin"])),
    params(("id" = String, Path), ("deliveryId" = String, Path)),
    responses((status = 202, body = DeliveryView), (status = 404)))]
pub async fn redeliver(
    State(state): State<AppState>,
    auth: Auth,
    Path((id, delivery)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<DeliveryView>)> {
    let endpoint = WebhookId::parse(&id).ok_or_else(|| WebhookId::not_found(&id))?;
    let message = DeliveryId::parse(&delivery).ok_or_else(|| DeliveryId::not_found(&delivery))?;
    let d = state
        .db
        .redeliver(&auth.account_id, &endpoint, &message)
        .await?
        .ok_or_else(|| DeliveryId::not_found(&delivery))?;
    Ok((StatusCode::ACCEPTED, Json(d.into())))
}

/// The secret of a request's own `webhookUrl`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RequestSecretView {
    /// `whsec_…`: verify the deliveries to a request's `webhookUrl` with it.
    pub secret: String,
}

/// The secret of requests' webhooks
///
/// The account's secret for the `webhookUrl` a capability request may
/// carry (one per account, as Replicate has it: such a URL has no endpoint
/// of its own). Made on first use or first read; readable again.
#[utoipa::path(get, path = "/v1/webhooks/default/secret", tag = "webhooks", security(("bearer" = ["admin"])),
    responses((status = 200, body = RequestSecretView)))]
pub async fn request_secret(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<RequestSecretView>> {
    let secret = state
        .db
        .request_webhook_secret(&auth.account_id, &new_secret())
        .await?;
    Ok(Json(RequestSecretView { secret }))
}

/// Rotate the secret of requests' webhooks
///
/// A new secret, answered once here (and readable with `GET`); every
/// delivery from now on, retries of earlier events too, is signed with it.
#[utoipa::path(post, path = "/v1/webhooks/default/secret", tag = "webhooks", security(("bearer" = ["admin"])),
    responses((status = 200, body = RequestSecretView)))]
pub async fn rotate_request_secret(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<RequestSecretView>> {
    let secret = new_secret();
    state
        .db
        .rotate_request_webhook_secret(&auth.account_id, &secret)
        .await?;
    Ok(Json(RequestSecretView { secret }))
}
