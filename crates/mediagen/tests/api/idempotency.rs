use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn post(app: &TestApp, key: &str, idem: &str, body: Value) -> reqwest::Response {
    post_to(app, "/v1/test-jobs", key, idem, body).await
}

async fn retries_replay_the_first_response(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(100, "write").await;
    let body = json!({"ms": 0, "units": 7, "output": "once"});

    let first = post(&app, &key, "order-1", body.clone()).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first: Value = first.json().await.unwrap();

    let again = post(&app, &key, "order-1", body.clone()).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);

    let jobs: Value = app.get("/v1/jobs", &key).await.json().await.unwrap();
    assert_eq!(jobs["pagination"]["total"], 1, "no second job");
    let account = app.account_view(&key).await;
    assert_eq!(account["credits"]["balance"], 93, "charged once");
    assert_eq!(account["credits"]["used"], 7);

    // Same key, different body.
    let r = post(&app, &key, "order-1", json!({"ms": 0, "units": 8})).await;
    assert_error(r, 422, "idempotency_key_reused").await;

    // Keys are scoped per account.
    let (_, other) = app.account(100, "write").await;
    let r = post(&app, &other, "order-1", body.clone()).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("idempotent-replayed").is_none());

    // Errors below 500 are replayed too: a 402 stays a 402.
    let (_, poor) = app.account(1, "write").await;
    let r = post(&app, &poor, "big", json!({"units": 50})).await;
    let first_error = assert_error(r, 402, "insufficient_credits").await;
    let r = post(&app, &poor, "big", json!({"units": 50})).await;
    assert_eq!(r.status(), 402);
    assert_eq!(r.headers()["idempotent-replayed"], "true");
    // The replay is the first response, down to its request id.
    assert_eq!(r.json::<Value>().await.unwrap(), first_error);

    // A queued job's replay points at the job, as the first answer did.
    let queued = |idem: &'static str| {
        app.client
            .post(format!("{}/v1/test-jobs", app.addr))
            .bearer_auth(&key)
            .header("idempotency-key", idem)
            .header("prefer", "respond-async")
            .json(&json!({"ms": 0, "output": "later"}))
            .send()
    };
    let first = queued("async-1").await.unwrap();
    assert_eq!(first.status(), 202);
    let location = first.headers()["location"].clone();
    let replay = queued("async-1").await.unwrap();
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.headers()["location"], location);

    // Bad keys are refused.
    let r = post(&app, &key, &"k".repeat(300), body).await;
    let b = assert_error(r, 400, "invalid_parameter").await;
    assert_eq!(b["error"]["details"]["parameter"], "Idempotency-Key");
}

async fn concurrent_duplicates_create_one_job(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1000, "write").await;
    let body = json!({"ms": 300, "units": 10});
    let (a, b) = tokio::join!(
        post(&app, &key, "dup", body.clone()),
        post(&app, &key, "dup", body.clone())
    );
    let statuses = [a.status().as_u16(), b.status().as_u16()];
    assert!(statuses.contains(&200), "{statuses:?}");
    // The loser is told to retry (409) or got the replay.
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );
    let jobs: Value = app.get("/v1/jobs", &key).await.json().await.unwrap();
    assert_eq!(jobs["pagination"]["total"], 1);
    assert_eq!(app.account_view(&key).await["credits"]["used"], 10);
}

/// `POST path` with an `Idempotency-Key`.
async fn post_to(
    app: &TestApp,
    path: &str,
    key: &str,
    idem: &str,
    body: Value,
) -> reqwest::Response {
    app.client
        .post(format!("{}{path}", app.addr))
        .bearer_auth(key)
        .header("idempotency-key", idem)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// A replay is authorised like a new request (a read key gets 403, not the
/// first answer), and a created key's secret is never kept for replays.
async fn replays_are_authorised_and_never_hold_secrets(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let read = app.key("read").await;
    let body = json!({"level": "admin", "name": "ci"});
    let r = post_to(&app, "/v1/keys", &app.admin_key, "k-1", body.clone()).await;
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    let (id, secret) = (
        created["id"].as_str().unwrap().to_owned(),
        created["key"].as_str().unwrap().to_owned(),
    );
    let r = post_to(&app, "/v1/keys", &read, "k-1", body.clone()).await;
    assert_error(r, 403, "insufficient_permissions").await;
    // The operator account's routes alike.
    let account = app.account(0, "read").await.0;
    let path = format!("/v1/accounts/{account}/keys");
    let r = post_to(
        &app,
        &path,
        &app.admin_key,
        "k-2",
        json!({"level": "admin"}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let r = post_to(&app, &path, &read, "k-2", json!({"level": "admin"})).await;
    assert_error(r, 403, "insufficient_permissions").await;
    // The creator's own retry learns which key it made, not its secret.
    let r = post_to(&app, "/v1/keys", &app.admin_key, "k-1", body).await;
    let e = assert_error(r, 409, "resource_already_exists").await;
    assert_eq!(e["error"]["details"]["keyId"], id.as_str());
    assert!(!e.to_string().contains(&secret));
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(app.database_url()).await.unwrap();
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT response_body FROM idempotency_keys WHERE response_body IS NOT NULL",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|b| !b.contains("mg_")), "{stored:?}");
}

/// Different requests are never taken for the same one: uploads are told
/// apart by every byte, JSON by its content whatever its Content-Type says.
async fn fingerprints_cover_the_whole_request(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = app.key("write").await;
    let upload = |bytes: Vec<u8>| {
        app.client
            .post(format!("{}/v1/files", app.addr))
            .bearer_auth(&key)
            .header("idempotency-key", "up-1")
            .multipart(crate::helpers::form(vec![("file", bytes, "a.wav")], &[]))
            .send()
    };
    let first = crate::helpers::silent_wav(8000, 8000);
    let mut second = first.clone();
    second[100] = 0x10; // same size, other sound
    let r = upload(first.clone()).await.unwrap();
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.unwrap();
    assert_error(upload(second).await.unwrap(), 422, "idempotency_key_reused").await;
    let again: Value = upload(first).await.unwrap().json().await.unwrap();
    assert_eq!(again["id"], created["id"], "the same bytes replay");

    for content_type in ["Application/JSON", "application/vnd.test+json"] {
        let send = |text: &'static str| {
            app.client
                .post(format!("{}/v1/test-jobs", app.addr))
                .bearer_auth(&key)
                .header("idempotency-key", format!("json-{content_type}"))
                .header("content-type", content_type)
                .body(json!({ "output": text }).to_string())
                .send()
        };
        let _ = send("Transfer one dollar").await.unwrap();
        let r = send("Transfer two dollar").await.unwrap();
        assert_error(r, 422, "idempotency_key_reused").await;
    }
}

/// Keys are remembered for `idempotency_ttl_seconds` (24 h by default):
/// afterwards the same key starts a new request, even a different one, and
/// the job it made no longer answers to it.
async fn keys_are_forgotten_after_their_time(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.idempotency_ttl_seconds = 1.0).await;
    let (_, key) = app.account(100, "write").await;
    let body = json!({"ms": 0, "units": 3, "output": "first"});
    let first: Value = post(&app, &key, "monthly", body.clone())
        .await
        .json()
        .await
        .unwrap();
    let again = post(&app, &key, "monthly", body.clone()).await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // A different body is no longer a reuse of the key.
    let other = post(&app, &key, "monthly", json!({"ms": 0, "units": 4})).await;
    assert_eq!(other.status(), 200);
    assert!(other.headers().get("idempotent-replayed").is_none());
    let other: Value = other.json().await.unwrap();
    assert_ne!(other["id"], first["id"]);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // The same body again makes a new job, charged again.
    let third = post(&app, &key, "monthly", body).await;
    assert_eq!(third.status(), 200);
    assert!(third.headers().get("idempotent-replayed").is_none());
    let third: Value = third.json().await.unwrap();
    assert_ne!(third["id"], first["id"]);
    let account = app.account_view(&key).await;
    assert_eq!(account["credits"]["used"], 10);
}

crate::on_both_backends!(
    keys_are_forgotten_after_their_time,
    fingerprints_cover_the_whole_request,
    retries_replay_the_first_response,
    concurrent_duplicates_create_one_job,
    replays_are_authorised_and_never_hold_secrets
);
