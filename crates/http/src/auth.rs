//! The `Authorization` header.

use axum::http::{header, HeaderMap};
use mediagen_core::{ApiError, ErrorCode};

/// The key of an `Authorization: Bearer <key>` header (401 errors otherwise).
pub fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::new(ErrorCode::MissingApiKey))?;
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, key) = value.trim().split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(malformed());
    }
    Ok(key.trim())
}

fn malformed() -> ApiError {
    ApiError::new(ErrorCode::InvalidApiKey)
        .with_message("The Authorization header must be `Bearer <API_KEY>`.")
        .with_detail("reason", "malformed_header")
}
