//! `POST /v1/video/trim` on videos the tests make with ffmpeg (testsrc2:
//! a picture that changes every frame, and a sine tone).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{assert_error, form, Backend, TestApp};

const FPS: f64 = 25.0;
/// Keyframes every 2 s.
const GOP: u32 = 50;

/// A 10-second 640×360 H.264 (with B-frames) + AAC mp4 with a keyframe
/// every `GOP` frames.
fn source(dir: &Path) -> PathBuf {
    let out = dir.join("source.mp4");
    let ok = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=640x360:rate=25:duration=10",
        ])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:duration=10"])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-g",
            &GOP.to_string(),
        ])
        .args([
            "-keyint_min",
            &GOP.to_string(),
            "-sc_threshold",
            "0",
            "-pix_fmt",
            "yuv420p",
        ])
        .args(["-c:a", "aac", "-shortest"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(ok.success());
    out
}

/// Every frame of a video as 32×18 grey pixels.
fn frames(path: &Path) -> Vec<Vec<u8>> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:v:0",
            "-fps_mode",
            "passthrough",
            "-vf",
            "scale=32:18,format=gray",
            "-f",
            "rawvideo",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout.chunks(32 * 18).map(<[u8]>::to_vec).collect()
}

/// The index of the source frame closest to `frame`.
fn which(source: &[Vec<u8>], frame: &[u8]) -> usize {
    let diff = |a: &[u8]| -> u64 {
        a.iter()
            .zip(frame)
            .map(|(x, y)| u64::from(x.abs_diff(*y)))
            .sum()
    };
    (0..source.len()).min_by_key(|&i| diff(&source[i])).unwrap()
}

fn stream_duration(path: &Path, stream: &str) -> f64 {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", stream, "-show_entries"])
        .args(["packet=pts_time,duration_time", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (p, d) = l.split_once(',')?;
            Some(p.parse::<f64>().ok()? + d.trim_end_matches(',').parse::<f64>().ok()?)
        })
        .fold(0.0, f64::max)
}

async fn upload(app: &TestApp, key: &str, bytes: Vec<u8>, name: &str) -> reqwest::Response {
    app.post_form("/v1/files", key, form(vec![("file", bytes, name)], &[]))
        .await
}

async fn trim(app: &TestApp, key: &str, body: Value, dir: &Path, name: &str) -> (Value, PathBuf) {
    let r = app.post("/v1/video/trim", key, body.clone()).await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{body} → {job}");
    let bytes = app
        .download(job["result"]["videoUrl"].as_str().unwrap())
        .await;
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    (job["result"].clone(), path)
}

/// Accurate trims keep exactly the frames asked for, in the order asked,
/// in every container, with the sound in step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accurate_trims_are_frame_exact() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let original = frames(&src);
    assert_eq!(original.len(), 250);
    let file: Value = upload(&app, &key, std::fs::read(&src).unwrap(), "in.mp4")
        .await
        .json()
        .await
        .unwrap();

    // (ranges, format): one range; several out of order with a timestamp
    // string; ranges touching both ends.
    let cases = [
        (json!([{"start": 1.24, "end": 7.6}]), "mp4"),
        (
            json!([{"start": 6.0, "end": "00:00:09.480"}, {"start": 0.52, "end": 4.04}]),
            "mkv",
        ),
        (
            json!([{"start": 0, "end": 4.4}, {"start": 9.2, "end": 10}]),
            "mov",
        ),
        (json!([{"start": 4.4, "end": 5.6}]), "webm"),
    ];
    for (i, (ranges, format)) in cases.iter().enumerate() {
        let body = json!({"fileId": file["id"], "ranges": ranges, "format": format});
        let (result, out) = trim(&app, &key, body, dir.path(), &format!("out{i}.{format}")).await;
        let mut expected = Vec::new();
        for r in ranges.as_array().unwrap() {
            let t = |v: &Value| {
                v.as_f64().unwrap_or_else(|| {
                    let s = v.as_str().unwrap();
                    let p: Vec<f64> = s.split(':').map(|x| x.parse().unwrap()).collect();
                    p[0] * 3600.0 + p[1] * 60.0 + p[2]
                })
            };
            let (a, b) = (
                (t(&r["start"]) * FPS).round() as usize,
                (t(&r["end"]) * FPS).round() as usize,
            );
            expected.extend(a..b);
        }
        let got: Vec<usize> = frames(&out).iter().map(|f| which(&original, f)).collect();
        assert_eq!(got, expected, "{format}: {ranges}");
        let seconds = expected.len() as f64 / FPS;
        assert!(
            (result["duration"].as_f64().unwrap() - seconds).abs() < 0.05,
            "{result}"
        );
        assert_eq!(
            (result["width"].as_u64(), result["height"].as_u64()),
            (Some(640), Some(360))
        );
        assert_eq!(result["fps"], 25.0);
        // H.264 sources are cut smartly (only around the cuts re-encoded),
        // except into webm, which needs VP9 throughout.
        if *format == "webm" {
            assert_eq!(result["method"], "reencode", "{result}");
            assert!(result["fallbackReason"].is_string());
        } else {
            assert_eq!(result["method"], "smart_cut", "{result}");
            assert!(
                result["reencodedSeconds"].as_f64().unwrap() < seconds,
                "{result}"
            );
        }
        let (v, a) = (stream_duration(&out, "v:0"), stream_duration(&out, "a:0"));
        assert!(
            (v - a).abs() <= 1.0 / FPS + 0.001,
            "{format}: video {v} s, audio {a} s"
        );
    }
}

/// Fast trims copy the streams: starts snap to the keyframe before them, a
/// mid-GOP end moves on only to where the B-frame order closes (a few
/// frames), and the result says so; the frames kept are exactly those.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_trims_snap_to_keyframes() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let (account, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let original = frames(&src);
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(std::fs::read(&src).unwrap()).file_name("in.mp4"),
        )
        .text(
            "ranges",
            r#"[{"start": 2.6, "end": 3.5}, {"start": 6.1, "end": 8.0}]"#,
        )
        .text("mode", "fast");
    let job: Value = app
        .client
        .post(format!("{}/v1/video/trim", app.addr))
        .bearer_auth(&key)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    let r = &job["result"];
    assert_eq!(r["method"], "stream_copy");
    let first_end = r["ranges"][0]["end"].as_f64().unwrap();
    assert!((3.5..3.5 + 4.0 / FPS).contains(&first_end), "{r}");
    assert_eq!(
        r["ranges"],
        json!([{"start": 2.0, "end": first_end}, {"start": 6.0, "end": 8.0}])
    );
    let kept = first_end - 2.0 + 2.0;
    assert!((r["duration"].as_f64().unwrap() - kept).abs() < 0.1, "{r}");
    // Billed by the output seconds asked for: 0.9 + 1.9 → 3 credits.
    assert_eq!(job["credits"], 3);
    let bytes = app.download(r["videoUrl"].as_str().unwrap()).await;
    let out = dir.path().join("fast.mp4");
    std::fs::write(&out, bytes).unwrap();
    let got: Vec<usize> = frames(&out).iter().map(|f| which(&original, f)).collect();
    let first_end = (first_end * FPS).round() as usize;
    let expected: Vec<usize> = (50..first_end).chain(150..200).collect();
    assert_eq!(got, expected);
    // The copied sound stays with the picture: within a frame and an AAC
    // packet (1024 samples at 44.1 kHz).
    let (sound, picture) = (stream_duration(&out, "a:0"), stream_duration(&out, "v:0"));
    assert!(
        (sound - picture).abs() <= 1.0 / FPS + 1024.0 / 44_100.0,
        "sound {sound} s, picture {picture} s"
    );
    let view = app.account_view(&key).await;
    assert_eq!(view["credits"]["balance"], 10_000 - 3, "{view} {account}");
}

async fn bad_trims_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(10_000, "write").await;
    let (_, other) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read(source(dir.path())).unwrap();

    // A text file named .mp4; an HLS playlist and a concat list naming a
    // local file (refused before any tool opens them); a truncated mp4.
    let secret = dir.path().join("secret.mp4");
    std::fs::write(&secret, &src).unwrap();
    for text in [
        "this is not a video".to_owned(),
        format!(
            "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile://{}\n#EXT-X-ENDLIST\n",
            secret.display()
        ),
        format!("ffconcat version 1.0\nfile '{}'\n", secret.display()),
    ] {
        let b = assert_error(
            upload(&app, &key, text.into_bytes(), "clip.mp4").await,
            415,
            "unsupported_media_type",
        )
        .await;
        assert_eq!(b["error"]["details"]["parameter"], "file");
    }
    let mut truncated = src.clone();
    truncated.truncate(src.len() / 3);
    assert_error(
        upload(&app, &key, truncated, "clip.mp4").await,
        422,
        "unreadable_media",
    )
    .await;

    let file: Value = upload(&app, &key, src, "in.mp4")
        .await
        .json()
        .await
        .unwrap();
    let id = file["id"].as_str().unwrap();
    for (ranges, index) in [
        (json!([{"start": 2, "end": 12}]), 0),
        (json!([{"start": 1, "end": 2}, {"start": 5, "end": 5}]), 1),
        (json!([{"start": 4, "end": 3}]), 0),
    ] {
        let b = assert_error(
            app.post(
                "/v1/video/trim",
                &key,
                json!({"fileId": id, "ranges": ranges}),
            )
            .await,
            422,
            "invalid_range",
        )
        .await;
        assert_eq!(b["error"]["details"]["index"], index, "{ranges}");
    }
    for (body, parameter) in [
        (json!({"fileId": id}), "ranges"),
        (json!({"fileId": id, "ranges": []}), "ranges"),
        (
            json!({"fileId": id, "ranges": [{"start": "1:xx", "end": 2}]}),
            "ranges",
        ),
        (
            json!({"fileId": id, "ranges": [{"start": 1, "end": 2}], "mode": "magic"}),
            "mode",
        ),
        (
            json!({"fileId": id, "ranges": [{"start": 1, "end": 2}], "format": "avi"}),
            "format",
        ),
    ] {
        let b = assert_error(
            app.post("/v1/video/trim", &key, body.clone()).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(b["error"]["details"]["parameter"], parameter, "{body}");
    }
    // Clamped instead of refused when asked; priced by a dry run.
    let r: Value = app
        .post("/v1/video/trim", &key, json!({"fileId": id, "ranges": [{"start": 8, "end": 12}], "clamp": true, "dryRun": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["estimatedCredits"], 2, "{r}");
    // Another account's file does not exist for this key.
    assert_error(
        app.post(
            "/v1/video/trim",
            &other,
            json!({"fileId": id, "ranges": [{"start": 1, "end": 2}]}),
        )
        .await,
        404,
        "resource_not_found",
    )
    .await;
}

crate::on_both_backends!(bad_trims_are_refused);
