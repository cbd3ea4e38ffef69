//! The multipart form extractor: the server's limits and temporary
//! directory around the form reader of `mediagen_http`.

use axum::body::to_bytes;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header;
use mediagen_core::{ApiError, ErrorCode};
use mediagen_http::form::{FormError, DRAIN};
pub use mediagen_http::form::{FormLimits, MultipartForm, Upload};
use tokio::time::Duration;

use crate::error::too_large;
use crate::error::Error;
use crate::state::AppState;

impl From<FormError> for Error {
    fn from(e: FormError) -> Self {
        match e {
            FormError::Refused(api) => api.into(),
            FormError::Io(io) => Error::disk(io),
        }
    }
}

impl FromRequest<AppState> for MultipartForm {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Error> {
        let limit = state.config.upload_body_limit;
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            // Read (and drop) a little of the body first, so a client that is
            // still sending sees the 413 instead of a reset connection.
            let _ = to_bytes(req.into_body(), DRAIN).await;
            return Err(too_large(limit));
        }
        let multipart = Multipart::from_request(req, state).await.map_err(|_| {
            Error::from(
                ApiError::new(ErrorCode::UnsupportedMediaType)
                    .with_message("Send files as `multipart/form-data`."),
            )
        })?;
        // The process's scratch directory (`scratch::claim`).
        let tmp = tempfile::env::temp_dir();
        tokio::fs::create_dir_all(&tmp).await.map_err(Error::disk)?;
        let limits = FormLimits {
            body: limit as u64,
            idle: Duration::from_secs_f64(state.config.upload_idle_seconds),
            total: Duration::from_secs_f64(state.config.upload_timeout_seconds),
        };
        Ok(MultipartForm::read(multipart, &limits, &tmp).await?)
    }
}
