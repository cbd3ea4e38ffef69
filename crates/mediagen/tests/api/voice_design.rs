//! `POST /v1/voices/design` and keeping a preview (`POST /v1/voices
//! {designId}`): real Kokoro voices designed from descriptions, measured
//! and heard back by the recogniser.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};
use crate::stt::wer;
use crate::voice_clone::transcribe_in;

const SAID: &str = "The quick brown fox jumps over the lazy dog near the old stone bridge.";

async fn design(app: &TestApp, key: &str, description: &str) -> Value {
    let body = json!({ "description": description, "text": SAID, "seed": 7 });
    let r = app.post("/v1/voices/design", key, body).await;
    let job = app.finished(key, r, Duration::from_secs(300)).await;
    assert_eq!(job["status"], "completed", "{job}");
    job
}

fn mean(job: &Value, f: impl Fn(&Value) -> f64) -> f64 {
    let previews = job["result"]["previews"].as_array().unwrap();
    previews.iter().map(f).sum::<f64>() / previews.len() as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voices_are_designed_from_words_and_kept() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let deep = design(
        &app,
        &key,
        "A calm older man with a deep British voice, speaking slowly",
    )
    .await;
    let r = &deep["result"];
    assert_eq!(r["attributes"]["language"], "en-GB", "{r}");
    assert_eq!(r["attributes"]["gender"], "male");
    assert_eq!(r["ignoredTerms"], json!([]));
    let previews = r["previews"].as_array().unwrap();
    assert_eq!(previews.len(), 3);
    let mut leads = Vec::new();
    for p in previews {
        assert!(p["designId"].as_str().unwrap().starts_with("design_"));
        let audio = app.download(p["audioUrl"].as_str().unwrap()).await;
        assert!(audio.len() > 5_000, "an mp3 preview");
        // A British voice leads (its phonemes are the preview's).
        let base = p["baseVoiceId"].as_str().unwrap();
        let voice = app.get_json(&format!("/v1/voices/{base}"), &key).await;
        assert_eq!(voice["language"], "en-GB", "{voice}");
        leads.push(base.to_owned());
    }
    leads.dedup();
    assert_eq!(leads.len(), 3, "three different voices lead: {leads:?}");

    let high = design(
        &app,
        &key,
        "a high-pitched young British man who talks quickly",
    )
    .await;
    let pitch = |p: &Value| p["profile"]["pitchMedian"].as_f64().unwrap();
    let pace = |p: &Value| p["pace"].as_f64().unwrap();
    assert!(
        mean(&deep, pitch) < mean(&high, pitch),
        "deep {} Hz, high {} Hz",
        mean(&deep, pitch),
        mean(&high, pitch)
    );
    assert!(mean(&deep, pace) < mean(&high, pace));

    // Kept: a voice of the account, spoken as any clone.
    let design_id = previews[1]["designId"].as_str().unwrap();
    let body = json!({ "designId": design_id, "name": "Narrator" });
    let r = app.post("/v1/voices", &key, body.clone()).await;
    assert_eq!(r.status(), 201);
    let voice: Value = r.json().await.unwrap();
    assert_eq!(voice["category"], "cloned", "{voice}");
    assert_eq!(voice["language"], "en-GB");
    let voice_id = voice["id"].as_str().unwrap();
    let body = json!({ "text": SAID, "voiceId": voice_id, "format": "wav" });
    let r = app.post("/v1/text-to-speech", &key, body).await;
    let job = app.finished(&key, r, Duration::from_secs(120)).await;
    assert_eq!(job["status"], "completed", "{job}");
    let wav = app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await;
    let heard = transcribe_in(&app, &key, wav, "en").await;
    let error = wer(SAID, &heard);
    assert!(error <= 0.15, "heard {heard:?} ({error})");

    // Another account neither sees the design nor keeps it.
    let (_, other) = app.account(1_000, "write").await;
    let r = app
        .post(
            "/v1/voices",
            &other,
            json!({ "designId": design_id, "name": "Mine" }),
        )
        .await;
    assert_error(r, 404, "resource_not_found").await;
    let job_id = deep["id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/jobs/{job_id}"), &other)
            .await
            .status(),
        404
    );
    let r = app.get(&format!("/v1/voices/{voice_id}"), &other).await;
    assert_eq!(r.status(), 404);
}

async fn refusals(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = app.key("write").await;
    let r = app
        .post(
            "/v1/voices/design",
            &key,
            json!({ "description": "qwzx florp" }),
        )
        .await;
    let e = assert_error(r, 422, "unsupported_prompt").await;
    assert!(
        e["error"]["details"]["understood"]
            .as_array()
            .unwrap()
            .len()
            > 20
    );
    assert_eq!(
        e["error"]["details"]["ignoredTerms"],
        json!(["qwzx", "florp"])
    );
    for (body, param) in [
        (json!({ "description": " " }), "description"),
        (json!({ "description": "a deep voice", "text": "" }), "text"),
        (
            json!({ "description": "a deep voice", "dryRun": "yes" }),
            "dryRun",
        ),
        (
            json!({ "description": "a deep voice", "colour": "red" }),
            "colour",
        ),
        (
            json!({ "description": "a deep voice", "text": "<speak>Hi</speak>" }),
            "text",
        ),
    ] {
        let r = app.post("/v1/voices/design", &key, body.clone()).await;
        let e = assert_error(r, 400, "invalid_parameter").await;
        assert_eq!(e["error"]["details"]["parameter"], param, "{body}");
    }
    let r = app
        .post(
            "/v1/voices/design",
            &key,
            json!({ "description": "a deep voice", "text": "Twelve chars", "dryRun": true }),
        )
        .await;
    let priced: Value = r.json().await.unwrap();
    // Each of the three previews says the text: priced as it is spoken.
    assert_eq!(priced["estimatedCredits"], 36, "{priced}");
    for id in ["design_nope", "voice_abc", "design_aaaaaaaaaaaaaaaaaaaa0"] {
        let r = app
            .post("/v1/voices", &key, json!({ "designId": id, "name": "X" }))
            .await;
        assert_error(r, 404, "resource_not_found").await;
    }
}

crate::on_both_backends!(refusals);
