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
        ("zero bytes", Vec::new(), &[400]),
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
    let voices: Value = app
        .get("/v1/voices?limit=1", &key)
        .await
        .json()
        .await
        .unwrap();
    let voice = voices["data"][0]["id"].as_str().unwrap().to_owned();
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
                || (allowed.contains(&200) && status == 201)
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
    let voices: Value = app
        .get("/v1/voices?limit=1", &key)
        .await
        .json()
        .await
        .unwrap();
    let voice = voices["data"][0]["id"].as_str().unwrap().to_owned();
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
