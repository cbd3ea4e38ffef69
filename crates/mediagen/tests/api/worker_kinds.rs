//! Specialised workers: a worker claims only the kinds it runs; a job of a
//! kind no live worker claims waits queued (never failed for a missing
//! engine) and runs when a worker of its kind starts; `/readyz` and
//! `GET /v1/models` say which kinds have live workers.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{Backend, TestApp};

async fn jobs_wait_for_a_worker_of_their_kind(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.worker_kinds = "tts, stt".into()).await;
    let key = &app.admin_key;
    // The in-process worker registers within a heartbeat.
    let mut kinds = Vec::new();
    for _ in 0..50 {
        kinds = app.ready_kinds().await;
        if !kinds.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(kinds, ["stt", "tts"]);
    let models: Value = app.get("/v1/models", key).await.json().await.unwrap();
    let has_workers = |kind: &str| {
        models["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kind"] == kind)
            .all(|m| m["workers"] == true)
    };
    assert!(has_workers("text-to-speech") && has_workers("speech-to-text"));
    assert!(!has_workers("image-generation"), "{models}");

    // No worker claims `test.sleep`: the job waits, queued.
    let id = app
        .test_job_async(key, json!({"ms": 50, "output": "done"}))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let job: Value = app
        .get(&format!("/v1/jobs/{id}"), key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "queued", "{job}");
    assert_eq!(job["attempts"], 0, "{job}");

    // A worker of that kind starts (another process would do the same).
    let mut config = app.config.clone();
    config.worker_kinds = "test.sleep".into();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(mediagen::run_worker(config, async {
        let _ = stopped.await;
    }));
    let job = app
        .wait_job(key, &id, Duration::from_secs(60), |j| {
            j["status"] == "completed"
        })
        .await;
    assert!(job["result"]["textUrl"].is_string(), "{job}");
    assert_eq!(app.ready_kinds().await, ["stt", "test.sleep", "tts"]);
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    // Gone from the registry when it stops.
    assert_eq!(app.ready_kinds().await, ["stt", "tts"]);

    // A kind this build does not have is refused at start-up.
    let mut config = app.config.clone();
    config.worker_kinds = "tts,nope".into();
    let e = mediagen::run_worker(config, async {}).await.unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
}

crate::on_both_backends!(jobs_wait_for_a_worker_of_their_kind);
