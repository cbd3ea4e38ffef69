//! The dispatcher: leases due deliveries, renders each one's body on its
//! first attempt, signs and posts it, and records what happened. Failed
//! attempts are retried after [`RETRY_DELAYS`] (a little over 24 hours in all);
//! then the delivery is given up (`failed`; it can be redelivered).

use std::time::Duration;

use mediagen_core::time::{iso8601, now_ms};
use mediagen_store::{Attempt, DeliveryRecord, Due};
use serde_json::json;
use tokio::sync::watch;

use super::signing::sign;
use super::target::{check_url, resolve};
use crate::jobs::JobView;
use crate::state::AppState;

/// Seconds before each retry: the first within 30 s of the first attempt,
/// then growing to hours.
pub const RETRY_DELAYS: [i64; 9] = [5, 30, 120, 600, 1800, 3600, 10_800, 21_600, 50_400];

/// How long a dispatcher holds the deliveries it leased.
const LEASE_MS: i64 = 60_000;
/// How long a receiver has to answer.
const TIMEOUT: Duration = Duration::from_secs(15);
/// Deliveries sent at once by one dispatcher.
const BATCH: i64 = 16;

/// Sends due deliveries until `stop` turns true: at once when a job ends
/// here, otherwise every second.
pub async fn run(state: AppState, mut stop: watch::Receiver<bool>) {
    let mut finished = state.events.subscribe_finished();
    loop {
        match state.db.claim_deliveries(BATCH, LEASE_MS).await {
            Ok(due) => {
                futures::future::join_all(due.into_iter().map(|d| deliver(&state, d))).await;
            }
            Err(e) => tracing::warn!(error = %e, "claiming webhook deliveries failed"),
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = finished.recv() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// One attempt of one delivery.
async fn deliver(state: &AppState, due: Due) {
    let d = &due.delivery;
    let payload = match &d.payload {
        Some(p) => p.clone(),
        None => match render(state, d).await {
            Some(p) => {
                if let Err(e) = state.db.set_delivery_payload(&d.id, &p).await {
                    tracing::warn!(error = %e, "keeping a webhook body failed");
                }
                p
            }
            None => {
                let gone = Attempt::Failed {
                    status: None,
                    error: "the job no longer exists".into(),
                    retry_at: None,
                };
                record(state, d, gone).await;
                return;
            }
        },
    };
    let attempt = match send(state, &due, &payload).await {
        Ok(status) if (200..300).contains(&status) => Attempt::Delivered { status },
        Ok(status) => failed(d, Some(status), format!("the endpoint answered {status}")),
        Err(reason) => failed(d, None, reason),
    };
    record(state, d, attempt).await;
}

async fn record(state: &AppState, d: &DeliveryRecord, attempt: Attempt) {
    if let Err(e) = state.db.record_attempt(&d.id, attempt).await {
        tracing::warn!(error = %e, delivery = %d.id, "recording a webhook attempt failed");
    }
}

/// A failed attempt: retried after the next delay, or given up.
fn failed(d: &DeliveryRecord, status: Option<i64>, error: String) -> Attempt {
    let retry_at = RETRY_DELAYS
        .get(d.attempts as usize)
        .map(|s| now_ms() + s * 1000);
    Attempt::Failed {
        status,
        error,
        retry_at,
    }
}

/// `{type, timestamp, data: <the job as GET /v1/jobs/{id} shows it>}`;
/// `None` when the job is gone (deleted by retention).
async fn render(state: &AppState, d: &DeliveryRecord) -> Option<String> {
    let job = state.db.job_by_id(&d.job_id).await.ok().flatten()?;
    let body = json!({
        "type": d.event,
        "timestamp": iso8601(d.created_at),
        "data": JobView::new(state, job),
    });
    Some(body.to_string())
}

/// Posts the signed body to the address the URL resolves to now (checked);
/// redirects are not followed. The receiver's status, or why there was
/// none.
async fn send(state: &AppState, due: &Due, payload: &str) -> Result<i64, String> {
    let allow = state.config.webhook_allow_private;
    let url = check_url(&due.url, "url", allow).map_err(|e| e.message)?;
    let addr = resolve(&url, allow).await?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .resolve(&host, addr)
        .build()
        .map_err(|_| "the HTTP client could not be built".to_owned())?;
    let id = due.delivery.id.as_str();
    let timestamp = now_ms() / 1000;
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", "Mediagen-Webhooks/1")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            sign(&due.secret, id, timestamp, payload),
        )
        .body(payload.to_owned())
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                "the endpoint did not answer in time".to_owned()
            } else {
                "the endpoint could not be reached".to_owned()
            }
        })?;
    Ok(i64::from(response.status().as_u16()))
}

#[cfg(test)]
mod tests {
    use super::RETRY_DELAYS;

    #[test]
    fn retries_start_within_30_s_grow_and_span_a_day() {
        assert!(RETRY_DELAYS[0] <= 30);
        assert!(RETRY_DELAYS.windows(2).all(|w| w[0] < w[1]));
        let total: i64 = RETRY_DELAYS.iter().sum();
        assert!((86_400..=90_000).contains(&total), "{total}");
    }
}
