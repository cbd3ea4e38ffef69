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

/// The console's files are served with their types under a policy that
/// allows this origin only; any other name under `/console/` is a 404 in
/// the API's error shape (the browser flows: scripts/console-test.sh).
#[tokio::test]
async fn the_console_is_served_from_the_binary() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let get = |path: &'static str| app.client.get(format!("{}{path}", app.addr)).send();
    for (path, content_type, marker) in [
        ("/console", "text/html", "/console/console.js"),
        ("/console/console.js", "text/javascript", "sessionStorage"),
        ("/console/console.css", "text/css", "--accent"),
    ] {
        let r = get(path).await.unwrap();
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
        assert!(r.text().await.unwrap().contains(marker), "{path}");
    }
    for path in [
        "/console/nothing.js",
        "/console/..%2Fassets%2Fdocs.html",
        "/console/index.html.bak",
    ] {
        let r = get(path).await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "route_not_found", "{path}");
    }
}
