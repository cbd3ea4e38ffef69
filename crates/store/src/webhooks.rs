//! Webhook endpoints and their deliveries. A job's end writes one delivery
//! per subscribed endpoint in the transaction that ends it; dispatchers
//! (any API process) lease due deliveries, send them and record the
//! outcome, so a delivery outlives a crash or a restart of either side.

use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, DeliveryId, JobId, WebhookId};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::db::{Db, StoreError};

/// An endpoint, with the secret that signs its deliveries.
#[derive(Debug, Clone)]
pub struct WebhookRecord {
    pub id: WebhookId,
    pub account_id: AccountId,
    pub url: String,
    pub events: Vec<String>,
    pub secret: String,
    pub created_at: i64,
}

/// A delivery: one event for one endpoint, or for the `webhookUrl` of the
/// request that made the job.
#[derive(Debug, Clone)]
pub struct DeliveryRecord {
    pub id: DeliveryId,
    /// `None`: to the job's own `webhookUrl`.
    pub endpoint_id: Option<WebhookId>,
    pub account_id: AccountId,
    pub job_id: JobId,
    /// `job.completed`, `job.failed` or `job.cancelled`.
    pub event: String,
    /// The body, as first sent (`None` before the first attempt).
    pub payload: Option<String>,
    /// `pending`, `delivered` or `failed` (given up).
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: i64,
    /// The receiver's last HTTP status.
    pub last_status: Option<i64>,
    /// Why the last attempt failed (ours, never the receiver's body).
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A due delivery with what sending it needs.
#[derive(Debug, Clone)]
pub struct Due {
    pub delivery: DeliveryRecord,
    pub url: String,
    pub secret: String,
}

const ENDPOINT_COLS: &str = "id, account_id, url, events, secret, created_at";
const DELIVERY_COLS: &str = "id, endpoint_id, account_id, job_id, event, payload, status, \
     attempts, next_attempt_at, last_status, last_error, created_at, updated_at";

fn endpoint_from_row(row: &AnyRow) -> Result<WebhookRecord, StoreError> {
    let events: String = row.try_get("events")?;
    Ok(WebhookRecord {
        id: WebhookId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        url: row.try_get("url")?,
        events: events
            .split(',')
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect(),
        secret: row.try_get("secret")?,
        created_at: row.try_get("created_at")?,
    })
}

fn delivery_from_row(row: &AnyRow) -> Result<DeliveryRecord, StoreError> {
    Ok(DeliveryRecord {
        id: DeliveryId::from_stored(row.try_get("id")?),
        endpoint_id: row
            .try_get::<Option<String>, _>("endpoint_id")?
            .map(WebhookId::from_stored),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        job_id: JobId::from_stored(row.try_get("job_id")?),
        event: row.try_get("event")?,
        payload: row.try_get("payload")?,
        status: row.try_get("status")?,
        attempts: row.try_get("attempts")?,
        next_attempt_at: row.try_get("next_attempt_at")?,
        last_status: row.try_get("last_status")?,
        last_error: row.try_get("last_error")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// What a dispatcher learned from one attempt.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered { status: i64 },
    /// Try again at `retry_at` (Unix ms), or give up (`None`).
    Failed {
        status: Option<i64>,
        error: String,
        retry_at: Option<i64>,
    },
}

impl Db {
    /// Registers an endpoint of the account.
    pub async fn create_webhook(
        &self,
        account_id: &AccountId,
        url: &str,
        events: &[String],
        secret: &str,
    ) -> Result<WebhookRecord, StoreError> {
        let row = sqlx::query(&format!(
            "INSERT INTO webhook_endpoints ({ENDPOINT_COLS}) VALUES ($1, $2, $3, $4, $5, $6) \
             RETURNING {ENDPOINT_COLS}"
        ))
        .bind(WebhookId::random().as_str())
        .bind(account_id.as_str())
        .bind(url)
        .bind(format!(",{},", events.join(",")))
        .bind(secret)
        .bind(now_ms())
        .fetch_one(&self.pool)
        .await?;
        endpoint_from_row(&row)
    }

    pub async fn webhook(
        &self,
        account_id: &AccountId,
        id: &WebhookId,
    ) -> Result<Option<WebhookRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {ENDPOINT_COLS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(endpoint_from_row).transpose()
    }

    pub async fn list_webhooks(
        &self,
        account_id: &AccountId,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<WebhookRecord>, u64), StoreError> {
        self.account_page(
            "webhook_endpoints",
            ENDPOINT_COLS,
            account_id,
            limit,
            offset,
            endpoint_from_row,
        )
        .await
    }

    /// Deletes an endpoint of the account and its deliveries; false when
    /// the account has no such endpoint.
    pub async fn delete_webhook(
        &self,
        account_id: &AccountId,
        id: &WebhookId,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let gone = sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2")
            .bind(id.as_str())
            .bind(account_id.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected()
            > 0;
        if gone {
            sqlx::query("DELETE FROM webhook_deliveries WHERE endpoint_id = $1")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(gone)
    }

    /// The account's secret for the `webhookUrl` of its requests, made
    /// from `fresh` when it has none yet.
    pub async fn request_webhook_secret(
        &self,
        account_id: &AccountId,
        fresh: &str,
    ) -> Result<String, StoreError> {
        sqlx::query(
            "INSERT INTO webhook_secrets (account_id, secret, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (account_id) DO NOTHING",
        )
        .bind(account_id.as_str())
        .bind(fresh)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(
            sqlx::query("SELECT secret FROM webhook_secrets WHERE account_id = $1")
                .bind(account_id.as_str())
                .fetch_one(&self.pool)
                .await?
                .try_get("secret")?,
        )
    }

    /// Replaces the account's request secret with `fresh`: deliveries from
    /// now on, retries too, are signed with it.
    pub async fn rotate_request_webhook_secret(
        &self,
        account_id: &AccountId,
        fresh: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO webhook_secrets (account_id, secret, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (account_id) DO UPDATE SET secret = excluded.secret, \
             created_at = excluded.created_at",
        )
        .bind(account_id.as_str())
        .bind(fresh)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Writes a delivery of the job's end (`job.<status>`) for every endpoint
    /// of its account subscribed to it, and for the job's own `webhookUrl`,
    /// in the transaction that ends it.
    pub(crate) async fn enqueue_webhooks(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        job_id: &JobId,
    ) -> Result<(), StoreError> {
        let job = sqlx::query("SELECT account_id, status, webhook_url FROM jobs WHERE id = $1")
            .bind(job_id.as_str())
            .fetch_one(&mut **tx)
            .await?;
        let account: String = job.try_get("account_id")?;
        let status: String = job.try_get("status")?;
        let own_url: Option<String> = job.try_get("webhook_url")?;
        let event = format!("job.{status}");
        let mut endpoints: Vec<Option<String>> = Vec::new();
        for row in
            sqlx::query("SELECT id FROM webhook_endpoints WHERE account_id = $1 AND events LIKE $2")
                .bind(&account)
                .bind(format!("%,{event},%"))
                .fetch_all(&mut **tx)
                .await?
        {
            endpoints.push(Some(row.try_get("id")?));
        }
        // The request's own URL hears every end of its job.
        if own_url.is_some() {
            endpoints.push(None);
        }
        let now = now_ms();
        for endpoint in endpoints {
            sqlx::query(
                "INSERT INTO webhook_deliveries (id, endpoint_id, account_id, job_id, event, \
                 status, attempts, next_attempt_at, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $6, $6)",
            )
            .bind(DeliveryId::random().as_str())
            .bind(endpoint)
            .bind(&account)
            .bind(job_id.as_str())
            .bind(&event)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// Leases up to `limit` due deliveries for `lease_ms` (another
    /// dispatcher skips them meanwhile), with their endpoints.
    pub async fn claim_deliveries(
        &self,
        limit: i64,
        lease_ms: i64,
    ) -> Result<Vec<Due>, StoreError> {
        let now = now_ms();
        let ids = sqlx::query(
            "SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 \
             AND (lease_until IS NULL OR lease_until < $1) ORDER BY next_attempt_at LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let mut due = Vec::new();
        for id in ids {
            let id: String = id.try_get("id")?;
            // Leased only if no one leased it since it was read.
            let row = sqlx::query(&format!(
                "UPDATE webhook_deliveries SET lease_until = $2 WHERE id = $1 \
                 AND status = 'pending' AND (lease_until IS NULL OR lease_until < $3) \
                 RETURNING {DELIVERY_COLS}"
            ))
            .bind(&id)
            .bind(now + lease_ms)
            .bind(now)
            .fetch_optional(&self.pool)
            .await?;
            let Some(row) = row else { continue };
            let delivery = delivery_from_row(&row)?;
            let target = match &delivery.endpoint_id {
                Some(endpoint) => {
                    sqlx::query("SELECT url, secret FROM webhook_endpoints WHERE id = $1")
                        .bind(endpoint.as_str())
                        .fetch_optional(&self.pool)
                        .await?
                }
                None => {
                    sqlx::query(
                        "SELECT j.webhook_url AS url, s.secret AS secret FROM jobs j \
                         JOIN webhook_secrets s ON s.account_id = j.account_id WHERE j.id = $1",
                    )
                    .bind(delivery.job_id.as_str())
                    .fetch_optional(&self.pool)
                    .await?
                }
            };
            let Some(target) = target else { continue };
            let Some(url) = target.try_get::<Option<String>, _>("url")? else {
                continue;
            };
            due.push(Due {
                url,
                secret: target.try_get("secret")?,
                delivery,
            });
        }
        Ok(due)
    }

    /// Keeps the body of a delivery's first attempt for the ones after.
    pub async fn set_delivery_payload(
        &self,
        id: &DeliveryId,
        payload: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE webhook_deliveries SET payload = $2 WHERE id = $1 AND payload IS NULL")
            .bind(id.as_str())
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records an attempt and releases the lease.
    pub async fn record_attempt(
        &self,
        id: &DeliveryId,
        attempt: Attempt,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let (status, code, error, next) = match attempt {
            Attempt::Delivered { status } => ("delivered", Some(status), None, now),
            Attempt::Failed {
                status,
                error,
                retry_at,
            } => match retry_at {
                Some(at) => ("pending", status, Some(error), at),
                None => ("failed", status, Some(error), now),
            },
        };
        sqlx::query(
            "UPDATE webhook_deliveries SET status = $2, attempts = attempts + 1, last_status = $3, \
             last_error = $4, next_attempt_at = $5, lease_until = NULL, updated_at = $6 \
             WHERE id = $1",
        )
        .bind(id.as_str())
        .bind(status)
        .bind(code)
        .bind(error)
        .bind(next)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// An endpoint's deliveries, newest first.
    pub async fn list_deliveries(
        &self,
        account_id: &AccountId,
        endpoint: &WebhookId,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<DeliveryRecord>, u64), StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {DELIVERY_COLS} FROM webhook_deliveries WHERE account_id = $1 \
             AND endpoint_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
        ))
        .bind(account_id.as_str())
        .bind(endpoint.as_str())
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let total: i64 = sqlx::query(
            "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE account_id = $1 AND endpoint_id = $2",
        )
        .bind(account_id.as_str())
        .bind(endpoint.as_str())
        .fetch_one(&self.pool)
        .await?
        .try_get("n")?;
        let items = rows
            .iter()
            .map(delivery_from_row)
            .collect::<Result<_, _>>()?;
        Ok((items, total as u64))
    }

    /// Sends a delivery of the account's endpoint again, now, with the same
    /// id and body; its attempts count anew. `None` when there is no such
    /// delivery.
    pub async fn redeliver(
        &self,
        account_id: &AccountId,
        endpoint: &WebhookId,
        id: &DeliveryId,
    ) -> Result<Option<DeliveryRecord>, StoreError> {
        let now = now_ms();
        let row = sqlx::query(&format!(
            "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $4, \
             lease_until = NULL, updated_at = $4 \
             WHERE id = $1 AND account_id = $2 AND endpoint_id = $3 RETURNING {DELIVERY_COLS}"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .bind(endpoint.as_str())
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(delivery_from_row).transpose()
    }
}
