//! Operational routes: health, readiness, metrics (the operator's), the
//! OpenAPI document and the human docs page.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::{ApiResult, Error, UNAVAILABLE_RETRY_AFTER};
use crate::extract::Operator;
use crate::state::AppState;

/// Liveness: the process answers.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the database and the file store answer (503 with
/// `Retry-After` naming the one that does not).
pub async fn readyz(State(state): State<AppState>) -> Response {
    // Each answer within a few seconds: a balancer asks often.
    use tokio::time::timeout;
    let database = timeout(READY_WAIT, state.db.ping()).await == Ok(true);
    let files = database
        && matches!(
            timeout(READY_WAIT, state.blobs.exists(READY_KEY)).await,
            Ok(Ok(_))
        );
    if !files {
        let down = if database { "file store" } else { "database" };
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, UNAVAILABLE_RETRY_AFTER.to_string())],
            Json(json!({ "status": format!("{down} unavailable") })),
        )
            .into_response();
    }
    // The job kinds some live worker (of any process) claims: jobs of
    // other kinds wait queued.
    let mut kinds: Vec<&str> = state
        .live_kinds()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|k| k.name())
        .collect();
    kinds.sort_unstable();
    Json(json!({ "status": "ready", "workerKinds": kinds })).into_response()
}

/// How long `/readyz` waits for the database and the file store.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The key `/readyz` asks the file store about (it need not exist).
const READY_KEY: &str = "readyz";

/// Prometheus text format.
/// Prometheus metrics on `metrics_bind`'s listener (no key: that address
/// is the operator's to keep private).
pub async fn metrics(State(state): State<AppState>) -> ApiResult<Response> {
    let depth = state.db.queue_depth().await.map_err(Error::from)?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(&depth),
    )
        .into_response())
}

/// Prometheus metrics on the API's own address: the queue is every
/// account's, so only the operator reads it.
pub async fn operator_metrics(_: Operator, state: State<AppState>) -> ApiResult<Response> {
    metrics(state).await
}

/// The OpenAPI 3.1 document.
pub async fn openapi() -> Json<&'static serde_json::Value> {
    Json(crate::openapi::json())
}

/// A self-contained page that renders the OpenAPI document (no CDN, so it
/// works offline).
pub async fn docs() -> impl IntoResponse {
    static CSP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        // The page's one inline script is allowed by its hash, nothing else.
        let script = DOCS
            .split_once("<script>")
            .and_then(|(_, rest)| rest.split_once("</script>"))
            .map(|(s, _)| s)
            .unwrap_or("");
        use base64::Engine;
        let hash = base64::engine::general_purpose::STANDARD
            .encode(<sha2::Sha256 as sha2::Digest>::digest(script.as_bytes()));
        format!(
            "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
             base-uri 'none'; form-action 'none'"
        )
    });
    (
        [(axum::http::header::CONTENT_SECURITY_POLICY, CSP.as_str())],
        Html(DOCS),
    )
}

const DOCS: &str = include_str!("../../assets/docs.html");
