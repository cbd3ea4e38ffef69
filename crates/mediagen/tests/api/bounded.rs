//! Work bounded by what its caller is allowed and pays for (the outside
//! probe's reproductions): SSML cannot multiply the speech, a cancel stops
//! the tools, limits bound the account, damaged media is the client's 422.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mediagen_media::process::{group_alive, groups_labelled};
use serde_json::{json, Value};

use crate::helpers::{assert_error, ffmpeg, form, Backend, TestApp};
use crate::tts::joe;

fn nested(levels: usize) -> String {
    format!(
        "<speak>{}Hello there.{}</speak>",
        "<prosody rate='50%'>".repeat(levels),
        "</prosody>".repeat(levels)
    )
}

/// Seven and nine nested `<prosody rate='50%'>` around "Hello there." give
/// at most 10 s of audio (the rates multiply within 0.5–2.0), and breaks
/// adding up past their cap are refused up front, naming `text`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_prosody_stays_within_its_ceiling() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = joe(&app, &key).await;
    for levels in [7, 9] {
        let r = app
            .post(
                "/v1/text-to-speech",
                &key,
                json!({"text": nested(levels), "voiceId": voice, "format": "wav"}),
            )
            .await;
        let job: Value = r.json().await.unwrap();
        assert_eq!(job["status"], "completed", "{job}");
        let seconds = job["result"]["duration"].as_f64().unwrap();
        assert!(seconds <= 10.0, "{levels} levels made {seconds} s");
        assert!(seconds > 0.5, "{levels} levels made {seconds} s");
    }
    let breaks = "<break time='10s'/>".repeat(4);
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": format!("<speak>Hi.{breaks}</speak>"), "voiceId": voice}),
        )
        .await;
    let e = assert_error(r, 422, "unprocessable_entity").await;
    assert_eq!(e["error"]["details"]["parameter"], "text");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("30 s"),
        "{e}"
    );
}

/// A 60-second MPEG-4 Part 2 video (not cut by copying: accurate mode
/// encodes all of it, for some seconds).
fn long_video(dir: &Path) -> Vec<u8> {
    let out = dir.join("long.avi");
    let source = "testsrc2=size=640x360:rate=25:duration=60";
    ffmpeg(
        &["-f", "lavfi", "-i", source, "-c:v", "mpeg4", "-q:v", "8"],
        &out,
    );
    std::fs::read(out).unwrap()
}

/// A cancelled trim's encoder is gone within 2 s of the cancel's 200: the
/// job's process groups are counted while it runs and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_trim_stops_its_encoder() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let r = app
        .post_form(
            "/v1/files",
            &key,
            form(vec![("file", long_video(dir.path()), "long.avi")], &[]),
        )
        .await;
    assert_eq!(r.status(), 201);
    let file: Value = r.json().await.unwrap();
    let r = app
        .client
        .post(format!("{}/v1/video/trim", app.addr))
        .bearer_auth(&key)
        .header("prefer", "respond-async")
        .json(&json!({
            "fileId": file["id"],
            "ranges": [{"start": 0, "end": 60}],
            "mode": "accurate",
            "format": "mp4"
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let job: Value = r.json().await.unwrap();
    let id = job["id"].as_str().unwrap().to_owned();
    // The encoder is the tool that runs on: a group seen alive for 300 ms
    // (the probes before it end in a few milliseconds, and under load the
    // job may be between two tools at any given instant).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen: Vec<u32> = Vec::new();
    let mut running: Option<(u32, Instant)> = None;
    loop {
        let now = groups_labelled(&id);
        for g in &now {
            if !seen.contains(g) {
                seen.push(*g);
            }
        }
        running = match running {
            Some((g, since)) if now.contains(&g) && group_alive(g) => Some((g, since)),
            _ => now
                .iter()
                .find(|g| group_alive(**g))
                .map(|g| (*g, Instant::now())),
        };
        if running.is_some_and(|(_, since)| since.elapsed() >= Duration::from_millis(300)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the trim never ran a tool for long: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = app.delete(&format!("/v1/jobs/{id}"), &key).await;
    assert_eq!(r.status(), 200);
    let cancelled = Instant::now();
    while seen.iter().any(|g| group_alive(*g)) || !groups_labelled(&id).is_empty() {
        assert!(
            cancelled.elapsed() < Duration::from_secs(2),
            "the job's tools outlived its cancel: {:?}",
            groups_labelled(&id)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let job = app.get_json(&format!("/v1/jobs/{id}"), &key).await;
    assert_eq!(job["status"], "cancelled", "{job}");
}

/// Rate limits count the account, whichever of its keys is used; an
/// account holds a bounded number of live keys.
async fn limits_bound_the_account(backend: Backend) {
    // The windows are aligned to the clock: start well inside a minute.
    let second = mediagen_core::time::now_ms() / 1000 % 60;
    if second > 40 {
        tokio::time::sleep(Duration::from_secs((61 - second) as u64)).await;
    }
    let app = TestApp::spawn_with(backend, |c| {
        c.rate_limit_per_minute = 6;
        c.max_keys_per_account = 3;
    })
    .await;
    let (account, admin) = app.account(100, "admin").await;
    // The account's admin key holds one of its three.
    let mut keys = Vec::new();
    for _ in 0..2 {
        let r = app.post("/v1/keys", &admin, json!({"level": "read"})).await;
        assert_eq!(r.status(), 201);
        keys.push(r.json::<Value>().await.unwrap());
    }
    let r = app.post("/v1/keys", &admin, json!({"level": "read"})).await;
    let e = assert_error(r, 409, "key_limit_exceeded").await;
    assert_eq!(e["error"]["details"]["limit"], 3);
    // The operator cannot add a fourth either.
    let r = app
        .post(
            &format!("/v1/accounts/{account}/keys"),
            &app.admin_key,
            json!({"level": "read"}),
        )
        .await;
    assert_error(r, 409, "key_limit_exceeded").await;
    // Three requests so far on the admin key; three more on the two others
    // use up the minute, and then no key of the account is served.
    let (one, two) = (
        keys[0]["key"].as_str().unwrap(),
        keys[1]["key"].as_str().unwrap(),
    );
    for key in [one, one, two] {
        assert_eq!(app.get("/v1/account", key).await.status(), 200);
    }
    for key in [one, two, &admin] {
        assert_error(
            app.get("/v1/account", key).await,
            429,
            "rate_limit_exceeded",
        )
        .await;
    }
    // Another account has its own count.
    let (_, other) = app.account(0, "read").await;
    assert_eq!(app.get("/v1/account", &other).await.status(), 200);
}

crate::on_both_backends!(limits_bound_the_account);

/// An MKV whose first pictures are 320×240 and whose later ones are
/// 4608×4608 (past the limits; the probe sees only the first size): the
/// decoders are capped, so the big pictures are never made, and what is
/// written holds only pictures within the limits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_growing_past_the_limits_are_never_decoded() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let part = |size: &str, seconds: &str, name: &str| {
        let out = dir.path().join(name);
        let source = format!("testsrc2=size={size}:rate=25:duration={seconds}");
        let x264 = [
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-x264-params",
            "level=6.2",
        ];
        let args = [&["-f", "lavfi", "-i", &source], &x264[..]].concat();
        ffmpeg(
            &[&args[..], &["-bsf:v", "h264_mp4toannexb", "-f", "h264"]].concat(),
            &out,
        );
        std::fs::read(out).unwrap()
    };
    let mut stream = part("320x240", "2", "small.h264");
    stream.extend(part("4608x4608", "0.2", "big.h264"));
    let joined = dir.path().join("joined.h264");
    std::fs::write(&joined, stream).unwrap();
    let mkv = dir.path().join("grow.mkv");
    let joined = joined.to_str().unwrap();
    ffmpeg(
        &["-f", "h264", "-framerate", "25", "-i", joined, "-c", "copy"],
        &mkv,
    );
    let r = app
        .post_form(
            "/v1/files",
            &key,
            form(
                vec![("file", std::fs::read(&mkv).unwrap(), "grow.mkv")],
                &[],
            ),
        )
        .await;
    assert_eq!(r.status(), 201, "the probe sees 320×240");
    let file: Value = r.json().await.unwrap();
    let r = app
        .post(
            "/v1/video/trim",
            &key,
            json!({"fileId": file["id"], "ranges": [{"start": 0, "end": 2.2}], "mode": "accurate", "format": "mkv"}),
        )
        .await;
    if r.status() != 200 {
        assert_error(r, 422, "unreadable_media").await;
        return;
    }
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    {
        let out = dir.path().join("out.mkv");
        std::fs::write(
            &out,
            app.download(job["result"]["videoUrl"].as_str().unwrap())
                .await,
        )
        .unwrap();
        let sizes = Command::new("ffprobe")
            .args([
                "-v",
                "error",
                "-select_streams",
                "v",
                "-show_entries",
                "frame=width,height",
                "-of",
                "csv=p=0",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let sizes = String::from_utf8(sizes.stdout).unwrap();
        assert!(!sizes.is_empty());
        assert!(sizes.lines().all(|l| l.trim() == "320,240"), "{sizes}");
    }
}

/// Seconds of sound ffmpeg decodes from `bytes` (a stream's start).
fn decoded_seconds(bytes: &[u8], name: &str) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let out = Command::new("ffmpeg")
        .args(["-v", "quiet", "-i"])
        .arg(&path)
        .args(["-f", "s16le", "-ac", "1", "-ar", "8000", "-"])
        .output()
        .unwrap();
    out.stdout.len() as f64 / 2.0 / 8000.0
}

/// A closed stream is charged for the audio delivered, whatever the format
/// or rate: FLAC (whose breaks are a few hundred bytes) and MP3 at 8 kHz,
/// closed at 40 % of their bytes, pay for the share of the pieces that
/// the bytes taken hold (the count by bytes at a nominal rate charged a
/// fraction of that). Kokoro speaks, slowly enough that the stream is
/// still being made when the client closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_streams_pay_for_the_audio_delivered() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let voice = app
        .first_voice(&app.admin_key, "engine=kokoro&language=en")
        .await;
    let sentences = [
        "The first sentence opens the story.",
        "A second one follows it closely.",
        "The third sentence is in the middle.",
        "Then comes the fourth of them.",
        "The fifth is nearly the last.",
        "And the sixth sentence ends it all.",
    ];
    let text = format!("<speak>{}</speak>", sentences.join(" <break time='4s'/> "));
    let (chars, pieces) = (text.chars().count() as f64, 11.0);
    for (format, rate) in [("flac", 24_000), ("mp3", 8_000)] {
        let body = json!({"text": text, "voiceId": voice, "format": format, "sampleRate": rate});
        let (_, key) = app.account(10_000, "write").await;
        let whole = crate::tts::stream(&app, &key, body.clone())
            .await
            .bytes()
            .await
            .unwrap()
            .to_vec();
        let total = decoded_seconds(&whole, &format!("whole.{format}"));
        let (_, key) = app.account(10_000, "write").await;
        let mut r = crate::tts::stream(&app, &key, body).await;
        let id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
        let mut got = Vec::new();
        while got.len() < whole.len() * 4 / 10 {
            got.extend_from_slice(&r.chunk().await.unwrap().expect("more audio"));
        }
        drop(r);
        let job = app
            .wait_job(&key, &id, Duration::from_secs(120), |j| {
                j["status"] == "failed" || j["status"] == "completed"
            })
            .await;
        assert_eq!(
            job["error"]["code"], "client_disconnected",
            "{format}: {job}"
        );
        let delivered = decoded_seconds(&got, &format!("part.{format}")) / total;
        let used = app.account_view(&key).await["credits"]["used"]
            .as_f64()
            .unwrap();
        // Pieces are sentences and breaks of unequal length: the share
        // charged is the delivered share of the sound within two pieces.
        let share = used / chars;
        assert!(
            (share - delivered).abs() <= 2.0 / pieces,
            "{format}: charged {used} of {chars} credits ({share:.2}) for {delivered:.2} of the sound"
        );
    }
}

/// An MP4 whose `mdat` is scrambled (the probe reads its header, the
/// decoders find garbage) is the client's 422 `unreadable_media` on
/// speech-to-text and on trims, and no answer names a tool or its exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_media_is_the_clients_422_without_tool_names() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let mp4 = dir.path().join("clip.mp4");
    let picture = "testsrc2=size=320x240:rate=25:duration=4";
    let sound = "sine=frequency=300:duration=4";
    let codecs = [
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-c:a",
        "aac",
        "-shortest",
    ];
    let inputs = ["-f", "lavfi", "-i", picture, "-f", "lavfi", "-i", sound];
    ffmpeg(
        &[&inputs[..], &codecs, &["-movflags", "+faststart"]].concat(),
        &mp4,
    );
    let mut bytes = std::fs::read(&mp4).unwrap();
    let mdat = bytes.windows(4).position(|w| w == b"mdat").unwrap();
    let mut x: u32 = 7;
    for b in &mut bytes[mdat + 68..] {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        *b = (x >> 16) as u8;
    }
    let r = app
        .post_form(
            "/v1/files",
            &key,
            form(vec![("file", bytes.clone(), "clip.mp4")], &[]),
        )
        .await;
    assert_eq!(r.status(), 201, "the probe reads the header");
    let file: Value = r.json().await.unwrap();
    let leaks = |text: &str| {
        let lower = text.to_lowercase();
        ["ffmpeg", "ffprobe", "exit status", "exit code"]
            .iter()
            .any(|t| lower.contains(t))
    };
    let r = app
        .post_form(
            "/v1/speech-to-text",
            &key,
            form(vec![("file", bytes, "clip.mp4")], &[]),
        )
        .await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(!leaks(&text), "{text}");
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("unreadable_media"), "{text}");
    let r = app
        .post(
            "/v1/video/trim",
            &key,
            json!({"fileId": file["id"], "ranges": [{"start": 0, "end": 3}], "mode": "accurate"}),
        )
        .await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(!leaks(&text), "{text}");
    assert!(status == 200 || status == 422, "{status}: {text}");
    if status == 422 {
        assert!(text.contains("unreadable_media"), "{text}");
    }
}
