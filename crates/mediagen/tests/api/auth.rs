use mediagen_core::keys::ApiKeySecret;
use mediagen_core::time::now_ms;
use mediagen_core::Level;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn with_header(app: &TestApp, value: &str) -> reqwest::Response {
    app.client
        .get(format!("{}/v1/account", app.addr))
        .header("authorization", value)
        .send()
        .await
        .unwrap()
}

async fn each_authentication_outcome(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_eq!(app.get("/v1/account", &app.admin_key).await.status(), 200);

    let none = app.request(Method::GET, "/v1/account", None, None).await;
    assert_error(none, 401, "missing_api_key").await;

    let basic = assert_error(
        with_header(&app, "Basic dXNlcjpwYXNz").await,
        401,
        "invalid_api_key",
    )
    .await;
    assert_eq!(basic["error"]["details"]["reason"], "malformed_header");
    assert_error(with_header(&app, "Bearer").await, 401, "invalid_api_key").await;
    assert_error(
        with_header(&app, "Bearer short-key").await,
        401,
        "invalid_api_key",
    )
    .await;

    // Well-formed (valid checksum) but never issued.
    let stranger = ApiKeySecret::generate();
    let body = assert_error(
        app.get("/v1/account", stranger.expose()).await,
        401,
        "invalid_api_key",
    )
    .await;
    assert_eq!(body["error"]["details"]["reason"], "unknown_key");

    // A typo in a real key fails the checksum.
    let mut typo = app.admin_key.clone().into_bytes();
    typo[30] = if typo[30] == b'x' { b'y' } else { b'x' };
    assert_error(
        app.get("/v1/account", &String::from_utf8(typo).unwrap())
            .await,
        401,
        "invalid_api_key",
    )
    .await;

    // Expired.
    let account = app.state.db.operator_account().await.unwrap().unwrap();
    let (_, expired) = app
        .state
        .db
        .create_key(&account.id, "old", Level::Admin, Some(now_ms() - 1000))
        .await
        .unwrap();
    let body = assert_error(
        app.get("/v1/account", expired.expose()).await,
        401,
        "invalid_api_key",
    )
    .await;
    assert_eq!(body["error"]["details"]["reason"], "expired");

    // Revoked through the API.
    let r = app
        .post(
            "/v1/keys",
            &app.admin_key,
            json!({"level": "read", "name": "to revoke"}),
        )
        .await;
    let created: Value = r.json().await.unwrap();
    let key = created["key"].as_str().unwrap();
    assert_eq!(app.get("/v1/account", key).await.status(), 200);
    let id = created["id"].as_str().unwrap();
    let revoked: Value = app
        .delete(&format!("/v1/keys/{id}"), &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(revoked["status"], "revoked");
    let body = assert_error(app.get("/v1/account", key).await, 401, "invalid_api_key").await;
    assert_eq!(body["error"]["details"]["reason"], "revoked");
    // Revocation is final: scheduling it later does not bring the key back.
    let later = mediagen_core::time::iso8601(now_ms() + 3_600_000);
    let again: Value = app
        .delete(&format!("/v1/keys/{id}?revokeAt={later}"), &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["status"], "revoked", "{again}");
    assert_error(app.get("/v1/account", key).await, 401, "invalid_api_key").await;
}

async fn levels_are_enforced(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let read = app.key("read").await;
    let write = app.key("write").await;

    // read: GETs only.
    assert_eq!(app.get("/v1/jobs", &read).await.status(), 200);
    let body = assert_error(
        app.test_job(&read, json!({"ms": 0})).await,
        403,
        "insufficient_permissions",
    )
    .await;
    assert_eq!(body["error"]["details"]["required"], "write");
    assert_eq!(body["error"]["details"]["granted"], "read");
    assert_error(
        app.delete("/v1/jobs/job_x", &read).await,
        403,
        "insufficient_permissions",
    )
    .await;

    // write: jobs, but not keys.
    assert_eq!(app.test_job(&write, json!({"ms": 0})).await.status(), 200);
    assert_error(
        app.post("/v1/keys", &write, json!({"level": "read"})).await,
        403,
        "insufficient_permissions",
    )
    .await;
    assert_error(
        app.get("/v1/keys", &write).await,
        403,
        "insufficient_permissions",
    )
    .await;

    // admin of a customer account: its keys, but not accounts or credits.
    let (customer, customer_admin) = app.account(100, "admin").await;
    assert_eq!(
        app.post("/v1/keys", &customer_admin, json!({"level": "write"}))
            .await
            .status(),
        201
    );
    for (method, path) in [
        (Method::GET, "/v1/accounts".to_owned()),
        (Method::POST, format!("/v1/accounts/{customer}/credits")),
        (Method::GET, format!("/v1/accounts/{customer}")),
    ] {
        let r = app
            .request(
                method,
                &path,
                Some(&customer_admin),
                Some(json!({"amount": 5})),
            )
            .await;
        let body = assert_error(r, 403, "insufficient_permissions").await;
        assert_eq!(body["error"]["details"]["required"], "operator");
    }
    // The operator can.
    let r = app
        .post(
            &format!("/v1/accounts/{customer}/credits"),
            &app.admin_key,
            json!({"amount": 5}),
        )
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["balance"], 105);
}

async fn key_rotation_and_listing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let r = app
        .post(
            "/v1/keys",
            &app.admin_key,
            json!({"level": "write", "name": "production"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let new: Value = r.json().await.unwrap();
    let secret = new["key"].as_str().unwrap();
    assert_eq!(secret.len(), 64);
    assert!(secret.starts_with("mg_live_"));
    assert_eq!(new["prefix"], &secret[..12]);

    let list: Value = app
        .get("/v1/keys", &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["pagination"]["total"], 2);
    assert!(
        !list.to_string().contains(secret),
        "secrets are never listed"
    );

    // Scheduled revocation keeps the key working until then.
    let id = new["id"].as_str().unwrap();
    let later = mediagen_core::time::iso8601(now_ms() + 3_600_000);
    let r = app
        .delete(&format!("/v1/keys/{id}?revokeAt={later}"), &app.admin_key)
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "active");
    assert_eq!(app.get("/v1/account", secret).await.status(), 200);
    // A schedule can be brought forward, never pushed back.
    let much_later = mediagen_core::time::iso8601(now_ms() + 7_200_000);
    let pushed: Value = app
        .delete(
            &format!("/v1/keys/{id}?revokeAt={much_later}"),
            &app.admin_key,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(pushed["revokedAt"], later.as_str(), "{pushed}");
    let now: Value = app
        .delete(&format!("/v1/keys/{id}"), &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(now["status"], "revoked");
    assert_error(app.get("/v1/account", secret).await, 401, "invalid_api_key").await;

    // Bad input names the parameter.
    let body = assert_error(
        app.post("/v1/keys", &app.admin_key, json!({"level": "root"}))
            .await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["details"]["parameter"], "level");
    let r = app
        .post(
            "/v1/keys",
            &app.admin_key,
            json!({"level": "read", "expiresAt": "2001-01-01T00:00:00Z"}),
        )
        .await;
    // A well-formed time that cannot be used: 422, as for every check the
    // document's schema cannot state.
    let body = assert_error(r, 422, "unprocessable_entity").await;
    assert_eq!(body["error"]["details"]["parameter"], "expiresAt");
}

/// Every mounted route that needs more than a read key refuses one with
/// 403, even when the request replays an `Idempotency-Key` that a key of
/// the route's level used first: the level is checked before any replay,
/// on every family (`/v1`, OpenAI, ElevenLabs).
async fn every_route_checks_its_level_before_replay(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let read = app.key("read").await;
    let write = app.key("write").await;
    let send = |method: &str, path: &str, key: &str, idem: &str| {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let url = format!("{}{path}", app.addr);
        let mut req = app.client.request(method.clone(), url);
        req = if path.starts_with("/elevenlabs/") {
            req.header("xi-api-key", key)
        } else {
            req.bearer_auth(key)
        };
        if method == Method::POST || method == Method::PATCH {
            req = req.header("idempotency-key", idem).json(&json!({}));
        }
        req.send()
    };
    let routes = mediagen_server::app::route_levels(true);
    assert!(routes.iter().any(|(_, p, _)| p.starts_with("/elevenlabs/")));
    let mut checked = 0;
    for (i, (method, path, level)) in routes.iter().enumerate() {
        let path = path
            .replace("{voice_id}", "voice_x")
            .replace("{deliveryId}", "whd_x")
            .replace("{id}", "x");
        let idem = format!("walk-{i}");
        let first = match level {
            Level::Read => continue,
            Level::Write => &write,
            Level::Admin => &app.admin_key,
        };
        let _ = send(method, &path, first, &idem).await.unwrap();
        let r = send(method, &path, &read, &idem).await.unwrap();
        assert!(
            r.headers().get("idempotent-replayed").is_none(),
            "{method} {path} replayed to a read key"
        );
        assert_eq!(r.status(), 403, "{method} {path} with a read key");
        checked += 1;
    }
    assert!(checked > 30, "{checked} routes checked");
    // The probe's case: a write key's speech, then a read key's replay.
    let voice = app.any_voice(&write).await;
    let path = format!("/elevenlabs/v1/text-to-speech/{voice}");
    let speak = |key: &str| {
        app.client
            .post(format!("{}{path}", app.addr))
            .header("xi-api-key", key)
            .header("idempotency-key", "k1")
            .json(&json!({"text": "Hi."}))
            .send()
    };
    assert_eq!(speak(&write).await.unwrap().status(), 200);
    let r = speak(&read).await.unwrap();
    assert!(r.headers().get("idempotent-replayed").is_none());
    assert_error(r, 403, "insufficient_permissions").await;
}

crate::on_both_backends!(
    each_authentication_outcome,
    levels_are_enforced,
    every_route_checks_its_level_before_replay,
    key_rotation_and_listing
);
