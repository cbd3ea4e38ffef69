//! Hostile media sent to every endpoint that takes media: each is refused
//! before any work (or fails and is refunded), nothing outside the upload
//! is read, and no answer carries a server path or a tool's output.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{form, Backend, TestApp};

/// An endpoint that takes media: its path, the name of its file part, and
/// the fields it needs besides the file.
type Endpoint = (&'static str, &'static str, Vec<(&'static str, String)>);

/// Every endpoint that takes media.
fn endpoints(voice: &str) -> Vec<Endpoint> {
    vec![
        ("/v1/files", "file", vec![]),
        ("/v1/speech-to-text", "file", vec![]),
        (
            "/v1/voice-changer",
            "file",
            vec![("voiceId", voice.to_owned())],
        ),
        (
            "/v1/dubbing",
            "file",
            vec![("targetLanguage", "es".to_owned())],
        ),
        ("/v1/video/trim", "file", vec![("ranges", "0-1".to_owned())]),
        ("/v1/avatars", "file", vec![("name", "x".to_owned())]),
        (
            "/v1/avatar-expansion",
            "file",
            vec![("duration", "5".to_owned())],
        ),
        (
            "/v1/voices",
            "files",
            vec![("name", "x".to_owned()), ("consent", "true".to_owned())],
        ),
    ]
}

/// Media made by ffmpeg from its test sources (written to a file, so that
/// containers get their lengths in their headers).
fn ffmpeg(args: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&path).unwrap()
}

/// `seconds` of silence as constant-rate mp3 without a header that states
/// the length: ten seconds encoded once, then repeated frame for frame (so
/// a three-hour file takes no time to make and is 11 MB).
pub fn long_mp3(seconds: u32) -> Vec<u8> {
    let piece = ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "anullsrc=r=8000:cl=mono",
        "-t",
        "10",
        "-c:a",
        "libmp3lame",
        "-b:a",
        "8k",
        "-write_xing",
        "0",
        "-id3v2_version",
        "0",
        "-f",
        "mp3",
    ]);
    piece.repeat((seconds / 10) as usize)
}

/// Hostile inputs, each with the statuses it may get.
fn hostile(target: &str) -> Vec<(&'static str, Vec<u8>, &'static [u16])> {
    let with_control = |s: String| {
        let mut b = s.into_bytes();
        b.insert(8, 1);
        b
    };
    let hls = format!(
        "#EXTM3U\n#EXT-X-TARGETDURATION:60\n#EXTINF:60.0,\nfile://{target}\n#EXT-X-ENDLIST\n"
    );
    let hls_url = "#EXTM3U\n#EXTINF:0.001,\nhttp://127.0.0.1:9/x.mp3\n#EXT-X-ENDLIST\n".to_owned();
    let concat = format!("ffconcat version 1.0\nfile '{target}'\n");
    let wide = ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "color=s=8200x16:d=2:r=2",
        "-c:v",
        "png",
        "-f",
        "matroska",
    ]);
    let mut flipped = ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=s=64x64:d=1",
        "-f",
        "lavfi",
        "-i",
        "sine=d=1",
        "-shortest",
        "-c:v",
        "mpeg4",
        "-c:a",
        "aac",
        "-f",
        "mp4",
    ]);
    let truncated = flipped[..flipped.len() * 6 / 10].to_vec();
    for i in (40..flipped.len()).step_by(7) {
        flipped[i] ^= 0x5a;
    }
    let mut liar = b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec();
    liar.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    vec![
        (
            "hls playlist of a local file",
            hls.clone().into_bytes(),
            &[415],
        ),
        (
            "hls playlist with a control byte",
            with_control(hls),
            &[415],
        ),
        ("hls playlist of a URL", with_control(hls_url), &[415]),
        ("concat list", with_control(concat.clone()), &[415]),
        ("concat list as text", concat.into_bytes(), &[415]),
        (
            "an image sequence pattern",
            with_control("frame-%03d.png\n".into()),
            &[415],
        ),
        ("zero bytes", Vec::new(), &[415]),
        ("a picture 8200 pixels wide", wide, &[422]),
        // Last: these may pass the probe, then fail (refunded) or succeed.
        ("noise claiming to be mp3", liar, &[415, 422, 200, 202]),
        ("bit-flipped mp4", flipped, &[415, 422, 200, 202]),
        ("truncated mp4", truncated, &[415, 422, 200, 202]),
    ]
}

async fn hostile_media_is_refused_everywhere(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.sync_wait_seconds = 60.0).await;
    let (_, key) = app.account(100_000, "write").await;
    let data_dir = app.data_dir.path().to_string_lossy().into_owned();
    // Another account's sound, which the playlists point at.
    let (_, other) = app.account(100, "write").await;
    let job: Value = app
        .test_job(&other, json!({"output": "secret"}))
        .await
        .json()
        .await
        .unwrap();
    let stored = format!("jobs/{}/speech.wav", job["id"].as_str().unwrap());
    let sound = ffmpeg(&["-f", "lavfi", "-i", "sine=d=3", "-f", "wav"]);
    app.state.blobs.put(&stored, sound.into()).await.unwrap();
    let target = format!(
        "{}/blobs/{stored}",
        std::fs::canonicalize(&data_dir).unwrap().display()
    );
    assert!(std::path::Path::new(&target).exists(), "{target}");
    let voice = app.any_voice(&key).await;
    let before = app.account_view(&key).await["credits"].clone();

    for (name, bytes, allowed) in hostile(&target) {
        if allowed.contains(&200) {
            // Every refusal so far held no credits.
            assert_eq!(app.account_view(&key).await["credits"], before);
        }
        for (path, part, fields) in endpoints(&voice) {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = app
                .post_form(
                    path,
                    &key,
                    form(vec![(part, bytes.clone(), "input.mp3")], &fields),
                )
                .await;
            let status = r.status().as_u16();
            let body = r.text().await.unwrap();
            // Jobs that passed the probe must end failed or completed.
            let ok = allowed.contains(&status)
                || (allowed.contains(&200) && (status == 201 || status == 202))
                || (allowed.contains(&200) && status == 500 && body.contains("job_failed"));
            assert!(ok, "{name} → {path}: {status} {body}");
            for leak in [
                data_dir.as_str(),
                "/tmp",
                "ffmpeg",
                "ffprobe",
                "Invalid data",
                "speech.wav",
            ] {
                assert!(
                    !body.contains(leak),
                    "{name} → {path} leaks `{leak}`: {body}"
                );
            }
            if status == 415 {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["error"]["code"], "unsupported_media_type", "{body}");
            }
            if status == 422 && name.contains("wide") {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert!(
                    v["error"]["details"]["limit"] == "max_side"
                        || v["error"]["message"].as_str().unwrap().contains("picture"),
                    "{body}"
                );
            }
        }
    }
    // Jobs that ran end failed (refunded) or completed: none is left holding.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let jobs: Value = app
            .get("/v1/jobs?limit=100", &key)
            .await
            .json()
            .await
            .unwrap();
        let open = jobs["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["status"] == "queued" || j["status"] == "processing")
            .count();
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} jobs never finished");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A three-hour file (11 MB) is refused by every media endpoint on its
/// probe, fast, naming the limit; nothing is decoded.
async fn long_inputs_are_refused_before_decoding(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(100_000, "write").await;
    let voice = app.any_voice(&key).await;
    let long = long_mp3(3 * 3600);
    for (path, part, fields) in endpoints(&voice) {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let started = Instant::now();
        let r = app
            .post_form(
                path,
                &key,
                form(vec![(part, long.clone(), "long.mp3")], &fields),
            )
            .await;
        let took = started.elapsed();
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 422, "{path}: {v}");
        let details = &v["error"]["details"];
        assert!(
            details["limit"] == "max_seconds"
                || v["error"]["message"].as_str().unwrap().contains("picture"),
            "{path}: {v}"
        );
        assert!(took < Duration::from_secs(2), "{path} took {took:?}");
    }
}

crate::on_both_backends!(
    hostile_media_is_refused_everywhere,
    long_inputs_are_refused_before_decoding
);

/// A real `mediagen serve` process keeps its memory while a three-hour
/// file goes to every media endpoint (each refused in under 2 s) and while
/// a 100 MB chunked form of text fields arrives: peak resident memory grows
/// by under 100 MB. Runs once, on SQLite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_do_not_grow_the_server() {
    use crate::stt_long::memory;
    use futures::StreamExt;

    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.workers = 0).await;
    let (_, key) = app.account(100_000, "write").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_mediagen"))
        .arg("serve")
        .env("MEDIAGEN_DATABASE_URL", app.database_url())
        .env("MEDIAGEN_DATA_DIR", app.data_dir.path())
        .env("MEDIAGEN_MODELS_DIR", crate::helpers::models_dir())
        .env("MEDIAGEN_BIND", format!("127.0.0.1:{port}"))
        .env("MEDIAGEN_WORKERS", "0")
        .env("MEDIAGEN_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = server.id().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while app
        .client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .map(|r| r.status() != 200)
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the server never became ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let send = |path: &'static str,
                part: &'static str,
                fields: Vec<(&'static str, String)>,
                bytes: Vec<u8>| {
        let mut f = reqwest::multipart::Form::new().part(
            part,
            reqwest::multipart::Part::bytes(bytes).file_name("long.mp3"),
        );
        for (k, v) in fields {
            f = f.text(k, v);
        }
        app.client
            .post(format!("{base}{path}"))
            .bearer_auth(&key)
            .header("connection", "close")
            .multipart(f)
            .send()
    };
    let voice = app.any_voice(&key).await;
    // Warm-up: every endpoint once with a small refusal, so what is
    // measured after is what the hostile bodies add.
    for (path, part, fields) in endpoints(&voice) {
        let r = send(path, part, fields, b"not media at all".to_vec())
            .await
            .unwrap();
        assert_eq!(r.status(), 415, "{path}");
    }
    let before = memory(pid, "VmHWM:");

    let long = long_mp3(3 * 3600);
    for (path, part, fields) in endpoints(&voice) {
        let started = Instant::now();
        let r = send(path, part, fields, long.clone()).await.unwrap();
        assert_eq!(r.status(), 422, "{path}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{path}: {:?}",
            started.elapsed()
        );
    }
    let after_long = memory(pid, "VmHWM:");

    // 100 MB of text fields, chunked (no length given): refused as the
    // text limit passes; the client may see the answer or a closed socket.
    let boundary = "XBOUNDARYX";
    let field = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\n{}\r\n",
        "z".repeat(60 * 1024)
    );
    let count = 100 * 1024 * 1024 / field.len();
    let body =
        futures::stream::iter((0..count).map(move |_| Ok::<_, std::io::Error>(field.clone())))
            .chain(futures::stream::once(async move {
                Ok(format!("--{boundary}--\r\n"))
            }));
    let r = app
        .client
        .post(format!("{base}/v1/speech-to-text"))
        .bearer_auth(&key)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await;
    if let Ok(r) = r {
        assert_eq!(r.status(), 400);
    }
    let after_text = memory(pid, "VmHWM:");
    let mb = |b: u64| b as f64 / 1e6;
    eprintln!(
        "memory test: peak {:.1} MB before, +{:.1} MB after the 3-hour file on every endpoint, +{:.1} MB after 100 MB of text fields",
        mb(before),
        mb(after_long.saturating_sub(before)),
        mb(after_text.saturating_sub(after_long))
    );
    assert!(
        after_long.saturating_sub(before) < 100_000_000,
        "{} MB",
        mb(after_long - before)
    );
    assert!(
        after_text.saturating_sub(before) < 100_000_000,
        "{} MB",
        mb(after_text - before)
    );
    let _ = server.kill().await;
}
