//! The command-line client (`mediagen tts`, `stt`, `trim`, `dub`, `voices`,
//! `avatars`, `sound`, `image`, `jobs`, `account`), run as the built
//! binary against a test server, reaching it through `MEDIAGEN_URL` and
//! `MEDIAGEN_API_KEY` as a user's shell would. Each command's output is
//! checked for what it holds, and failures for their exit codes and the
//! API's message.

use std::path::Path;
use std::process::Command as StdCommand;

use serde_json::{json, Value};

use crate::helpers::{ffmpeg, probe_seconds, talking_video, Backend, TestApp};

/// What a run of `mediagen …` printed, and its exit code.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(self) -> String {
        assert_eq!(
            self.code, 0,
            "stderr: {}\nstdout: {}",
            self.stderr, self.stdout
        );
        self.stdout
    }

    fn json(self) -> Value {
        let out = self.ok();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }
}

/// Runs the binary with `env` (and nothing else of this process's
/// `MEDIAGEN_*` settings, nor a client config file of the user's).
async fn mediagen(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mediagen"));
    for (name, _) in std::env::vars() {
        if name.starts_with("MEDIAGEN_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("XDG_CONFIG_HOME", "/nonexistent").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_drives_every_capability_with_exit_codes() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(100_000, "write").await;
    let env = [
        ("MEDIAGEN_URL", app.addr.as_str()),
        ("MEDIAGEN_API_KEY", key.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);

    // voices: a filtered list, as JSON and as a table.
    let voices = mediagen(&["voices", "--language", "es", "--json"], &env)
        .await
        .json();
    let voices = voices.as_array().unwrap();
    assert!(!voices.is_empty());
    assert!(voices
        .iter()
        .all(|v| v["language"].as_str().unwrap().starts_with("es")));
    let english = app.first_voice(&key, "language=en").await;
    let table = mediagen(&["voices", "--language", "en"], &env).await.ok();
    assert!(table.starts_with("ID"), "{table}");
    assert!(table.contains(&english), "{table}");

    // tts → a real mp3 of the spoken length; stt reads it back as srt.
    let speech = d("hello.mp3");
    let said = "The quick brown fox jumps over the lazy dog.";
    let out = mediagen(
        &["tts", said, "--voice", &english, "-o", path(&speech)],
        &env,
    )
    .await
    .ok();
    assert!(
        out.starts_with(&format!("wrote {}", speech.display())),
        "{out}"
    );
    let seconds = probe_seconds(&speech);
    assert!((1.5..8.0).contains(&seconds), "{seconds}");
    let srt = mediagen(&["stt", path(&speech), "--format", "srt"], &env)
        .await
        .ok();
    assert!(srt.starts_with("1\n00:00:0"), "{srt}");
    assert!(srt.to_lowercase().contains("lazy dog"), "{srt}");
    // The upload served its one job and is gone.
    let files: Value = app.get("/v1/files", &key).await.json().await.unwrap();
    assert_eq!(files["pagination"]["total"], 0, "{files}");

    // trim two ranges of a 30 s video: 10 s remain.
    let video = d("in.mp4");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=d=30:size=160x120:rate=25",
            "-f",
            "lavfi",
            "-i",
            "sine=d=30",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
        &video,
    );
    let cut = d("cut.mp4");
    let job = mediagen(
        &[
            "trim",
            path(&video),
            "--range",
            "5-10",
            "--range",
            "0:20-0:25",
            "-o",
            path(&cut),
            "--json",
        ],
        &env,
    )
    .await
    .json();
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["kind"], "video.trim", "{job}");
    let kept = probe_seconds(&cut);
    assert!((9.8..10.3).contains(&kept), "{kept}");

    // dub a spoken video into Spanish.
    let wav = d("en.wav");
    let ok = StdCommand::new("espeak-ng")
        .args([
            "-v",
            "en-us",
            "-w",
            path(&wav),
            "Good morning. The weather is fine today.",
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    let talk = d("talk.mp4");
    talking_video(&wav, &talk);
    let dubbed = d("dubbed.mp4");
    mediagen(
        &["dub", path(&talk), "--to", "es", "-o", path(&dubbed)],
        &env,
    )
    .await
    .ok();
    assert!((probe_seconds(&dubbed) - probe_seconds(&talk)).abs() < 0.5);

    // sound and image: the files are what their names say.
    let rain = d("rain.wav");
    mediagen(
        &[
            "sound",
            "rain on a tin roof",
            "--duration",
            "2",
            "-o",
            path(&rain),
        ],
        &env,
    )
    .await
    .ok();
    assert_eq!(&std::fs::read(&rain).unwrap()[..4], b"RIFF");
    assert!((probe_seconds(&rain) - 2.0).abs() < 0.1);
    let fox = d("fox.png");
    mediagen(
        &[
            "image",
            "a red fox under a tree",
            "--seed",
            "7",
            "-o",
            path(&fox),
        ],
        &env,
    )
    .await
    .ok();
    assert_eq!(&std::fs::read(&fox).unwrap()[..8], b"\x89PNG\r\n\x1a\n");

    // avatars and account.
    let avatars = mediagen(&["avatars", "--json"], &env).await.json();
    assert!(!avatars.as_array().unwrap().is_empty());
    let account = mediagen(&["account", "--json"], &env).await.json();
    let api = app.account_view(&key).await;
    assert_eq!(account["credits"], api["credits"]);
    assert!(
        account["credits"]["used"].as_i64().unwrap() > 0,
        "{account}"
    );
    let text = mediagen(&["account"], &env).await.ok();
    let balance = api["credits"]["balance"].as_i64().unwrap();
    assert!(text.contains(&format!("balance   {balance}\n")), "{text}");
    assert!(text.trim_end().ends_with("key       write"), "{text}");

    // jobs: list, show, cancel, and wait on a cancelled job (exit 1).
    let listed = mediagen(&["jobs", "list", "--kind", "video.trim", "--json"], &env)
        .await
        .json();
    assert_eq!(listed[0]["id"], job["id"]);
    let id = job["id"].as_str().unwrap();
    let shown = mediagen(&["jobs", "show", id], &env).await.ok();
    assert!(shown.contains("status    completed (100%)"), "{shown}");
    assert!(shown.contains("videoUrl"), "{shown}");
    let sleeping = app.test_job_async(&key, json!({"ms": 30_000})).await;
    let cancelled = mediagen(&["jobs", "cancel", &sleeping, "--json"], &env)
        .await
        .json();
    assert_eq!(cancelled["status"], "cancelled");
    let waited = mediagen(&["jobs", "wait", &sleeping], &env).await;
    assert_eq!(waited.code, 1, "{}", waited.stderr);
    assert!(waited.stderr.contains("cancelled"), "{}", waited.stderr);

    // Failures: the API's message and code, exit 1.
    let bad = mediagen(
        &[
            "tts",
            "Hi",
            "--voice",
            "no-such-voice",
            "-o",
            path(&d("x.mp3")),
        ],
        &env,
    )
    .await;
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(bad.stderr.contains("voice_not_found"), "{}", bad.stderr);
    assert!(!d("x.mp3").exists());
    let bad = mediagen(
        &["jobs", "show", "job_0000000000000000000000", "--json"],
        &env,
    )
    .await;
    assert_eq!(bad.code, 1);
    let error: Value = serde_json::from_str(&bad.stderr).unwrap();
    assert_eq!(error["error"]["status"], 404, "{error}");
    let reader = app.key("read").await;
    let read_env = [
        ("MEDIAGEN_URL", app.addr.as_str()),
        ("MEDIAGEN_API_KEY", reader.as_str()),
    ];
    let bad = mediagen(&["sound", "rain", "-o", path(&d("y.wav"))], &read_env).await;
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(bad.stderr.contains("HTTP 403"), "{}", bad.stderr);
    // No key: a usage error (2); no server: 3; a missing file: 4.
    let bad = mediagen(&["account"], &[("MEDIAGEN_URL", app.addr.as_str())]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    let bad = mediagen(
        &["account"],
        &[
            ("MEDIAGEN_URL", "http://127.0.0.1:9"),
            ("MEDIAGEN_API_KEY", &key),
        ],
    )
    .await;
    assert_eq!(bad.code, 3, "{}", bad.stderr);
    assert!(!bad.stderr.contains(&key), "the key leaked: {}", bad.stderr);
    let bad = mediagen(&["stt", path(&d("missing.wav"))], &env).await;
    assert_eq!(bad.code, 4, "{}", bad.stderr);
    // The key in a client config file, the address from the environment.
    let config = d("client.toml");
    std::fs::write(&config, format!("api_key = \"{key}\"\n")).unwrap();
    let account = mediagen(
        &["account", "--json", "--client-config", path(&config)],
        &[("MEDIAGEN_URL", app.addr.as_str())],
    )
    .await
    .json();
    assert_eq!(account["credits"], api["credits"]);
}
