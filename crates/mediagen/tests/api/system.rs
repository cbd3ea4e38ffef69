use serde_json::{json, Value};

use crate::helpers::{Backend, TestApp};

async fn health_metrics_and_docs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let get = |path: &'static str| app.client.get(format!("{}{path}", app.addr)).send();

    assert_eq!(
        get("/healthz")
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap(),
        json!({"status": "ok"})
    );
    assert_eq!(get("/readyz").await.unwrap().status(), 200);

    app.test_job(&app.admin_key, json!({"ms": 0})).await;
    let metrics = app
        .get("/metrics", &app.admin_key)
        .await
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("mediagen_http_requests_total{method=\"POST\",route=\"/v1/test-jobs\",status=\"200\"} 1"), "{metrics}");
    assert!(
        metrics.contains("mediagen_jobs{kind=\"test.sleep\",status=\"completed\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("mediagen_queue_depth 0"));
    assert!(metrics.contains("mediagen_http_request_duration_seconds_bucket"));

    let doc: Value = get("/v1/openapi.json").await.unwrap().json().await.unwrap();
    for path in [
        "/v1/account",
        "/v1/jobs",
        "/v1/jobs/{id}",
        "/v1/keys",
        "/v1/files",
        "/v1/files/{id}",
        "/v1/speech-to-text",
        "/v1/video/trim",
        "/v1/sound-generation",
        "/v1/sound-generation/vocabulary",
        "/v1/image-generation",
        "/v1/avatars",
        "/v1/avatars/{id}",
        "/v1/avatar-expansion",
        "/v1/text-to-speech",
        "/v1/text-to-speech/stream",
        "/v1/voices",
        "/v1/voices/{id}",
        "/v1/voice-changer",
        "/v1/dubbing",
        "/v1/dubbing/languages",
        "/v1/dubbing/{jobId}/segments",
        "/v1/models",
        "/v1/keys/{id}",
        "/v1/accounts",
        "/blobs/{key}",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
    assert!(
        doc["paths"]["/v1/test-jobs"].is_null(),
        "the test kind is not public"
    );
    assert_eq!(
        doc["paths"]["/v1/jobs/{id}"]["delete"]["security"][0]["bearer"][0],
        "write"
    );
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());

    // The reference: Swagger UI built into the binary (setup installs it
    // before every build `make test` makes), from this origin only.
    let docs = get("/docs").await.unwrap();
    assert!(docs.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let csp = docs.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self'")
            && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(docs.headers()["x-content-type-options"], "nosniff");
    let page = docs.text().await.unwrap();
    assert!(page.contains("/docs/swagger-ui-bundle.js"), "{page}");
    for (file, marker) in [
        ("/docs/reference.js", "/v1/openapi.json"),
        ("/docs/swagger-ui-bundle.js", "SwaggerUIBundle"),
        ("/docs/swagger-ui.css", ".swagger-ui"),
    ] {
        let r = get(file).await.unwrap();
        assert_eq!(r.status(), 200, "{file}");
        assert!(r.text().await.unwrap().contains(marker), "{file}");
    }
    assert_eq!(get("/docs/package.json").await.unwrap().status(), 404);

    // Security headers: on every answer, and no caching of what a key read.
    let account = app.get("/v1/account", &app.admin_key).await;
    assert_eq!(account.headers()["cache-control"], "no-store");
    assert_eq!(account.headers()["referrer-policy"], "no-referrer");
    assert_eq!(account.headers()["x-content-type-options"], "nosniff");
    let refused = app.get("/v1/account", "mg_bad").await;
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["cache-control"], "no-store");
    let health = get("/healthz").await.unwrap();
    assert_eq!(health.headers()["referrer-policy"], "no-referrer");
    assert!(health.headers().get("cache-control").is_none());
}

crate::on_both_backends!(health_metrics_and_docs);

/// The web app's page and its built files are served with their types
/// under a policy that allows this origin only; a page of the app is its
/// `index.html`, a missing built file a 404 in the API's error shape, and
/// the first console's address leads to the app (the browser flows:
/// scripts/console-test.sh).
#[tokio::test]
async fn the_console_is_served_from_the_binary() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: String| client.get(format!("{}{path}", app.addr)).send();
    let index = get("/app/".into()).await.unwrap();
    let page = index.text().await.unwrap();
    // The built script and style sheet the page names.
    let built: Vec<String> = page
        .split('"')
        .filter(|s| s.starts_with("/app/assets/"))
        .map(str::to_owned)
        .collect();
    assert!(
        built.iter().any(|p| p.ends_with(".js")) && built.iter().any(|p| p.ends_with(".css")),
        "{page}"
    );
    let mut checked = vec![
        ("/app".to_owned(), "text/html"),
        ("/app/voices".to_owned(), "text/html"),
        ("/app/favicon.svg".to_owned(), "image/svg+xml"),
    ];
    for path in built {
        let kind = if path.ends_with(".js") {
            "text/javascript"
        } else {
            "text/css"
        };
        checked.push((path, kind));
    }
    for (path, content_type) in checked {
        let r = get(path.clone()).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let headers = r.headers().clone();
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with(content_type),
            "{path}: {:?}",
            headers["content-type"]
        );
        let csp = headers["content-security-policy"].to_str().unwrap();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        if path.starts_with("/app/assets/") {
            assert!(headers["cache-control"]
                .to_str()
                .unwrap()
                .contains("immutable"));
        }
    }
    for path in ["/app/assets/nothing.js", "/app/assets/..%2F..%2Findex.html"] {
        let r = get(path.into()).await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "route_not_found", "{path}");
    }
    for path in ["/console", "/console/console.js"] {
        let r = get(path.into()).await.unwrap();
        assert_eq!(r.status(), 308, "{path}");
        assert_eq!(r.headers()["location"], "/app/", "{path}");
    }
}
