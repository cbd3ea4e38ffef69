//! What a request buys is what it is charged for (the outside probe's
//! reproductions, issue 70): numbers are priced as they are spoken, work
//! that uses a core costs something, a cancel frees a worker only once its
//! work stopped, one account's queue does not hold another's job, keyframes
//! and pictures are priced before they are read, and the body's form is
//! read strictly.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{assert_error, ffmpeg, form, Backend, TestApp};
use crate::tts::joe;

async fn dry_cost(app: &TestApp, key: &str, text: &str, voice: &str) -> i64 {
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": text, "voiceId": voice, "dryRun": true}),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    v["estimatedCredits"]
        .as_i64()
        .or_else(|| v["credits"].as_i64())
        .unwrap_or_else(|| panic!("a dry run's price: {v}"))
}

/// 600 characters of digits, money, ordinals and spelled letters cost what
/// they are spoken as (the probe's 600 digits spoke 12.6 times as long as
/// 600 characters of prose for the same price); prose costs its characters.
async fn texts_are_priced_as_spoken(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(100, "write").await;
    let voice = joe(&app, &key).await;
    let prose = "The quick brown fox jumps over the lazy dog, then rests in the shade. ".repeat(9);
    let prose = prose.trim();
    assert_eq!(
        dry_cost(&app, &key, prose, &voice).await,
        prose.chars().count() as i64
    );
    let digits = "7777777777777777777 ".repeat(30);
    let digits = digits.trim();
    let cost = dry_cost(&app, &key, digits, &voice).await;
    assert!(cost >= 6 * digits.len() as i64, "600 digits cost {cost}");
    let money = "$9,999,999.99 ".repeat(40);
    let cost = dry_cost(&app, &key, money.trim(), &voice).await;
    assert!(cost >= 5 * money.trim().len() as i64, "money cost {cost}");
    let spelled = format!(
        "<speak><say-as interpret-as='characters'>{}</say-as></speak>",
        "QWERTYUIOPASDFGHJKLZXCVBNM".repeat(20)
    );
    let cost = dry_cost(&app, &key, &spelled, &voice).await;
    assert!(
        cost >= 3 * spelled.len() as i64,
        "spelled letters cost {cost}"
    );
    // What the account cannot pay for is refused before any work.
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": digits, "voiceId": voice}),
        )
        .await;
    assert_error(r, 402, "insufficient_credits").await;
}

/// The probe's stream: a long head, then hundreds of lines of `Ok`,
/// closed right after the head's audio. It pays for what the head's
/// sentences held (by their count it paid 3 pieces in 203, a few credits).
/// SQLite only: the worker computes the share; how the close reaches it
/// is the closed-stream tests' (tts.rs, both databases).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stream_pays_for_what_its_pieces_held() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = joe(&app, &key).await;
    let sentence = "The lighthouse keeper climbed the long stairs every evening, lit the \
                    great lamp, and watched the fishing boats come home across the dark water.";
    let head = [sentence; 3].join(" ");
    let text = format!("{head}\n{}", "Ok\n".repeat(200));
    // How long the head alone speaks.
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": head, "voiceId": voice, "format": "pcm", "sampleRate": 48000}),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    let head_seconds = job["result"]["duration"].as_f64().unwrap();
    let before = app.account_view(&key).await["credits"]["used"]
        .as_i64()
        .unwrap();
    let mut r = crate::tts::stream(
        &app,
        &key,
        json!({"text": text, "voiceId": voice, "format": "pcm", "sampleRate": 48000}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let job_id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
    let wanted = ((head_seconds + 0.3) * 48_000.0 * 2.0) as usize;
    let mut got = 0;
    while got < wanted {
        got += r.chunk().await.unwrap().expect("more audio").len();
    }
    drop(r);
    let job = app
        .wait_job(&key, &job_id, Duration::from_secs(120), |j| {
            j["status"] == "failed"
        })
        .await;
    assert_eq!(job["error"]["code"], "client_disconnected", "{job}");
    let paid = app.account_view(&key).await["credits"]["used"]
        .as_i64()
        .unwrap()
        - before;
    let head_chars = head.chars().count() as i64;
    assert!(
        paid >= head_chars && paid < head_chars + 200,
        "paid {paid} for a head of {head_chars} characters: {job}"
    );
}

/// A cancelled job's slot is free only once its work has returned: blocking
/// work that hears no cancel (3 s) keeps the next job waiting for it, and
/// the next job then runs at once.
async fn a_slot_is_free_once_its_work_stopped(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1000, "write").await;
    let first = app
        .test_job_async(&key, json!({"blockMs": 3000, "ms": 0}))
        .await;
    app.wait_job(&key, &first, Duration::from_secs(30), |j| {
        j["status"] == "processing"
    })
    .await;
    let r = app.delete(&format!("/v1/jobs/{first}"), &key).await;
    assert_eq!(r.status(), 200);
    let cancelled = Instant::now();
    let next = app.test_job_async(&key, json!({"ms": 0})).await;
    app.wait_job(&key, &next, Duration::from_secs(30), |j| {
        j["status"] == "completed"
    })
    .await;
    let waited = cancelled.elapsed();
    assert!(
        waited >= Duration::from_millis(2300),
        "the next job ran beside the cancelled one's work ({waited:?})"
    );
}

/// The probe's cancelled conversion (a 900-s input kept a core busy for
/// 107 s after its cancel): a voice changer converting 600 s of sound
/// stops within a second or two of the cancel, so the next job in its slot
/// runs at once.
async fn a_cancelled_conversion_stops(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = joe(&app, &key).await;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("long.mp3");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=160:duration=600",
            "-ac",
            "1",
            "-b:a",
            "32k",
        ],
        &input,
    );
    let r = app
        .client
        .post(format!("{}/v1/voice-changer", app.addr))
        .bearer_auth(&key)
        .header("prefer", "respond-async")
        .multipart(form(
            vec![("file", std::fs::read(&input).unwrap(), "long.mp3")],
            &[("voiceId", voice.as_str())],
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.wait_job(&key, &id, Duration::from_secs(60), |j| {
        j["status"] == "processing"
    })
    .await;
    // Into the conversion (the decode of 600 s takes a second or two).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let r = app.delete(&format!("/v1/jobs/{id}"), &key).await;
    assert_eq!(r.status(), 200);
    let cancelled = Instant::now();
    let next = app.test_job_async(&key, json!({"ms": 0})).await;
    app.wait_job(&key, &next, Duration::from_secs(120), |j| {
        j["status"] == "completed"
    })
    .await;
    let waited = cancelled.elapsed();
    eprintln!("the next job ran {waited:?} after the cancel");
    assert!(
        waited < Duration::from_secs(5),
        "the cancelled conversion held its slot for {waited:?}"
    );
}

/// One account's queue cannot keep another account's job behind it: with
/// one worker slot, account A's four queued jobs let B's job, sent after
/// them, run next.
async fn accounts_take_turns(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, a) = app.account(1000, "write").await;
    let (_, b) = app.account(1000, "write").await;
    let mut theirs = Vec::new();
    for _ in 0..4 {
        theirs.push(app.test_job_async(&a, json!({"ms": 700})).await);
    }
    app.wait_job(&a, &theirs[0], Duration::from_secs(30), |j| {
        j["status"] == "processing"
    })
    .await;
    let mine = app.test_job_async(&b, json!({"ms": 0})).await;
    app.wait_job(&b, &mine, Duration::from_secs(30), |j| {
        j["status"] == "completed"
    })
    .await;
    // When B's job is done, at most A's first two have started.
    let mut started = 0;
    for id in &theirs {
        let job = app.get_json(&format!("/v1/jobs/{id}"), &a).await;
        if job["status"] != "queued" {
            started += 1;
        }
    }
    assert!(started <= 2, "{started} of A's jobs went before B's");
}

/// Twelve seconds of espeak-ng speech as WAV.
pub fn speech(dir: &Path) -> Vec<u8> {
    let text = crate::voice_clone::SAMPLE_TEXT;
    std::fs::read(crate::voice_clone::espeak(
        dir, "s.wav", "en-us", "50", text,
    ))
    .unwrap()
}

/// A WORLD clone uses a core for seconds (it was free): an account without
/// credits gets 402, and one with them pays for it.
async fn world_clones_cost_credits(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let sample = speech(dir.path());
    let fields = [("name", "Mine"), ("consent", "true"), ("method", "world")];
    let (_, poor) = app.account(0, "write").await;
    let r = app
        .post_form(
            "/v1/voices",
            &poor,
            form(vec![("files", sample.clone(), "s.wav")], &fields),
        )
        .await;
    assert_error(r, 402, "insufficient_credits").await;
    let (_, key) = app.account(100, "write").await;
    let r = app
        .post_form(
            "/v1/voices",
            &key,
            form(vec![("files", sample, "s.wav")], &fields),
        )
        .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let account = app.account_view(&key).await;
    let used = account["credits"]["used"].as_i64().unwrap();
    assert!(
        (21..=30).contains(&used),
        "20 credits and a fifth of one a second of samples: {account}"
    );
}

/// A 120-s H.264 video of `size` at `rate` fps with one keyframe (at the
/// start).
pub fn one_keyframe(dir: &Path, size: &str, rate: u32) -> Vec<u8> {
    let out = dir.join("one-key.mp4");
    let source = format!("testsrc2=size={size}:rate={rate}:duration=120");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            &source,
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-g",
            "100000",
            "-keyint_min",
            "100000",
            "-sc_threshold",
            "0",
        ],
        &out,
    );
    std::fs::read(out).unwrap()
}

/// One second of a `side`×`side` H.264 video at 10 fps.
pub fn big_clip(dir: &Path, side: u32) -> Vec<u8> {
    let out = dir.join(format!("big-{side}.mp4"));
    let source = format!("testsrc2=size={side}x{side}:rate=10:duration=1");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            &source,
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
        ],
        &out,
    );
    std::fs::read(out).unwrap()
}

/// On a file with a single keyframe, fast ranges of 0.04 s near its end
/// would copy 110 s each: refused (the probe stored 600 s for 0 credits).
/// Accurate ranges there decode from the keyframe: priced on that before
/// it is decoded, so an account that cannot pay stops before the work, and
/// one that can pays for what was decoded.
async fn keyframes_are_priced(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let (_, key) = app.account(10_000, "write").await;
    let file = app
        .upload(&key, one_keyframe(dir.path(), "160x120", 10), "one-key.mp4")
        .await;
    let ranges = json!([{"start": 110.0, "end": 110.04}, {"start": 115.0, "end": 115.04}]);
    let r = app
        .post(
            "/v1/video/trim",
            &key,
            json!({"fileId": file, "ranges": ranges, "mode": "fast", "format": "mp4"}),
        )
        .await;
    let e = assert_error(r, 422, "unprocessable_entity").await;
    assert!(
        e["error"]["message"].as_str().unwrap().contains("accurate"),
        "{e}"
    );
    let before = app.account_view(&key).await["credits"]["used"]
        .as_i64()
        .unwrap();
    assert_eq!(before, 0, "a refused trim is not charged");

    // Accurate: 225 s decoded (110 + 115) for 0.08 s of output.
    let (_, poor) = app.account(20, "write").await;
    let theirs = app
        .upload(
            &poor,
            one_keyframe(dir.path(), "160x120", 10),
            "one-key.mp4",
        )
        .await;
    let r = app
        .post(
            "/v1/video/trim",
            &poor,
            json!({"fileId": theirs, "ranges": ranges, "mode": "accurate", "format": "mp4"}),
        )
        .await;
    let e = assert_error(r, 402, "insufficient_credits").await;
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("stopped before its work"), "{message}");
    let poor_view = app.account_view(&poor).await;
    assert_eq!(poor_view["credits"]["balance"], 20, "{poor_view}");
    let r = app
        .post(
            "/v1/video/trim",
            &key,
            json!({"fileId": file, "ranges": ranges, "mode": "accurate", "format": "mp4"}),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    let charged = job["credits"].as_f64().unwrap_or(-1.0);
    assert!(
        (219.0..=228.0).contains(&charged),
        "charged {charged} for 225 s decoded: {job}"
    );
}

/// Expansion is priced on the frames and pixels it makes: a 2048×2048
/// clip at 10 fps costs 1.52 units a second (a 720p30 second is one), so
/// 4 s cost 7.
async fn expansions_are_priced_on_pixels(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let (_, key) = app.account(10_000, "write").await;
    let file = app
        .upload(&key, big_clip(dir.path(), 2048), "big.mp4")
        .await;
    let r = app
        .post(
            "/v1/avatar-expansion",
            &key,
            json!({"fileId": file, "duration": 4, "mode": "pingpong"}),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    let charged = job["credits"].as_f64().unwrap_or(-1.0);
    assert_eq!(charged, 7.0, "{job}");
}

/// A member named twice is refused (it was last-wins); a 415 for a body
/// sent as the wrong type is not replayed to the corrected retry.
async fn bodies_are_read_strictly(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1000, "write").await;
    let voice = joe(&app, &key).await;
    let body =
        format!(r#"{{"text": "Hi.", "voiceId": "{voice}", "voiceId": "other", "dryRun": true}}"#);
    let r = app
        .client
        .post(format!("{}/v1/text-to-speech", app.addr))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let e = assert_error(r, 400, "invalid_json").await;
    assert!(
        e["error"]["message"].as_str().unwrap().contains("voiceId"),
        "{e}"
    );

    let body = json!({"text": "Hi.", "voiceId": voice, "dryRun": true}).to_string();
    let send = |content_type: &'static str| {
        app.client
            .post(format!("{}/v1/text-to-speech", app.addr))
            .bearer_auth(&key)
            .header("content-type", content_type)
            .header("idempotency-key", "retry-after-415")
            .body(body.clone())
            .send()
    };
    assert_eq!(send("text/plain").await.unwrap().status(), 415);
    let r = send("application/json").await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// Text a voice's reader cannot read (random hanzi to the Japanese Kokoro
/// voice's phonemizer) is the caller's 422 naming `text`, refused once: it
/// was a 500 after three attempts.
async fn unreadable_text_is_refused_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1000, "write").await;
    let voice = app.first_voice(&key, "engine=kokoro&language=ja").await;
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": "睳慏肉吮坅銗娌糎题啬軳楻勌夀薁莆囱泎妜针葖喐陠巘檓麸鹏颟嗫韞飳胆员橌叶镀弋猑莦恶", "voiceId": voice}),
        )
        .await;
    let e = assert_error(r, 422, "unprocessable_entity").await;
    assert_eq!(e["error"]["details"]["parameter"], "text", "{e}");
    let id = e["error"]["details"]["jobId"].as_str().unwrap().to_owned();
    let job = app
        .state
        .db
        .job_by_id(&mediagen_core::JobId::parse(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.attempts, 1, "refused at its first attempt");
    let credits = &app.account_view(&key).await["credits"];
    assert_eq!(credits["used"], 0, "{credits}");
}

crate::on_both_backends!(
    texts_are_priced_as_spoken,
    a_slot_is_free_once_its_work_stopped,
    a_cancelled_conversion_stops,
    accounts_take_turns,
    world_clones_cost_credits,
    keyframes_are_priced,
    expansions_are_priced_on_pixels,
    bodies_are_read_strictly,
    unreadable_text_is_refused_once,
);
