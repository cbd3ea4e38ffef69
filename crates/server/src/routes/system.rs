//! Unauthenticated operational routes: health, readiness, metrics, the
//! OpenAPI document and the human docs page.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::{ApiResult, Error};
use crate::state::AppState;

/// Liveness: the process answers.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the database answers.
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.db.ping().await {
        Json(json!({ "status": "ready" })).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "database unavailable" })),
        )
            .into_response()
    }
}

/// Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> ApiResult<Response> {
    let depth = state.db.queue_depth().await.map_err(Error::from)?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(&depth),
    )
        .into_response())
}

/// The OpenAPI 3.1 document.
pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::openapi::document())
}

/// A self-contained page that renders the OpenAPI document (no CDN, so it
/// works offline).
pub async fn docs() -> Html<&'static str> {
    Html(include_str!("../../assets/docs.html"))
}
