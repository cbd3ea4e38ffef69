//! Billing by measurement: a job's hold is priced on the header's estimate
//! and settles on what the job decoded. The input is a VBR MP3 without a
//! Xing header (1 s at 320 kbit/s, then 40 s at 32 kbit/s): ffprobe
//! estimates its length from the first frame's rate (about 5 s), while it
//! holds 41 s of sound.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{form, Backend, TestApp};

/// Seconds of sound in the lying MP3.
const DECODED: i64 = 41;

/// The lying MP3 and the length ffprobe claims for it.
fn vbr_without_header() -> (Vec<u8>, f64) {
    let dir = tempfile::tempdir().unwrap();
    let part = |name: &str, source: &str, seconds: &str, rate: &str| {
        let path = dir.path().join(name);
        let ok = Command::new("ffmpeg")
            .args(["-v", "error", "-f", "lavfi", "-i", source])
            .args(["-af", "apad", "-t", seconds])
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
    // A spoken sentence (espeak-ng) in the long part, so a dub has
    // something to say whatever the recogniser makes of the rest (a noise
    // bed made it hallucinate words on some runs and not on others).
    let speech = dir.path().join("speech.wav");
    let ok = Command::new("espeak-ng")
        .args(["-v", "en-us", "-w"])
        .arg(&speech)
        .arg("The meeting starts at nine in the morning, in the large room.")
        .status()
        .unwrap();
    assert!(ok.success());
    let mut bytes = part("a.mp3", "sine=frequency=440:sample_rate=44100", "1", "320k");
    bytes.extend(part(
        "b.mp3",
        &format!("amovie={}", speech.display()),
        &(DECODED - 1).to_string(),
        "32k",
    ));
    let path = dir.path().join("lying.mp3");
    std::fs::write(&path, &bytes).unwrap();
    let claimed = crate::helpers::probe_seconds(&path);
    assert!(
        claimed < DECODED as f64 / 4.0,
        "the header must understate: {claimed}"
    );
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

/// Speech-to-text and the voice changer charge the 41 s they decoded, not
/// the 5 s the header claims: the hold is raised from the balance as soon
/// as the sound is decoded. An account whose balance cannot cover the
/// difference gets a job failed before its work, and is charged nothing.
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
        assert_eq!(
            job["credits"], DECODED,
            "{path}: charged for the seconds decoded"
        );
        assert_eq!(
            app.account_view(&key).await["credits"],
            json!({"balance": 1000 - DECODED, "reserved": 0, "used": DECODED}),
            "{path}"
        );

        // The estimate is covered, the measurement is not: failed, free.
        let (_, poor) = app.account(estimated + 5, "write").await;
        let job = run(&app, &poor, path, &bytes, &fields).await;
        assert_eq!(job["status"], "failed", "{path}: {job}");
        assert_eq!(job["error"]["code"], "insufficient_credits");
        // Stopped as soon as the sound was decoded, not after the work.
        let message = job["error"]["message"].as_str().unwrap();
        assert!(message.contains("stopped before its work"), "{message}");
        assert!(job["result"].is_null());
        assert_eq!(
            app.account_view(&poor).await["credits"],
            json!({"balance": estimated + 5, "reserved": 0, "used": 0}),
            "{path}"
        );
    }
}

crate::on_both_backends!(jobs_settle_on_what_they_decoded);

/// Dubbing charges the part it decoded (2 credits a second), not the
/// header's 5 s; a trim of a truncated MP4 (its header says 10 s, 4.7 s
/// of it are there) charges the seconds it cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubs_and_trims_settle_on_what_they_processed() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (bytes, claimed) = vbr_without_header();
    let (_, key) = app.account(1000, "write").await;
    let fields = [("targetLanguage", "es"), ("sourceLanguage", "en")];
    let estimated = estimate(&app, &key, "/v1/dubbing", &bytes, &fields).await;
    assert_eq!(estimated, 2 * claimed.ceil() as i64);
    let job = run(&app, &key, "/v1/dubbing", &bytes, &fields).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["credits"], 2 * DECODED, "{job}");
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 1000 - 2 * DECODED, "reserved": 0, "used": 2 * DECODED})
    );

    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.mp4");
    let ok = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x120:rate=25",
        ])
        .args(["-f", "lavfi", "-i", "sine=sample_rate=44100", "-t", "10"])
        .args(["-c:v", "libx264", "-g", "25", "-c:a", "aac"])
        .args(["-movflags", "+faststart"])
        .arg(&full)
        .status()
        .unwrap();
    assert!(ok.success());
    let mut video = std::fs::read(&full).unwrap();
    video.truncate(video.len() / 2);
    let (_, key) = app.account(1000, "write").await;
    let mut charged = Vec::new();
    for mode in ["fast", "accurate"] {
        let fields = [("ranges", r#"[{"start": 0, "end": 10}]"#), ("mode", mode)];
        let estimated = estimate(&app, &key, "/v1/video/trim", &video, &fields).await;
        assert_eq!(estimated, 10, "{mode}");
        let job = run(&app, &key, "/v1/video/trim", &video, &fields).await;
        assert_eq!(job["status"], "completed", "{mode}: {job}");
        let cut = job["result"]["duration"].as_f64().unwrap();
        assert!((4.0..6.0).contains(&cut), "{mode}: {job}");
        assert_eq!(job["credits"], (cut - 0.1).ceil() as i64, "{mode}: {job}");
        charged.push(job["credits"].as_i64().unwrap());
    }
    let used: i64 = charged.iter().sum();
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 1000 - used, "reserved": 0, "used": used})
    );
}
