//! Several API processes on one PostgreSQL database: limits hold across
//! them exactly, and announcements wake workers and waits in other
//! processes without polling.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{Backend, TestApp};

/// A per-minute limit counted in the database holds for the traffic of a
/// key spread over two API processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_hold_across_api_processes() {
    let app = TestApp::spawn_with(Backend::Postgres, |c| {
        c.rate_limit_per_minute = 10;
        c.workers = 0;
    })
    .await;
    let peer = app.peer(|_| {}).await;
    // A key of an account of its own: limits count the account.
    let (_, key) = app.account(0, "read").await;
    let addrs = [app.addr.as_str(), peer.addr.as_str()];
    // A run that straddles a minute boundary counts in two windows; the
    // next one starts at the beginning of a minute.
    for attempt in 0.. {
        let mut statuses = Vec::new();
        let mut resets = std::collections::BTreeSet::new();
        for i in 0..20 {
            let r = app
                .client
                .get(format!("{}/v1/account", addrs[i % 2]))
                .bearer_auth(&key)
                .send()
                .await
                .unwrap();
            resets.insert(
                r.headers()["x-ratelimit-reset"]
                    .to_str()
                    .unwrap()
                    .to_owned(),
            );
            statuses.push(r.status());
        }
        if resets.len() > 1 && attempt < 3 {
            continue;
        }
        let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        let limited = statuses
            .iter()
            .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
            .count();
        assert_eq!((ok, limited), (10, 10), "{statuses:?}");
        assert!(statuses[..10].iter().all(|s| *s == StatusCode::OK));
        break;
    }
}

/// 100 submissions at once, through two API processes, from an account
/// whose credits cover one job: exactly one is accepted and the balance
/// never goes below zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_job_of_credit_is_spent_once_across_api_processes() {
    let app = TestApp::spawn_with(Backend::Postgres, |c| c.workers = 0).await;
    let peer = app.peer(|_| {}).await;
    let (_, key) = app.account(5, "write").await;
    let addrs = [app.addr.clone(), peer.addr.clone()];
    let sends = (0..100).map(|i| {
        let client = app.client.clone();
        let url = format!("{}/v1/test-jobs", addrs[i % 2]);
        let key = key.clone();
        async move {
            client
                .post(url)
                .bearer_auth(key)
                .header("prefer", "respond-async")
                .json(&json!({"ms": 10, "units": 5}))
                .send()
                .await
                .unwrap()
                .status()
        }
    });
    let statuses = futures::future::join_all(sends).await;
    let accepted = statuses
        .iter()
        .filter(|s| **s == StatusCode::ACCEPTED)
        .count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::PAYMENT_REQUIRED)
        .count();
    assert_eq!((accepted, refused), (1, 99), "{statuses:?}");
    let account = app.account_view(&key).await;
    assert_eq!(account["credits"]["balance"], 0, "{account}");
    assert_eq!(account["credits"]["reserved"], 5, "{account}");
}

/// On PostgreSQL a worker in another process claims a job as soon as it
/// is queued, and the API process waiting on it answers as soon as it
/// finishes: both polls are set far slower than what is measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_elsewhere_wakes_a_waiting_request() {
    let app = TestApp::spawn_with(Backend::Postgres, |c| {
        c.workers = 0;
        c.poll_seconds = 30.0;
    })
    .await;
    let mut config = app.config.clone();
    config.worker_kinds = "test.sleep".into();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(mediagen::run_worker(config, async {
        let _ = stopped.await;
    }));
    // Idle once registered (its first look for work found none).
    for _ in 0..100 {
        if app.ready_kinds().await == ["test.sleep"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        let started = Instant::now();
        let r = app
            .test_job(&app.admin_key, json!({"ms": 20, "output": "hi"}))
            .await;
        let took = started.elapsed();
        let job: Value = r.json().await.unwrap();
        assert_eq!(job["status"], "completed", "{job}");
        assert!(
            took < Duration::from_millis(1500),
            "a synchronous job took {took:?}: the wake-ups did not arrive"
        );
    }
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
}
