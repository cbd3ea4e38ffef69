//! The web console at `/console` (docs/console.md): one page, its script
//! and its style sheet, built into the binary. The page talks only to this
//! server's API, with the key its user signs in with; its
//! Content-Security-Policy lets it load and connect to nothing else.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use mediagen_core::ErrorCode;

use crate::error::Error;

/// Scripts, styles, media and requests from this origin only; no inline
/// script or style, no frames, no form posts (the forms are the script's).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The console's files: name, content type, contents.
const FILES: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../assets/console/index.html"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("../../assets/console/console.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/console/console.css"),
    ),
];

/// `GET /console`: the page.
pub async fn page() -> Response {
    file("index.html")
}

/// `GET /console/{name}`: one of the page's files (404 for any other name).
pub async fn asset(Path(name): Path<String>) -> Response {
    file(&name)
}

fn file(name: &str) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CONTENT_SECURITY_POLICY, CSP),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *body,
        )
            .into_response(),
        None => Error::new(ErrorCode::RouteNotFound).into_response(),
    }
}
