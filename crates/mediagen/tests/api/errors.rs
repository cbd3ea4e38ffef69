use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_error, Backend, TestApp};

async fn every_error_path_has_the_error_shape(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.json_body_limit = 1024).await;
    let key = &app.admin_key;

    assert_error(
        app.get("/v1/no-such-thing", key).await,
        404,
        "route_not_found",
    )
    .await;
    assert_error(
        app.request(Method::PUT, "/v1/jobs", Some(key), None).await,
        405,
        "method_not_allowed",
    )
    .await;
    assert_error(
        app.get("/v1/jobs/job_doesnotexist", key).await,
        404,
        "resource_not_found",
    )
    .await;

    let url = format!("{}/v1/test-jobs", app.addr);
    let raw = |body: &'static str, ctype: &'static str| {
        app.client
            .post(&url)
            .bearer_auth(key)
            .header("content-type", ctype)
            .body(body)
            .send()
    };
    assert_error(
        raw("{\"ms\": ", "application/json").await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        raw("ms=1", "application/x-www-form-urlencoded")
            .await
            .unwrap(),
        415,
        "unsupported_media_type",
    )
    .await;
    let big = format!("{{\"output\": \"{}\"}}", "x".repeat(4096));
    let r = app
        .client
        .post(&url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    let body = assert_error(r, 413, "payload_too_large").await;
    assert_eq!(body["error"]["details"]["limit"], 1024);

    let body = assert_error(
        app.test_job(key, json!({"ms": "soon"})).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["details"]["parameter"], "ms");
    let body = assert_error(
        app.test_job(key, json!({"colour": "red"})).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("colour"));
    let body = assert_error(
        app.post("/v1/accounts", key, json!({})).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["details"]["parameter"], "name");

    // A client-chosen request id is echoed back.
    let r = app
        .client
        .get(format!("{}/v1/jobs/job_x", app.addr))
        .bearer_auth(key)
        .header("x-request-id", "trace-42")
        .send()
        .await
        .unwrap();
    let body = assert_error(r, 404, "resource_not_found").await;
    assert_eq!(body["error"]["request_id"], "trace-42");
    // Successful responses carry one too.
    assert!(app
        .get("/v1/account", key)
        .await
        .headers()
        .contains_key("x-request-id"));
}

async fn failed_jobs_do_not_leak_internals(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = assert_error(
        app.test_job(&app.admin_key, json!({"ms": 0, "fail": "panic"}))
            .await,
        500,
        "job_failed",
    )
    .await;
    assert_eq!(body["error"]["details"]["error"]["code"], "internal_error");
    assert!(
        !body.to_string().contains("panicked"),
        "panic text must not reach the client: {body}"
    );
}

/// Input errors are known at the request: strict booleans, one JSON value
/// per body, bounded credit amounts, media without the stream a capability
/// needs, and 401s that name their scheme.
async fn input_errors_are_4xx_at_the_request(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1_000, "write").await;
    let wav = crate::helpers::silent_wav(16_000, 16_000);
    for value in ["1", "yes", "{}", "[1]", "-5", "TRUE"] {
        let r = app
            .post_form(
                "/v1/speech-to-text",
                &key,
                crate::helpers::form(vec![("file", wav.clone(), "a.wav")], &[("dryRun", value)]),
            )
            .await;
        let b = assert_error(r, 400, "invalid_parameter").await;
        assert_eq!(b["error"]["details"]["parameter"], "dryRun", "{value}");
    }
    let jobs: serde_json::Value = app.get("/v1/jobs", &key).await.json().await.unwrap();
    assert_eq!(jobs["pagination"]["total"], 0, "no job was made");

    let r = app
        .client
        .post(format!("{}/v1/keys", app.addr))
        .bearer_auth(&app.admin_key)
        .header("content-type", "application/json")
        .body(r#"{"level":"read"}{"level":"admin"} junk"#)
        .send()
        .await
        .unwrap();
    assert_error(r, 400, "invalid_json").await;

    let (account, _) = app.account(0, "read").await;
    let r = app
        .post(
            &format!("/v1/accounts/{account}/credits"),
            &app.admin_key,
            json!({"amount": i64::MAX}),
        )
        .await;
    let b = assert_error(r, 400, "invalid_parameter").await;
    assert_eq!(b["error"]["details"]["parameter"], "amount");

    // A file without a picture to trimming, without sound to transcription.
    let r = app
        .post_form(
            "/v1/video/trim",
            &key,
            crate::helpers::form(vec![("file", wav, "a.wav")], &[("ranges", "[]")]),
        )
        .await;
    assert_error(r, 422, "unprocessable_entity").await;

    // Ids are strings; anything else names the parameter.
    for id in [json!(null), json!(123), json!({"id": "file_x"})] {
        let r = app
            .post("/v1/speech-to-text", &key, json!({"fileId": id}))
            .await;
        let b = assert_error(r, 400, "invalid_parameter").await;
        assert_eq!(b["error"]["details"]["parameter"], "fileId");
    }
    // A signed route's bad query gets the error envelope too.
    let r = app
        .client
        .get(format!(
            "{}/blobs/jobs/x/y.mp3?expires=soon&signature=zz",
            app.addr
        ))
        .send()
        .await
        .unwrap();
    let b = assert_error(r, 400, "invalid_parameter").await;
    assert_eq!(b["error"]["details"]["parameter"], "expires");

    let r = app.get("/v1/account", "mg_wrong").await;
    assert_eq!(r.headers()["www-authenticate"], "Bearer realm=\"mediagen\"");
    assert_error(r, 401, "invalid_api_key").await;
}

crate::on_both_backends!(
    input_errors_are_4xx_at_the_request,
    every_error_path_has_the_error_shape,
    failed_jobs_do_not_leak_internals
);
