use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;

use serde_json::{json, Value};

use crate::helpers::{assert_error, form, Backend, TestApp};

async fn rate_limit_headers_and_429(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.rate_limit_per_minute = 3).await;
    // A key of an account of its own: limits count the account.
    let (_, key) = app.account(0, "read").await;
    // Count successes per window; a window boundary during the test starts a
    // new count, so the assertion holds whenever the test runs.
    let mut ok_per_window: HashMap<String, u32> = HashMap::new();
    let mut refused = None;
    for _ in 0..8 {
        let r = app.get("/v1/account", &key).await;
        let h = r.headers();
        assert_eq!(h["x-ratelimit-limit"], "3");
        let reset = h["x-ratelimit-reset"].to_str().unwrap().to_owned();
        assert!(
            h.contains_key("x-ratelimit-remaining") && h.contains_key("x-ratelimit-reset-time")
        );
        if r.status() == 200 {
            let n = ok_per_window.entry(reset).or_default();
            *n += 1;
            assert_eq!(
                r.headers()["x-ratelimit-remaining"],
                (3 - *n).to_string().as_str()
            );
        } else {
            let retry_after: i64 = h["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=60).contains(&retry_after));
            assert_eq!(h["x-ratelimit-remaining"], "0");
            let body = assert_error(r, 429, "rate_limit_exceeded").await;
            assert_eq!(body["error"]["details"]["limit"], 3);
            assert_eq!(body["error"]["details"]["reset"].to_string(), reset);
            assert_eq!(ok_per_window.get(&reset), Some(&3));
            refused = Some(body);
            break;
        }
    }
    assert!(
        refused.is_some(),
        "the fourth request in a minute is refused"
    );
    // Another account has its own budget.
    assert_eq!(app.get("/v1/account", &app.admin_key).await.status(), 200);
}

async fn concurrent_job_cap(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.max_concurrent_jobs = 2).await;
    let key = &app.admin_key;
    let a = app.test_job_async(key, json!({"ms": 5000})).await;
    let b = app.test_job_async(key, json!({"ms": 5000})).await;
    let body = assert_error(
        app.test_job(key, json!({"ms": 0})).await,
        429,
        "concurrent_jobs_limit_exceeded",
    )
    .await;
    assert_eq!(body["error"]["details"]["limit"], 2);
    for id in [a, b] {
        let r: Value = app
            .delete(&format!("/v1/jobs/{id}"), key)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(r["status"], "cancelled");
    }
    assert_eq!(
        app.test_job(key, json!({"ms": 0})).await.status(),
        200,
        "room again after cancelling"
    );
}

/// A form cannot fill memory or hold a connection: parts, text bytes and
/// the pace of an upload are capped as the body arrives.
async fn multipart_forms_are_capped_as_they_arrive(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| {
        c.upload_idle_seconds = 1.0;
    })
    .await;
    let key = app.key("write").await;
    let many: Vec<(String, String)> = (0..65).map(|i| (format!("f{i}"), "x".into())).collect();
    let fields: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = app
        .post_form("/v1/speech-to-text", &key, form(vec![], &fields))
        .await;
    let b = assert_error(r, 400, "invalid_parameter").await;
    assert_eq!(b["error"]["details"]["limit"], "max_parts");

    let big = "y".repeat(60 * 1024);
    let fields: Vec<(String, String)> = (0..6).map(|i| (format!("t{i}"), big.clone())).collect();
    let fields: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app
        .post_form("/v1/speech-to-text", &key, form(vec![], &fields))
        .await;
    let b = assert_error(r, 400, "invalid_parameter").await;
    assert_eq!(b["error"]["details"]["limit"], "text_total_bytes");

    // A body that stops arriving: 408 once the idle time passes.
    let boundary = "XBOUNDARYX";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF"
    );
    let stream = futures::stream::iter(vec![Ok::<_, std::io::Error>(head.into_bytes())]).chain(
        futures::stream::once(async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(b"more".to_vec())
        }),
    );
    let started = std::time::Instant::now();
    let r = app
        .client
        .post(format!("{}/v1/files", app.addr))
        .bearer_auth(&key)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_error(r, 408, "request_timeout").await;
    assert!(started.elapsed() < Duration::from_secs(4));
}

crate::on_both_backends!(
    rate_limit_headers_and_429,
    concurrent_job_cap,
    multipart_forms_are_capped_as_they_arrive
);
