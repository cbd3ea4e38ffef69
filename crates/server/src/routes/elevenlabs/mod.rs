//! ElevenLabs' API on our engines, under `/elevenlabs/v1`, for clients
//! written for it (`ElevenLabs(api_key=KEY, base_url="http://host:8080/elevenlabs")`;
//! docs/compatibility.md). The key comes in `xi-api-key` (or as a Bearer
//! token); each route runs our job and answers in ElevenLabs' shape.

pub mod account;
pub mod realtime;
pub mod speech;
pub mod voices;

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use serde::Deserialize;

/// The query of the routes that make audio.
#[derive(Debug, Deserialize)]
pub struct FormatQuery {
    pub output_format: Option<String>,
}

/// ElevenLabs' `xi-api-key` header read as our `Authorization: Bearer`
/// (which, when also sent, wins).
pub async fn xi_api_key(mut req: Request, next: Next) -> Response {
    let headers = req.headers_mut();
    if !headers.contains_key(header::AUTHORIZATION) {
        let bearer = headers
            .get("xi-api-key")
            .and_then(|k| k.to_str().ok())
            .and_then(|k| HeaderValue::from_str(&format!("Bearer {}", k.trim())).ok());
        if let Some(v) = bearer {
            headers.insert(header::AUTHORIZATION, v);
        }
    }
    next.run(req).await
}
