//! The API reference at `/docs`: Swagger UI (`swagger-ui-dist` from npm,
//! Apache-2.0) rendering `/v1/openapi.json`, built into the binary (see
//! `build.rs`), so it works offline. "Try it out" sends the key the console
//! signed in with (this tab's session storage). A build made without
//! setup's npm step serves the plain list of operations instead.

use axum::extract::Path;
use axum::response::Response;

#[cfg(swagger_ui)]
use super::assets::{serve, Asset};

/// Scripts, styles and requests from this origin only.
#[cfg(swagger_ui)]
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
    base-uri 'none'; form-action 'none'";

#[cfg(swagger_ui)]
const FILES: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../../assets/apidocs/index.html"),
    },
    Asset {
        name: "reference.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/apidocs/reference.js"),
    },
    Asset {
        name: "reference.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../assets/apidocs/reference.css"),
    },
    Asset {
        name: "swagger-ui-bundle.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!(
            "../../assets/apidocs/node_modules/swagger-ui-dist/swagger-ui-bundle.js"
        ),
    },
    Asset {
        name: "swagger-ui.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../assets/apidocs/node_modules/swagger-ui-dist/swagger-ui.css"),
    },
];

/// `GET /docs`: the reference page.
pub async fn page() -> Response {
    #[cfg(swagger_ui)]
    return serve(FILES, "index.html", CSP);
    #[cfg(not(swagger_ui))]
    return axum::response::IntoResponse::into_response(super::system::docs().await);
}

/// `GET /docs/{name}`: one of the page's files (404 for any other name).
pub async fn asset(Path(name): Path<String>) -> Response {
    #[cfg(swagger_ui)]
    return serve(FILES, &name, CSP);
    #[cfg(not(swagger_ui))]
    {
        let _ = name;
        axum::response::IntoResponse::into_response(crate::error::Error::new(
            mediagen_core::ErrorCode::RouteNotFound,
        ))
    }
}
