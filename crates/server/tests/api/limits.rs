use std::collections::HashMap;

use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn rate_limit_headers_and_429(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.rate_limit_per_minute = 3).await;
    let key = app.key("read").await;
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
    // Another key has its own budget.
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

crate::on_both_backends!(rate_limit_headers_and_429, concurrent_job_cap);
