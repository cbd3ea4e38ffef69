//! HTTP side of the error table: [`Error`] turns an [`ApiError`] into a
//! response. The body is written by the request-id middleware, which knows
//! the request id; 5xx causes are logged there and never sent.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mediagen_core::{ApiError, ErrorCode};
use mediagen_store::{BlobError, StoreError};

/// Seconds a client is told to wait when a service the API needs is down.
pub const UNAVAILABLE_RETRY_AFTER: u64 = 5;

/// The error type of every handler.
#[derive(Debug)]
pub struct Error {
    pub api: ApiError,
    /// Internal cause, logged with the request id, never sent to the client.
    pub cause: Option<String>,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after: Option<u64>,
    /// The database was found unreachable (see [`DatabaseDown`]).
    pub database_down: bool,
}

/// Marks a response whose request found the database unreachable: the
/// gate in front of the routes then answers 503 at once until a ping
/// answers (`middleware::database_gate`).
#[derive(Debug, Clone, Copy)]
pub struct DatabaseDown;

/// The error carried to the request-id middleware inside the response.
#[derive(Debug, Clone)]
pub struct PendingError {
    pub api: ApiError,
    pub cause: Option<String>,
}

pub type ApiResult<T> = Result<T, Error>;

impl Error {
    pub fn new(code: ErrorCode) -> Self {
        ApiError::new(code).into()
    }

    /// A 500 whose cause is logged but not shown.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self {
            api: ApiError::internal(),
            cause: Some(cause.to_string()),
            retry_after: None,
            database_down: false,
        }
    }

    /// A 503 with `Retry-After`: `what` (the database, the file store) is
    /// unreachable for now; the cause is logged but not shown.
    pub fn unavailable(what: &str, cause: impl std::fmt::Display) -> Self {
        Self {
            api: ApiError::new(ErrorCode::ServiceUnavailable)
                .with_message(format!("The {what} is unavailable; retry shortly.")),
            cause: Some(cause.to_string()),
            retry_after: Some(UNAVAILABLE_RETRY_AFTER),
            database_down: false,
        }
    }

    /// The server's own disk failed: a full disk (or quota) is a passing
    /// fault (503 with `Retry-After`), anything else an internal error.
    pub fn disk(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                Self::unavailable("server's scratch disk", e)
            }
            _ => Self::internal(e),
        }
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }
}

impl From<ApiError> for Error {
    fn from(api: ApiError) -> Self {
        Self {
            api,
            cause: None,
            retry_after: None,
            database_down: false,
        }
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        if e.is_unavailable() {
            return Self {
                database_down: true,
                ..Self::unavailable("database", e)
            };
        }
        Self::internal(e)
    }
}

impl From<BlobError> for Error {
    fn from(e: BlobError) -> Self {
        match e {
            BlobError::NotFound | BlobError::BadKey => {
                ApiError::new(ErrorCode::ResourceNotFound).into()
            }
            BlobError::BadRange => ApiError::new(ErrorCode::RangeNotSatisfiable).into(),
            e if e.is_unavailable() => Self::unavailable("file store", e),
            e => Self::internal(e),
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.api.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = status.into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(seconds));
        }
        if self.database_down {
            response.extensions_mut().insert(DatabaseDown);
        }
        response.extensions_mut().insert(PendingError {
            api: self.api,
            cause: self.cause,
        });
        response
    }
}

/// 413 with the limit in the details.
pub fn too_large(limit: usize) -> Error {
    mediagen_http::form::too_large(limit as u64).into()
}
