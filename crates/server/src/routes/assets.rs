//! Files built into the binary and served as they are (the console's, the
//! API reference's), each page under its own Content-Security-Policy.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use mediagen_core::ErrorCode;

use crate::error::Error;

/// A file served at a fixed name.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

/// The asset called `name` with `csp`, or the API's 404 for any other
/// name (names are compared whole: nothing is read from the disk).
pub fn serve(assets: &[Asset], name: &str, csp: &'static str) -> Response {
    serve_cached(assets, name, csp, "no-cache")
}

/// [`serve`] with a `Cache-Control` of the caller's (built files whose
/// names carry their content's hash never change).
pub fn serve_cached(
    assets: &[Asset],
    name: &str,
    csp: &'static str,
    cache: &'static str,
) -> Response {
    match assets.iter().find(|a| a.name == name) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                (header::CONTENT_SECURITY_POLICY, csp),
                (header::CACHE_CONTROL, cache),
            ],
            a.body,
        )
            .into_response(),
        None => Error::new(ErrorCode::RouteNotFound).into_response(),
    }
}
