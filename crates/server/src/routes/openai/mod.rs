//! OpenAI's API on our engines, for clients written for it
//! (`OpenAI(base_url="http://host:8080/v1", api_key=KEY)`;
//! docs/compatibility.md). Each route validates as OpenAI does
//! (`mediagen_jobs::openai`), runs our job, and answers in OpenAI's shape.

pub mod images;
pub mod speech;
pub mod transcription;

pub use images::generations;
pub use speech::speech;
pub use transcription::{transcriptions, translations};

use axum::http::HeaderValue;
use axum::response::Response;

/// The response, saying in `X-Mediagen-Ignored` which parameters were
/// taken and not used.
fn with_ignored(mut response: Response, ignored: &[&str]) -> Response {
    if !ignored.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&ignored.join(", ")) {
            response.headers_mut().insert("x-mediagen-ignored", v);
        }
    }
    response
}

/// The response, naming its job in `X-Job-Id` (as the speech route does).
fn with_job(mut response: Response, job: &mediagen_core::JobId) -> Response {
    if let Ok(v) = HeaderValue::from_str(job.as_ref()) {
        response.headers_mut().insert("x-job-id", v);
    }
    response
}
