use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn sync_and_async_answers(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.sync_wait_seconds = 1.0).await;
    let key = &app.admin_key;

    // Finishes within the wait: 200 with the completed job.
    let r = app
        .test_job(key, json!({"ms": 50, "output": "quick"}))
        .await;
    assert_eq!(r.status(), 200);
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed");
    assert_eq!(job["progress"], 100);
    assert!(job["id"].as_str().unwrap().starts_with("job_"));
    assert!(job["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(job["result"]["textUrl"]
        .as_str()
        .unwrap()
        .starts_with(&app.addr));

    // Longer than the wait: 202 with the job and its Location.
    let r = app.test_job(key, json!({"ms": 2500})).await;
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let job: Value = r.json().await.unwrap();
    assert!(job["status"] == "queued" || job["status"] == "processing");
    assert_eq!(
        location,
        format!("/v1/jobs/{}", job["id"].as_str().unwrap())
    );
    let done = app
        .wait_job(
            key,
            job["id"].as_str().unwrap(),
            Duration::from_secs(10),
            |j| j["status"] == "completed",
        )
        .await;
    assert_eq!(done["progress"], 100);

    // Prefer: respond-async answers 202 at once even for a quick job.
    let id = app.test_job_async(key, json!({"ms": 0})).await;
    app.wait_job(key, &id, Duration::from_secs(5), |j| {
        j["status"] == "completed"
    })
    .await;
}

async fn progress_is_reported_while_running(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    let id = app.test_job_async(key, json!({"ms": 3000})).await;
    let job = app
        .wait_job(key, &id, Duration::from_secs(10), |j| {
            j["status"] == "processing"
                && j["progress"].as_i64().unwrap() > 0
                && j["progress"].as_i64().unwrap() < 100
        })
        .await;
    assert_eq!(job["attempts"], 1);
}

async fn retryable_failures_retry_then_fail_and_refund(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(50, "write").await;
    let body = assert_error(
        app.test_job(&key, json!({"ms": 0, "units": 5, "fail": "retry"}))
            .await,
        500,
        "job_failed",
    )
    .await;
    let id = body["error"]["details"]["jobId"]
        .as_str()
        .unwrap()
        .to_owned();
    let job: Value = app
        .get(&format!("/v1/jobs/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "failed");
    assert_eq!(job["attempts"], 3, "max_attempts = 3");
    assert_eq!(job["error"]["code"], "test_transient");
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 50, "reserved": 0, "used": 0})
    );
}

/// A job that refuses its input answers a waiting request with that
/// client error (code, message, details, and the job's id), not a 500;
/// the job keeps the same error and is refunded.
async fn input_refusals_answer_with_their_own_code(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(50, "write").await;
    let body = assert_error(
        app.test_job(&key, json!({"ms": 0, "units": 5, "fail": "refuse"}))
            .await,
        422,
        "unprocessable_entity",
    )
    .await;
    let details = &body["error"]["details"];
    assert_eq!(
        (&details["parameter"], &details["asked"]),
        (&json!("fail"), &json!("refuse")),
        "{body}"
    );
    let id = details["jobId"].as_str().unwrap();
    let job: Value = app
        .get(&format!("/v1/jobs/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "failed");
    assert_eq!(job["error"]["code"], "unprocessable_entity", "{job}");
    assert_eq!(job["error"]["details"]["asked"], "refuse", "{job}");
    assert_eq!(job["attempts"], 1, "a refusal is not retried");
    assert_eq!(app.account_view(&key).await["credits"]["balance"], 50);
}

async fn jobs_that_overrun_their_time_limit_fail(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.job_timeout_seconds = 0.3).await;
    let (_, key) = app.account(50, "write").await;
    let body = assert_error(
        app.test_job(&key, json!({"ms": 3000, "units": 5})).await,
        500,
        "job_failed",
    )
    .await;
    assert_eq!(body["error"]["details"]["error"]["code"], "job_timeout");
    assert_eq!(app.account_view(&key).await["credits"]["balance"], 50);
}

/// A list names what each job was asked: the start of a speech job's text,
/// and the uploaded file a trim reads (its `fileId`, which `GET /v1/files`
/// names).
async fn jobs_are_listed_with_what_was_asked(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.sync_wait_seconds = 60.0).await;
    let key = &app.admin_key;
    let voice = app.first_voice(key, "engine=espeak").await;
    let text = "Every job in a list says what it was asked. This sentence runs well past the eighty characters a summary keeps.";
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": text, "voiceId": voice}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let dir = tempfile::tempdir().unwrap();
    let clip = dir.path().join("clip.mp4");
    crate::helpers::ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x120:rate=10:duration=2",
            "-pix_fmt",
            "yuv420p",
        ],
        &clip,
    );
    let file = app
        .upload(key, std::fs::read(&clip).unwrap(), "holiday.mp4")
        .await;
    let r = app
        .post(
            "/v1/video/trim",
            key,
            json!({"fileId": file, "ranges": [{"start": 0.5, "end": 1.5}]}),
        )
        .await;
    assert_eq!(r.status(), 200);

    let spoken = &app.get_json("/v1/jobs?kind=tts", key).await["data"][0];
    let summary = spoken["summary"].as_str().unwrap();
    assert!(summary.ends_with('…'), "{summary}");
    assert!(text.starts_with(summary.trim_end_matches('…')), "{summary}");
    assert_eq!(summary.chars().count(), 81, "{summary}");
    assert_eq!(spoken["fileId"], Value::Null);
    let trimmed = &app.get_json("/v1/jobs?kind=video.trim", key).await["data"][0];
    assert_eq!(trimmed["fileId"], file.as_str());
    assert_eq!(trimmed["summary"], Value::Null);
    assert_eq!(
        app.get_json(&format!("/v1/files/{file}"), key).await["filename"],
        "holiday.mp4"
    );
}

crate::on_both_backends!(
    jobs_are_listed_with_what_was_asked,
    sync_and_async_answers,
    progress_is_reported_while_running,
    retryable_failures_retry_then_fail_and_refund,
    jobs_that_overrun_their_time_limit_fail,
    input_refusals_answer_with_their_own_code
);
