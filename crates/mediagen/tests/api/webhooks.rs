//! Webhooks to the Standard Webhooks specification: a receiver in the test
//! records every delivery, and the `standardwebhooks` package (PyPI,
//! unmodified) verifies each signature. A retry after a 500 keeps the id,
//! a server restart between attempts loses no delivery, and a private
//! address is refused without the setting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};
use crate::sdk::run_python;

/// What the receiver saw: each request's headers and body.
#[derive(Default)]
struct Received {
    requests: Vec<(HeaderMap, String)>,
    /// Answer 500 to this many requests first.
    fail_first: usize,
}

/// A receiver on 127.0.0.1; its URL.
async fn receiver(seen: Arc<Mutex<Received>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let seen = seen.clone();
            async move {
                let mut seen = seen.lock().unwrap();
                seen.requests.push((headers, body));
                if seen.requests.len() <= seen.fail_first {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}/hook")
}

/// Verifies each `(headers, body)` with the `standardwebhooks` package;
/// prints the verified payloads.
const VERIFY: &str = r#"
from standardwebhooks import Webhook

secret, path = sys.argv[1:3]
hook = Webhook(secret)
out = []
for r in json.load(open(path)):
    out.append(hook.verify(r["body"], r["headers"]))
try:
    hook.verify(r["body"] + " ", r["headers"])
    out.append("a changed body verified")
except Exception as e:
    out.append(type(e).__name__)
print(json.dumps(out))
"#;

async fn deliveries(app: &TestApp, key: &str, endpoint: &str) -> Vec<Value> {
    let page: Value = app
        .get(&format!("/v1/webhooks/{endpoint}/deliveries"), key)
        .await
        .json()
        .await
        .unwrap();
    page["data"].as_array().unwrap().clone()
}

/// Waits until the receiver has seen `n` requests.
async fn seen_at_least(seen: &Arc<Mutex<Received>>, n: usize, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    while seen.lock().unwrap().requests.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {n} deliveries arrived",
            seen.lock().unwrap().requests.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn job_events_are_signed_retried_and_survive_a_restart(backend: Backend) {
    let seen = Arc::new(Mutex::new(Received {
        fail_first: 1,
        ..Received::default()
    }));
    let url = receiver(seen.clone()).await;
    let mut app = TestApp::spawn_with(backend, |c| c.webhook_allow_private = true).await;
    let (_, admin) = app.account(1_000, "admin").await;
    let (_, write) = app.account(1_000, "write").await;

    // Admin keys manage endpoints; the secret is shown once.
    let r = app.post("/v1/webhooks", &write, json!({"url": url})).await;
    assert_error(r, 403, "insufficient_permissions").await;
    let r = app.post("/v1/webhooks", &admin, json!({"url": url})).await;
    assert_eq!(r.status(), 201);
    let endpoint: Value = r.json().await.unwrap();
    let secret = endpoint["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{endpoint}");
    let id = endpoint["id"].as_str().unwrap().to_owned();
    let listed: Value = app.get("/v1/webhooks", &admin).await.json().await.unwrap();
    assert_eq!(listed["data"][0]["id"], id.as_str());
    assert!(listed["data"][0]["secret"].is_null(), "{listed}");
    let r = app
        .post(
            "/v1/webhooks",
            &admin,
            json!({"url": url, "events": ["job.started"]}),
        )
        .await;
    assert_error(r, 400, "invalid_parameter").await;

    // A job completes: the first attempt gets a 500.
    let done: Value = app
        .test_job(&admin, json!({"output": "done"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    seen_at_least(&seen, 1, Duration::from_secs(10)).await;
    let log = deliveries(&app, &admin, &id).await;
    assert_eq!(log.len(), 1, "{log:?}");
    // The failed attempt is recorded before the restart.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while deliveries(&app, &admin, &id).await[0]["attempts"] != 1 {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = deliveries(&app, &admin, &id).await;
    assert_eq!(
        (&log[0]["status"], &log[0]["lastStatus"]),
        (&json!("pending"), &json!(500)),
        "{log:?}"
    );

    // The server restarts between the attempts; the retry comes from the
    // new process (within 30 s of the first), with the same id.
    app.restart().await;
    seen_at_least(&seen, 2, Duration::from_secs(30)).await;

    // A failed job and a cancelled one are delivered too.
    let failed = app
        .test_job(&admin, json!({"fail": "refuse", "units": 1}))
        .await;
    assert!(failed.status().is_client_error(), "{}", failed.status());
    let slow = app.test_job_async(&admin, json!({"ms": 30_000})).await;
    let r = app.delete(&format!("/v1/jobs/{slow}"), &admin).await;
    assert_eq!(r.status(), 200);
    seen_at_least(&seen, 4, Duration::from_secs(15)).await;

    let requests: Vec<(HeaderMap, String)> = seen.lock().unwrap().requests.clone();
    let header = |h: &HeaderMap, name: &str| h[name].to_str().unwrap().to_owned();
    assert_eq!(
        header(&requests[0].0, "webhook-id"),
        header(&requests[1].0, "webhook-id")
    );
    assert_eq!(requests[0].1, requests[1].1, "a retry sends the same body");
    let dump: Vec<Value> = requests
        .iter()
        .map(|(h, body)| {
            let headers: serde_json::Map<String, Value> =
                ["webhook-id", "webhook-timestamp", "webhook-signature"]
                    .iter()
                    .map(|n| ((*n).to_owned(), json!(header(h, n))))
                    .collect();
            json!({"headers": headers, "body": body})
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("requests.json");
    std::fs::write(&path, serde_json::to_string(&dump).unwrap()).unwrap();
    let verified = run_python(
        VERIFY,
        dir.path(),
        vec![secret.clone(), path.to_str().unwrap().to_owned()],
    )
    .await;
    let verified = verified.as_array().unwrap();
    assert_eq!(verified.last().unwrap(), "WebhookVerificationError");
    let mut events: Vec<&str> = verified[..verified.len() - 1]
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    events.sort_unstable();
    assert_eq!(
        events,
        [
            "job.cancelled",
            "job.completed",
            "job.completed",
            "job.failed"
        ]
    );
    // The body is the job as GET /v1/jobs/{id} shows it.
    let first = &verified[0];
    assert_eq!(first["data"]["id"], done["id"]);
    assert_eq!(first["data"]["status"], "completed", "{first}");
    let url = first["data"]["result"]["textUrl"].as_str().unwrap();
    assert!(url.contains(done["id"].as_str().unwrap()), "{first}");
    assert!(first["timestamp"].as_str().unwrap().ends_with('Z'));

    // The log shows each delivery; one can be sent again, same id.
    let log = deliveries(&app, &admin, &id).await;
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log.iter().all(|d| d["status"] == "delivered"), "{log:?}");
    let again = log.iter().find(|d| d["event"] == "job.completed").unwrap();
    let message = again["id"].as_str().unwrap();
    assert_eq!(message, header(&requests[0].0, "webhook-id"));
    let r = app
        .post(
            &format!("/v1/webhooks/{id}/deliveries/{message}/redeliver"),
            &admin,
            json!({}),
        )
        .await;
    assert_eq!(r.status(), 202);
    seen_at_least(&seen, 5, Duration::from_secs(10)).await;
    let last = seen.lock().unwrap().requests[4].clone();
    assert_eq!(header(&last.0, "webhook-id"), message);

    // Another account sees none of it.
    let (_, other) = app.account(1_000, "admin").await;
    for path in [
        format!("/v1/webhooks/{id}"),
        format!("/v1/webhooks/{id}/deliveries"),
    ] {
        assert_error(app.get(&path, &other).await, 404, "resource_not_found").await;
    }
    let r = app
        .post(
            &format!("/v1/webhooks/{id}/deliveries/{message}/redeliver"),
            &other,
            json!({}),
        )
        .await;
    assert_error(r, 404, "resource_not_found").await;
    assert_error(
        app.delete(&format!("/v1/webhooks/{id}"), &other).await,
        404,
        "resource_not_found",
    )
    .await;
    let r = app.delete(&format!("/v1/webhooks/{id}"), &admin).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_refused_without_the_setting() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, admin) = app.account(1_000, "admin").await;
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://10.0.0.5/hook",
    ] {
        let r = app.post("/v1/webhooks", &admin, json!({"url": url})).await;
        let body = assert_error(r, 422, "unprocessable_entity").await;
        assert_eq!(body["error"]["details"]["parameter"], "url", "{url}");
    }
    for url in ["ftp://example.com/hook", "not a url"] {
        let r = app.post("/v1/webhooks", &admin, json!({"url": url})).await;
        assert_error(r, 400, "invalid_parameter").await;
    }
    let credentials = json!({"url": "http://user:pw@example.com/"});
    let r = app.post("/v1/webhooks", &admin, credentials).await;
    assert_error(r, 422, "unprocessable_entity").await;
    let r = app
        .post(
            "/v1/webhooks",
            &admin,
            json!({"url": "https://hooks.example.com/mediagen", "events": ["job.failed"]}),
        )
        .await;
    assert_eq!(r.status(), 201);
}

crate::on_both_backends!(job_events_are_signed_retried_and_survive_a_restart);
