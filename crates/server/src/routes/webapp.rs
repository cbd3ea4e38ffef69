//! The web app at `/app` (docs/console.md): the Svelte console that
//! `console/` builds with Vite, its files built into the binary
//! (`build.rs`). Every `/app/...` path that is not a built file is one of
//! the app's pages and gets its `index.html`; the hashed files under
//! `assets/` are cached for good. The first console's address, `/console`,
//! leads here.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};

use super::assets::{serve, serve_cached, Asset};

/// Scripts, styles, media and requests from this origin only (`blob:` is
/// the page's own recordings and files, read back to draw waveforms); no
/// inline script or style, no frames, no form posts.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; media-src 'self' blob:; connect-src 'self' blob:; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const FILES: &[Asset] = include!(concat!(env!("OUT_DIR"), "/console_files.rs"));

/// What `/app` says when the binary was built without the front end.
const NOT_BUILT: &str = "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\">\
    <title>Mediagen</title><h1>The console was not built</h1>\
    <p>This binary was built without the web console. Run <code>make build</code> \
    (it runs <code>npm ci</code> and <code>npm run build</code> in <code>console/</code>) \
    and build the server again.</p></html>";

/// `GET /app` and `GET /app/{page}`: the app's page.
pub async fn page() -> Response {
    if FILES.is_empty() {
        return (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CONTENT_SECURITY_POLICY, CSP),
            ],
            NOT_BUILT,
        )
            .into_response();
    }
    serve(FILES, "index.html", CSP)
}

/// `GET /app/{*path}`: a built file, or else a page of the app.
pub async fn file(Path(path): Path<String>) -> Response {
    if path.starts_with("assets/") {
        serve_cached(FILES, &path, CSP, "public, max-age=31536000, immutable")
    } else if FILES
        .iter()
        .any(|a| a.name == path && a.name != "index.html")
    {
        serve(FILES, &path, CSP)
    } else {
        page().await
    }
}

/// `GET /console` and below: the first console's address, kept for
/// bookmarks; the web app took its place.
pub async fn moved() -> Redirect {
    Redirect::permanent("/app/")
}
