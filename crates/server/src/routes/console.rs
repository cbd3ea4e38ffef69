//! The web console at `/console` (docs/console.md): one page, its script
//! and its style sheet, built into the binary. The page talks only to this
//! server's API, with the key its user signs in with; its
//! Content-Security-Policy lets it load and connect to nothing else.

use axum::extract::Path;
use axum::response::Response;

use super::assets::{serve, Asset};

/// Scripts, styles, media and requests from this origin only; no inline
/// script or style, no frames, no form posts (the forms are the script's).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const FILES: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../../assets/console/index.html"),
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/console/console.js"),
    },
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../assets/console/console.css"),
    },
];

/// `GET /console`: the page.
pub async fn page() -> Response {
    serve(FILES, "index.html", CSP)
}

/// `GET /console/{name}`: one of the page's files (404 for any other name).
pub async fn asset(Path(name): Path<String>) -> Response {
    serve(FILES, &name, CSP)
}
