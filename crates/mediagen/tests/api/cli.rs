//! The command-line client (`mediagen tts`, `stt`, `trim`, `dub`, `clone`,
//! `change`, `expand`, `voices`, `avatars`, `sound`, `image`, `jobs`,
//! `keys`, `account`), run as the built binary against a test server,
//! reaching it through `MEDIAGEN_URL` and `MEDIAGEN_API_KEY` as a user's
//! shell would: docs/cli.md's examples as they stand, then each command's
//! output checked for what it holds, and failures for their exit codes and
//! the API's message.

use std::path::Path;

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

/// The block of docs/cli.md its text says is run.
fn documented_examples() -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md")).unwrap();
    let start = doc.find("```sh\n").expect("a ```sh block in docs/cli.md") + 6;
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end].to_owned()
}

/// The inputs docs/cli.md's examples name, made in `dir`: `talk.mp4` (a
/// person speaking), `interview.wav` (two people in turn), `in.mp4` (30 s
/// of a test picture with a tone) and `sample.wav` (12 s of a voice).
fn example_inputs(dir: &Path) {
    let d = |name: &str| dir.join(name);
    let say = |name: &str, voice: &str, pitch: &str, text: &str| {
        crate::voice_clone::espeak(dir, name, voice, pitch, text)
    };
    let speech = say(
        "en.wav",
        "en-us",
        "50",
        "Good morning. The weather is fine today.",
    );
    talking_video(&speech, &d("talk.mp4"));
    let lines = [
        (
            "en-us",
            "20",
            "So, tell me about the project you started last year.",
        ),
        (
            "en-us+f3",
            "80",
            "It began as a small idea in my garage, years ago.",
        ),
        (
            "en-us",
            "20",
            "And what does it do now, after all that work?",
        ),
        (
            "en-us+f3",
            "80",
            "It translates videos into other languages by itself.",
        ),
    ];
    let mut parts = Vec::new();
    for (k, (voice, pitch, text)) in lines.iter().enumerate() {
        parts.push(say(&format!("line{k}.wav"), voice, pitch, text));
    }
    let mut args: Vec<String> = Vec::new();
    for part in &parts {
        args.extend(["-i".into(), path(part).into()]);
    }
    args.extend([
        "-filter_complex".into(),
        format!("concat=n={}:v=0:a=1", parts.len()),
        "-ar".into(),
        "16000".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ffmpeg(&args, &d("interview.wav"));
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
        &d("in.mp4"),
    );
    say("sample.wav", "en-us", "50", crate::voice_clone::SAMPLE_TEXT);
}

/// docs/cli.md's examples, run as they stand by bash with `-euo pipefail`
/// in a directory holding the inputs they name, then their outputs checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_examples_run() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(1_000_000, "admin").await;
    let dir = tempfile::tempdir().unwrap();
    example_inputs(dir.path());
    let bin = Path::new(env!("CARGO_BIN_EXE_mediagen")).parent().unwrap();
    let mut cmd = tokio::process::Command::new("bash");
    for (name, _) in std::env::vars() {
        if name.starts_with("MEDIAGEN_") {
            cmd.env_remove(name);
        }
    }
    let out = cmd
        .args(["-euo", "pipefail", "-c", &documented_examples()])
        .current_dir(dir.path())
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("MEDIAGEN_URL", &app.addr)
        .env("MEDIAGEN_API_KEY", &key)
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stderr: {stderr}\nstdout: {stdout}");
    let d = |name: &str| dir.path().join(name);
    for (file, seconds) in [
        ("hello.mp3", 0.5..3.0),
        ("piped.wav", 0.5..3.0),
        ("out.mp4", 9.8..10.3),
        ("long.mp4", 11.9..12.1),
        ("rain.wav", 4.9..5.1),
    ] {
        let got = probe_seconds(&d(file));
        assert!(seconds.contains(&got), "{file}: {got} s");
    }
    assert_eq!(&std::fs::read(d("piped.wav")).unwrap()[..4], b"RIFF");
    for (file, input) in [("dubbed.mp4", "talk.mp4"), ("changed.mp3", "interview.wav")] {
        let (got, want) = (probe_seconds(&d(file)), probe_seconds(&d(input)));
        assert!((got - want).abs() < 0.5, "{file}: {got} s against {want} s");
    }
    assert_eq!(
        &std::fs::read(d("fox.png")).unwrap()[..8],
        b"\x89PNG\r\n\x1a\n"
    );
    let srt = std::fs::read_to_string(d("talk.srt")).unwrap();
    assert!(srt.starts_with("1\n00:00:0"), "{srt}");
    assert!(srt.to_lowercase().contains("weather"), "{srt}");
    // The diarized interview: a line per turn, led by its speaker.
    assert!(stdout.contains("speaker_0: "), "{stdout}");
    assert!(stdout.contains("speaker_1: "), "{stdout}");
    // The clone, the key made, the tables.
    assert!(stdout.contains("cloned My voice ("), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("mg_")), "{stdout}");
    assert!(stdout.contains("dashboard"), "{stdout}");
    assert!(stdout.contains("status    completed (100%)"), "{stdout}");
    // Every upload served its one job and is gone; the clone's sample is
    // kept with the voice, as the API keeps clone samples.
    let files: Value = app.get("/v1/files", &key).await.json().await.unwrap();
    assert_eq!(files["pagination"]["total"], 1, "{files}");
    assert_eq!(files["data"][0]["filename"], "sample.wav", "{files}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_answers_in_plain_words_with_exit_codes() {
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

    // A voice by its name; the audio to a pipe (`-o -`, and no `-o` where
    // stdout is not a terminal), the summary on stderr in right words.
    let heart = mediagen(&["tts", "Hi there.", "--voice", "heart", "-o", "-"], &env).await;
    assert_eq!(heart.code, 0, "{}", heart.stderr);
    assert!(heart.stdout.len() > 1000, "{} bytes", heart.stdout.len());
    assert!(
        heart.stderr.starts_with("wrote stdout ("),
        "{}",
        heart.stderr
    );
    assert!(!heart.stderr.contains(" 1 credits"), "{}", heart.stderr);
    let bare = mediagen(&["tts", "Hi there.", "--voice", "af_heart"], &env).await;
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    assert!(!d("-").exists());
    let job = mediagen(&["jobs", "list", "--limit", "1", "--json"], &env)
        .await
        .json();
    let job = job[0].clone();
    // Two voices called the same: a usage error listing both ids.
    let mut names = std::collections::HashMap::<String, Vec<String>>::new();
    let all = mediagen(&["voices", "--json", "--limit", "10000"], &env)
        .await
        .json();
    for v in all.as_array().unwrap() {
        names
            .entry(v["name"].as_str().unwrap().to_lowercase())
            .or_default()
            .push(v["id"].as_str().unwrap().to_owned());
    }
    let (name, ids) = names
        .iter()
        .find(|(_, ids)| ids.len() > 1)
        .expect("two catalog voices of one name");
    let both = mediagen(
        &["tts", "Hi", "--voice", name, "-o", path(&d("x.mp3"))],
        &env,
    )
    .await;
    assert_eq!(both.code, 2, "{}", both.stderr);
    for id in ids {
        assert!(both.stderr.contains(id.as_str()), "{}", both.stderr);
    }
    // A closed pipe ends the command quietly.
    let mut voices_cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mediagen"));
    let mut child = voices_cmd
        .args(["voices"])
        .envs(env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let closed = child.wait_with_output().await.unwrap();
    let said = String::from_utf8_lossy(&closed.stderr);
    assert_eq!(closed.status.code(), Some(0), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    // A client command's help is its own options only.
    let help = mediagen(&["tts", "--help"], &env).await.ok();
    assert!(help.contains("--voice"), "{help}");
    for server in [
        "--data-dir",
        "--database-url",
        "--models-dir",
        "Server options",
    ] {
        assert!(!help.contains(server), "{server} in: {help}");
    }
    let help = mediagen(&["serve", "--help"], &[]).await.ok();
    assert!(help.contains("--data-dir"), "{help}");

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
    let listed = mediagen(&["jobs", "list", "--kind", "tts", "--ids"], &env)
        .await
        .ok();
    assert_eq!(listed.lines().next(), job["id"].as_str(), "{listed}");
    let id = job["id"].as_str().unwrap();
    let shown = mediagen(&["jobs", "show", id], &env).await.ok();
    assert!(shown.contains("status    completed (100%)"), "{shown}");
    assert!(shown.contains("audioUrl"), "{shown}");
    assert!(
        shown.contains(" credits\n") || shown.contains(" credit\n"),
        "{shown}"
    );
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
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("no voice is called `no-such-voice`"),
        "{}",
        bad.stderr
    );
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
