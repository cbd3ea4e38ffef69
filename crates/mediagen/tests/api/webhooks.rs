//! Webhooks to the Standard Webhooks specification: a receiver in the test
//! records every delivery, and the `standardwebhooks` package (PyPI,
//! unmodified) verifies each signature. A retry after a 500 keeps the id,
//! a server restart between attempts loses no delivery, and a private
//! address is refused without the setting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, form, silent_wav, Backend, TestApp};
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
    let verified = verified(&secret, &requests).await;
    let mut events: Vec<&str> = verified
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

/// `(headers, body)` of the receiver's requests as VERIFY reads them.
fn dump(requests: &[(HeaderMap, String)]) -> String {
    let header = |h: &HeaderMap, name: &str| h[name].to_str().unwrap().to_owned();
    let items: Vec<Value> = requests
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
    serde_json::to_string(&items).unwrap()
}

/// The payloads of `requests` as `standardwebhooks` verified them with
/// `secret` (a changed body must fail).
async fn verified(secret: &str, requests: &[(HeaderMap, String)]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("requests.json");
    std::fs::write(&path, dump(requests)).unwrap();
    let out = run_python(
        VERIFY,
        dir.path(),
        vec![secret.to_owned(), path.to_str().unwrap().to_owned()],
    )
    .await;
    let mut out = out.as_array().unwrap().clone();
    assert_eq!(out.pop().unwrap(), "WebhookVerificationError");
    out
}

async fn request_secret(app: &TestApp, key: &str) -> String {
    let r: Value = app
        .get("/v1/webhooks/default/secret", key)
        .await
        .json()
        .await
        .unwrap();
    r["secret"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_s_own_webhook_url_hears_its_job() {
    let seen = Arc::new(Mutex::new(Received::default()));
    let url = receiver(seen.clone()).await;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.webhook_allow_private = true).await;
    let (_, admin) = app.account(10_000, "admin").await;
    let (_, write) = app.account(10_000, "write").await;
    let r = app.get("/v1/webhooks/default/secret", &write).await;
    assert_error(r, 403, "insufficient_permissions").await;
    let first_secret = request_secret(&app, &admin).await;
    assert!(first_secret.starts_with("whsec_"));
    assert_eq!(request_secret(&app, &admin).await, first_secret);
    // A fast voice: the jobs must finish within the synchronous wait on a
    // busy machine (the test is about the webhook, not the voice).
    let voice = app.first_voice(&admin, "language=en&engine=piper").await;

    // A job without a webhookUrl tells no one; one with it tells its URL.
    let quiet = json!({"text": "Nobody hears this.", "voiceId": voice});
    let r = app.post("/v1/text-to-speech", &admin, quiet).await;
    assert_eq!(r.status(), 200);
    let loud = json!({"text": "Hello hook.", "voiceId": voice, "webhookUrl": url});
    let tts: Value = app
        .post("/v1/text-to-speech", &admin, loud)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(tts["status"], "completed", "{tts}");
    // A media request: the URL as a form part.
    let stt = app
        .post_form(
            "/v1/speech-to-text",
            &admin,
            form(
                vec![("file", silent_wav(16_000, 16_000), "quiet.wav")],
                &[("webhookUrl", url.as_str())],
            ),
        )
        .await;
    assert_eq!(stt.status(), 200);
    let stt: Value = stt.json().await.unwrap();
    seen_at_least(&seen, 2, Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let requests = seen.lock().unwrap().requests.clone();
    assert_eq!(requests.len(), 2, "only the jobs that asked are told");
    let payloads = verified(&first_secret, &requests).await;
    let mut ids: Vec<&Value> = payloads.iter().map(|p| &p["data"]["id"]).collect();
    ids.sort_by_key(|v| v.to_string());
    let mut want = vec![&tts["id"], &stt["id"]];
    want.sort_by_key(|v| v.to_string());
    assert_eq!(ids, want);
    assert!(payloads.iter().all(|p| p["type"] == "job.completed"));
    // A request's URL is not an endpoint of the account.
    let listed: Value = app.get("/v1/webhooks", &admin).await.json().await.unwrap();
    assert_eq!(listed["pagination"]["total"], 0, "{listed}");

    // Rotated: later deliveries are signed with the new secret.
    let r: Value = app
        .post("/v1/webhooks/default/secret", &admin, json!({}))
        .await
        .json()
        .await
        .unwrap();
    let second_secret = r["secret"].as_str().unwrap().to_owned();
    assert_ne!(second_secret, first_secret);
    assert_eq!(request_secret(&app, &admin).await, second_secret);
    let body = json!({"prompt": "rain", "duration": 1, "webhookUrl": url});
    let sound: Value = app
        .post("/v1/sound-generation", &admin, body)
        .await
        .json()
        .await
        .unwrap();
    seen_at_least(&seen, 3, Duration::from_secs(15)).await;
    let last = seen.lock().unwrap().requests[2..].to_vec();
    let payloads = verified(&second_secret, &last).await;
    assert_eq!(payloads[0]["data"]["id"], sound["id"]);
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
    // A request's own webhookUrl: the same rules, before any job or hold.
    let before = app.account_view(&admin).await["credits"].clone();
    let voice = app.first_voice(&admin, "language=en").await;
    for (url, status) in [
        ("http://127.0.0.1:9/hook", 422),
        ("ftp://example.com/", 400),
    ] {
        let body = json!({"text": "Hi.", "voiceId": voice, "webhookUrl": url});
        let r = app.post("/v1/text-to-speech", &admin, body).await;
        let code = if status == 422 {
            "unprocessable_entity"
        } else {
            "invalid_parameter"
        };
        let body = assert_error(r, status, code).await;
        assert_eq!(body["error"]["details"]["parameter"], "webhookUrl");
    }
    let r = app
        .post_form(
            "/v1/speech-to-text",
            &admin,
            form(
                vec![("file", silent_wav(16_000, 16_000), "quiet.wav")],
                &[("webhookUrl", "http://10.1.2.3/")],
            ),
        )
        .await;
    let body = assert_error(r, 422, "unprocessable_entity").await;
    assert_eq!(body["error"]["details"]["parameter"], "webhookUrl");
    assert_eq!(app.account_view(&admin).await["credits"], before);
    let jobs: Value = app.get("/v1/jobs", &admin).await.json().await.unwrap();
    assert_eq!(jobs["pagination"]["total"], 0, "{jobs}");
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
