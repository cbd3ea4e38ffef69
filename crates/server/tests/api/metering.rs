//! Billing by measurement: a job's hold is priced on the header's estimate
//! and settles on what the job decoded. The input is a VBR MP3 without a
//! Xing header (1 s at 320 kbit/s, then 120 s at 32 kbit/s): ffprobe
//! estimates its length from the first frame's rate (about 13 s), while it
//! holds 121 s of sound.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{form, Backend, TestApp};

/// The lying MP3 and the length ffprobe claims for it.
fn vbr_without_header() -> (Vec<u8>, f64) {
    let dir = tempfile::tempdir().unwrap();
    let part = |name: &str, source: &str, seconds: &str, rate: &str| {
        let path = dir.path().join(name);
        let ok = Command::new("ffmpeg")
            .args(["-v", "error", "-f", "lavfi", "-i", source, "-t", seconds])
            .args([
                "-ar",
                "44100",
                "-ac",
                "1",
                "-c:a",
                "libmp3lame",
                "-b:a",
                rate,
            ])
            .args(["-write_xing", "0", "-id3v2_version", "0", "-f", "mp3"])
            .arg(&path)
            .status()
            .unwrap();
        assert!(ok.success());
        std::fs::read(path).unwrap()
    };
    let mut bytes = part("a.mp3", "sine=frequency=440:sample_rate=44100", "1", "320k");
    bytes.extend(part("b.mp3", "anoisesrc=a=0.001:r=44100", "120", "32k"));
    let path = dir.path().join("lying.mp3");
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let claimed: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(claimed < 20.0, "the header must understate: {claimed}");
    (bytes, claimed)
}

/// Submits `bytes` to `path` (async) and waits for the job to end.
async fn run(app: &TestApp, key: &str, path: &str, bytes: &[u8], fields: &[(&str, &str)]) -> Value {
    let r = app
        .client
        .post(format!("{}{path}", app.addr))
        .bearer_auth(key)
        .header("prefer", "respond-async")
        .multipart(form(vec![("file", bytes.to_vec(), "in.mp3")], fields))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
    let job: Value = r.json().await.unwrap();
    app.wait_job(
        key,
        job["id"].as_str().unwrap(),
        Duration::from_secs(300),
        |j| j["status"] == "completed" || j["status"] == "failed",
    )
    .await
}

async fn estimate(
    app: &TestApp,
    key: &str,
    path: &str,
    bytes: &[u8],
    fields: &[(&str, &str)],
) -> i64 {
    let mut fields = fields.to_vec();
    fields.push(("dryRun", "true"));
    let r: Value = app
        .post_form(
            path,
            key,
            form(vec![("file", bytes.to_vec(), "in.mp3")], &fields),
        )
        .await
        .json()
        .await
        .unwrap();
    r["estimatedCredits"].as_i64().unwrap()
}

/// Speech-to-text and the voice changer charge the 121 s they decoded, not
/// the 13 s the header claims: the hold is topped up from the balance. An
/// account whose balance cannot cover the difference gets a failed job
/// and is charged nothing.
async fn jobs_settle_on_what_they_decoded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (bytes, claimed) = vbr_without_header();
    let voice: Value = app
        .get("/v1/voices?engine=piper&limit=1", &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    let voice = voice["data"][0]["id"].as_str().unwrap().to_owned();
    for (path, fields) in [
        ("/v1/speech-to-text", vec![]),
        ("/v1/voice-changer", vec![("voiceId", voice.as_str())]),
    ] {
        let (_, key) = app.account(1000, "write").await;
        let estimated = estimate(&app, &key, path, &bytes, &fields).await;
        assert_eq!(estimated, claimed.ceil() as i64, "{path}");
        let job = run(&app, &key, path, &bytes, &fields).await;
        assert_eq!(job["status"], "completed", "{path}: {job}");
        assert_eq!(job["credits"], 121, "{path}: charged for 121 s decoded");
        assert_eq!(
            app.account_view(&key).await["credits"],
            json!({"balance": 879, "reserved": 0, "used": 121}),
            "{path}"
        );

        // The estimate is covered, the measurement is not: failed, free.
        let (_, poor) = app.account(estimated + 5, "write").await;
        let job = run(&app, &poor, path, &bytes, &fields).await;
        assert_eq!(job["status"], "failed", "{path}: {job}");
        assert_eq!(job["error"]["code"], "insufficient_credits");
        assert!(job["result"].is_null());
        assert_eq!(
            app.account_view(&poor).await["credits"],
            json!({"balance": estimated + 5, "reserved": 0, "used": 0}),
            "{path}"
        );
    }
}

crate::on_both_backends!(jobs_settle_on_what_they_decoded);
