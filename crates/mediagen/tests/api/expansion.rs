//! `POST /v1/avatar-expansion`: clips made exactly as long as asked in
//! every mode, seamless seams measured on the decoded output, talking
//! presenters driven by a voice track, and bad inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{assert_error, ffmpeg, form, Backend, TestApp};

/// Thumbnail side used to compare frames.
const SIDE: usize = 64;

/// A 5-second 320×240 clip at 25 fps of a quasi-periodic motion (a 0.7 Hz
/// wave with its harmonic, and a slow 0.23 Hz one that makes every frame
/// unique): like an idle presenter, no whole loop of it is exact.
fn clip(dir: &Path) -> PathBuf {
    let out = dir.join("idle.mp4");
    let graph = "nullsrc=s=320x240:r=25:d=5,geq=lum='128+60*sin(X/16+2*PI*0.7*T)+30*sin(Y/24+2*PI*1.4*T)+12*sin((X+Y)/30+2*PI*0.23*T)':cb=128:cr=128";
    ffmpeg(
        &[
            "-f", "lavfi", "-i", graph, "-c:v", "libx264", "-pix_fmt", "yuv420p",
        ],
        &out,
    );
    out
}

/// Every frame of a video as grey thumbnails.
fn frames(path: &Path) -> Vec<Vec<u8>> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-map", "0:v:0", "-fps_mode", "passthrough", "-vf"])
        .arg(format!("scale={SIDE}:{SIDE},format=gray"))
        .args(["-f", "rawvideo", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout.chunks(SIDE * SIDE).map(<[u8]>::to_vec).collect()
}

/// Mean absolute difference of two thumbnails, in grey levels.
fn diff(a: &[u8], b: &[u8]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| x.abs_diff(y) as f64)
        .sum::<f64>()
        / a.len() as f64
}

fn largest_step(frames: &[Vec<u8>]) -> f64 {
    frames
        .windows(2)
        .map(|w| diff(&w[0], &w[1]))
        .fold(0.0, f64::max)
}

/// Stream durations (seconds) of a file's video and audio.
fn durations(path: &Path) -> (f64, Option<f64>) {
    let probe = |stream: &str| {
        let out = Command::new("ffprobe")
            .args(["-v", "error", "-select_streams", stream, "-show_entries"])
            .args(["stream=duration", "-of", "csv=p=0"])
            .arg(path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<f64>()
            .ok()
    };
    (probe("v:0").expect("a video stream"), probe("a:0"))
}

async fn upload(app: &TestApp, key: &str, path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let files = vec![("file", std::fs::read(path).unwrap(), name.as_str())];
    let r = app.post_form("/v1/files", key, form(files, &[])).await;
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs an expansion to completion and downloads its video.
async fn expand(app: &TestApp, key: &str, body: Value, out: &Path) -> Value {
    let job: Value = app
        .post("/v1/avatar-expansion", key, body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{body} → {job}");
    let bytes = app
        .download(job["result"]["videoUrl"].as_str().unwrap())
        .await;
    std::fs::write(out, bytes).unwrap();
    job["result"].clone()
}

/// The source frame each output frame shows (the nearest one).
fn positions(source: &[Vec<u8>], output: &[Vec<u8>]) -> Vec<usize> {
    output
        .iter()
        .map(|f| {
            (0..source.len())
                .min_by(|&a, &b| diff(&source[a], f).total_cmp(&diff(&source[b], f)))
                .unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by `make test-long`"]
async fn every_mode_hits_the_exact_length() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let src = clip(dir.path());
    let source = frames(&src);
    assert_eq!(source.len(), 125);
    let file = upload(&app, &key, &src).await;
    let before = app.account_view(&key).await["credits"]["balance"]
        .as_i64()
        .unwrap();

    let mut seams = Vec::new();
    // Seamless long enough for many seams (7.5 times the clip); the others
    // two and a half times it.
    for (mode, seconds) in [
        ("seamless", 37.4),
        ("loop", 12.4),
        ("pingpong", 12.4),
        ("freeze", 12.4),
    ] {
        let out = dir.path().join(format!("{mode}.mp4"));
        let result = expand(
            &app,
            &key,
            json!({"fileId": file, "duration": seconds, "mode": mode}),
            &out,
        )
        .await;
        let output = frames(&out);
        // At 25 fps, give or take one frame.
        let expected = (seconds * 25.0_f64).round() as usize;
        assert!(
            output.len().abs_diff(expected) <= 1,
            "{mode}: {} frames",
            output.len()
        );
        let (video, audio) = durations(&out);
        assert!((video - seconds).abs() <= 0.04, "{mode}: {video} s");
        assert_eq!(audio, None, "silent without audioFileId");
        assert_eq!(result["duration"], seconds);
        assert_eq!(
            (result["width"].as_u64(), result["fps"].as_f64()),
            (Some(320), Some(25.0))
        );
        assert_eq!(result["mode"], mode);
        seams.push(result["seamScore"].as_f64().unwrap());

        if mode == "seamless" {
            assert!(result["jumps"].as_u64().unwrap() >= 5, "{result}");
            // No seam jolts more than the source's own largest change.
            let (ours, theirs) = (largest_step(&output), largest_step(&source));
            assert!(
                ours <= 1.5 * theirs,
                "largest step {ours} vs source {theirs}"
            );
            // The output shows the source's frames in runs joined by jumps;
            // no jump (a loop) is taken more than three times in a row.
            let at = positions(&source, &output);
            let jumps: Vec<(usize, usize)> = at
                .windows(2)
                .filter(|w| w[1] != w[0] + 1)
                .map(|w| (w[0], w[1]))
                .collect();
            assert!(jumps.len() >= 5, "{jumps:?}");
            let longest = jumps
                .chunk_by(|a, b| a == b)
                .map(<[(usize, usize)]>::len)
                .max()
                .unwrap();
            assert!(longest <= 3, "{jumps:?}");
        }
        if mode == "loop" {
            // A plain loop jolts where the clip starts over.
            assert!(largest_step(&output) > 3.0 * largest_step(&source));
        }
    }
    // Other containers: VP9 in webm, H.264 in mov and mkv.
    for format in ["webm", "mov", "mkv"] {
        let out = dir.path().join(format!("short.{format}"));
        let result = expand(
            &app,
            &key,
            json!({"fileId": file, "duration": 2, "format": format}),
            &out,
        )
        .await;
        assert_eq!(result["format"], format);
        assert_eq!(frames(&out).len(), 50, "{format}");
    }
    // Seamless seams score better than looping or bouncing.
    assert!(seams[0] < seams[1] && seams[0] < seams[2], "{seams:?}");
    // Seconds rounded up: 38 for seamless, 13 for each of the other three,
    // 2 for each short one.
    let after = app.account_view(&key).await["credits"]["balance"]
        .as_i64()
        .unwrap();
    assert_eq!(before - after, 38 + 3 * 13 + 3 * 2);
}

/// A built-in presenter with a voice track talks: the video lasts as long
/// as the voice, which is its sound, and the mouth moves only while the
/// voice speaks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presenters_talk_over_a_voice_track() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    // 1.5 s of speech, then 2.5 s of silence.
    let speech = dir.path().join("speech.wav");
    let ok = Command::new("espeak-ng")
        .args(["-w"])
        .arg(&speech)
        .arg("Hello there, welcome.")
        .status()
        .unwrap();
    assert!(ok.success());
    let voice = dir.path().join("voice.wav");
    ffmpeg(
        &[
            "-i",
            speech.to_str().unwrap(),
            "-af",
            "atrim=0:1.5,apad=whole_dur=4",
            "-ar",
            "22050",
        ],
        &voice,
    );
    let audio = upload(&app, &key, &voice).await;
    let out = dir.path().join("talking.mp4");
    let result = expand(
        &app,
        &key,
        json!({"avatarId": "av_ada", "audioFileId": audio}),
        &out,
    )
    .await;
    assert_eq!(result["mode"], "talking");
    let (video, sound) = durations(&out);
    let sound = sound.expect("the voice is the video's sound");
    assert!((video - 4.0).abs() <= 0.04, "{video}");
    assert!(
        (video - sound).abs() <= 0.04,
        "video {video} s, audio {sound} s"
    );

    // Against the idle loop of the same presenter: the same picture while
    // silent, an open mouth while speaking.
    let idle_clip = dir.path().join("idle.mp4");
    let avatar: Value = app
        .get("/v1/avatars/av_ada", &key)
        .await
        .json()
        .await
        .unwrap();
    let bytes = app
        .download(avatar["previewVideoUrl"].as_str().unwrap())
        .await;
    std::fs::write(&idle_clip, bytes).unwrap();
    let (idle, talking) = (frames(&idle_clip), frames(&out));
    assert_eq!(talking.len(), 100);
    let change = |range: std::ops::Range<usize>| {
        range
            .clone()
            .map(|k| diff(&talking[k], &idle[k % idle.len()]))
            .sum::<f64>()
            / range.len() as f64
    };
    let (speaking, silent) = (change(5..35), change(60..100));
    assert!(
        speaking > 3.0 * silent.max(0.05),
        "speaking {speaking}, silent {silent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_expansions_are_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let tone = dir.path().join("tone.wav");
    ffmpeg(
        &["-f", "lavfi", "-i", "sine=frequency=300:duration=2"],
        &tone,
    );
    let audio = upload(&app, &key, &tone).await;
    for (body, status, code, parameter) in [
        (
            json!({"avatarId": "av_ada", "duration": 0}),
            422,
            "unprocessable_entity",
            "duration",
        ),
        (
            json!({"avatarId": "av_ada", "duration": -2}),
            422,
            "unprocessable_entity",
            "duration",
        ),
        (
            json!({"avatarId": "av_ada", "duration": 601}),
            422,
            "unprocessable_entity",
            "duration",
        ),
        (
            json!({"fileId": audio, "duration": 10}),
            422,
            "unprocessable_entity",
            "fileId",
        ),
        (
            json!({"avatarId": "av_ada"}),
            400,
            "invalid_parameter",
            "duration",
        ),
        (
            json!({"avatarId": "av_ada", "duration": 3, "audioFileId": audio}),
            400,
            "invalid_parameter",
            "duration",
        ),
        (
            json!({"avatarId": "av_ada", "duration": 3, "mode": "bounce"}),
            400,
            "invalid_parameter",
            "mode",
        ),
        (json!({"duration": 3}), 400, "invalid_parameter", "avatarId"),
    ] {
        let e = assert_error(
            app.post("/v1/avatar-expansion", &key, body.clone()).await,
            status,
            code,
        )
        .await;
        assert_eq!(e["error"]["details"]["parameter"], parameter, "{body}");
    }
    // An audio-only upload as the avatar.
    let files = vec![("file", std::fs::read(&tone).unwrap(), "tone.wav")];
    let r = app
        .post_form(
            "/v1/avatar-expansion",
            &key,
            form(files, &[("duration", "5")]),
        )
        .await;
    let e = assert_error(r, 422, "unprocessable_entity").await;
    assert_eq!(e["error"]["details"]["parameter"], "file");
    // The same audio stored first, named by its id.
    let e = assert_error(
        app.post(
            "/v1/avatar-expansion",
            &key,
            json!({"fileId": audio, "duration": 5}),
        )
        .await,
        422,
        "unprocessable_entity",
    )
    .await;
    assert_eq!(e["error"]["details"]["parameter"], "fileId");
    for body in [
        json!({"avatarId": "av_nobody", "duration": 3}),
        json!({"fileId": "file_nope", "duration": 3}),
        json!({"avatarId": "av_ada", "audioFileId": "file_nope"}),
    ] {
        assert_error(
            app.post("/v1/avatar-expansion", &key, body).await,
            404,
            "resource_not_found",
        )
        .await;
    }
    // A dry run prices without a job: 1 credit a second, rounded up.
    let r: Value = app
        .post(
            "/v1/avatar-expansion",
            &key,
            json!({"avatarId": "av_ada", "duration": 12.2, "dryRun": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["estimatedCredits"], 13, "{r}");
}
