//! Retention: finished jobs with their outputs, and uploads, are deleted
//! from the database and the store once their time has passed; result URLs
//! never outlive their job; an upload a queued job still reads is kept.

use std::time::Duration;

use mediagen_core::time::{now_ms, parse_iso8601};
use serde_json::{json, Value};

use crate::helpers::{assert_error, silent_wav, Backend, TestApp};

/// The `expires` parameter of a signed URL, in Unix seconds.
fn url_expiry(url: &str) -> i64 {
    let query = url.split_once('?').unwrap().1;
    query
        .split('&')
        .find_map(|p| p.strip_prefix("expires="))
        .unwrap()
        .parse()
        .unwrap()
}

async fn upload(app: &TestApp, key: &str) -> String {
    app.upload(key, silent_wav(8000, 8000), "a.wav").await
}

async fn expired_things_are_swept(backend: Backend) {
    const KEEP_S: f64 = 3.0;
    let app = TestApp::spawn_with(backend, |c| {
        c.job_retention_days = KEEP_S / 86_400.0;
        c.file_retention_days = KEEP_S / 86_400.0;
        // No speech-to-text worker: a speech-to-text job stays queued.
        c.worker_kinds = "test.sleep".into();
        c.lease_seconds = 1.0;
    })
    .await;
    let key = &app.admin_key;

    let job: Value = app
        .test_job(key, json!({"ms": 0, "output": "kept a while"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    let id = job["id"].as_str().unwrap().to_owned();
    let url = job["result"]["textUrl"].as_str().unwrap().to_owned();
    let output = app
        .state
        .db
        .job_by_id(&mediagen_core::JobId::parse(&id).unwrap())
        .await
        .unwrap()
        .unwrap()
        .outputs[0]
        .key
        .clone();
    // The URL expires with the job, not a day later.
    let expires_at = job["expiresAt"].as_str().unwrap();
    let deleted_at = parse_iso8601(expires_at).unwrap() / 1000;
    assert!(url_expiry(&url) <= deleted_at, "{url} vs {expires_at}");
    assert!(
        deleted_at - now_ms() / 1000 <= KEEP_S as i64 + 1,
        "{expires_at}"
    );
    assert_eq!(app.download(&url).await, b"kept a while");

    let unused = upload(&app, key).await;
    let read = upload(&app, key).await;
    let waiting = app
        .client
        .post(format!("{}/v1/speech-to-text", app.addr))
        .bearer_auth(key)
        .header("prefer", "respond-async")
        .json(&json!({"fileId": read}))
        .send()
        .await
        .unwrap();
    assert_eq!(waiting.status(), 202);
    let waiting: Value = waiting.json().await.unwrap();
    assert_eq!(
        waiting["expiresAt"],
        Value::Null,
        "a queued job has no end yet"
    );

    // Swept by the workers' maintenance tick once the time has passed.
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if app.get(&format!("/v1/jobs/{id}"), key).await.status() == 404
            && app.get(&format!("/v1/files/{unused}"), key).await.status() == 404
        {
            gone = true;
            break;
        }
    }
    assert!(
        gone,
        "the finished job and the unused upload were not deleted"
    );
    assert!(
        !app.state.blobs.exists(&output).await.unwrap(),
        "output bytes left behind"
    );
    assert!(app
        .client
        .get(&url)
        .send()
        .await
        .unwrap()
        .status()
        .is_client_error());
    // The upload a queued job reads is kept, with its bytes.
    let kept: Value = app
        .get(&format!("/v1/files/{read}"), key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(kept["id"], read.as_str(), "{kept}");
    let record = app
        .state
        .db
        .file(
            &mediagen_core::AccountId::parse(&kept_account(&app).await).unwrap(),
            &mediagen_core::FileId::parse(&read).unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(app.state.blobs.exists(&record.blob_key).await.unwrap());
    // The queued job itself is not finished, so not swept either.
    let waiting_id = waiting["id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/jobs/{waiting_id}"), key)
            .await
            .status(),
        200
    );
    assert_error(
        app.get(&format!("/v1/files/{unused}"), key).await,
        404,
        "resource_not_found",
    )
    .await;
}

crate::on_both_backends!(expired_things_are_swept);

/// The operator account's id (the admin key's account).
async fn kept_account(app: &TestApp) -> String {
    app.account_view(&app.admin_key).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}
