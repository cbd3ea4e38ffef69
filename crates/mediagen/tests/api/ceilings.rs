//! What one credit buys, measured (issue 70; docs/security.md, "What a
//! credit buys"): hostile inputs of each kind the outside probe sent, run
//! one at a time on a real `mediagen worker` process, with the CPU seconds
//! it and its tools spent, the bytes stored and its peak memory above where
//! it was, each against the credits charged.
//!
//! `cargo test -p mediagen --test api -- --ignored ceilings --nocapture`
//! prints the table.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{ffmpeg, form, Backend, TestApp};
use crate::priced::{big_clip, one_keyframe, speech};
use crate::tts::joe;

/// CPU seconds of process `pid` and its waited-for children
/// (`/proc/<pid>/stat` fields 14–17, in clock ticks of 1/100 s).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) is index 11.
    (11..15)
        .map(|i| fields[i].parse::<f64>().unwrap())
        .sum::<f64>()
        / 100.0
}

/// Bytes under `dir`, recursively.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Resident bytes of process `pid` and every process below it (its
/// tools: ffmpeg, eSpeak), read from `/proc`.
fn tree_resident(pid: u32) -> u64 {
    let mut parents: Vec<(u32, u32, u64)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let (Ok(stat), Ok(statm)) = (
            std::fs::read_to_string(format!("/proc/{child}/stat")),
            std::fs::read_to_string(format!("/proc/{child}/statm")),
        ) else {
            continue;
        };
        let Some((_, after)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        let pages = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u64>().ok());
        if let (Some(ppid), Some(pages)) = (ppid, pages) {
            parents.push((child, ppid, pages * 4096));
        }
    }
    let mut tree = vec![pid];
    let mut total = 0;
    while let Some(p) = tree.pop() {
        for &(child, ppid, bytes) in &parents {
            if child == p {
                total += bytes;
            }
            if ppid == p {
                tree.push(child);
            }
        }
    }
    total
}

/// Samples [`tree_resident`] every 50 ms until dropped; `peak` is the
/// highest reading.
struct Sampler {
    peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        use std::sync::atomic::Ordering;
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(tree_resident(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Sampler { peak, stop }
    }

    fn peak(&self) -> u64 {
        self.peak.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

struct Row {
    case: &'static str,
    credits: f64,
    cpu: f64,
    stored: u64,
    /// The worker's and its tools' highest resident memory above the
    /// worker's before the case.
    peak: u64,
    /// The worker's resident memory 3 s after the case ended, above
    /// where it was before.
    after: i64,
    status: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: a bench, run by `make test-long`"]
async fn what_a_credit_buys() {
    use crate::stt_long::memory;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.workers = 0).await;
    let (_, key) = app.account(1_000_000, "write").await;
    let mut worker = tokio::process::Command::new(env!("CARGO_BIN_EXE_mediagen"))
        .arg("worker")
        .env("MEDIAGEN_DATABASE_URL", app.database_url())
        .env("MEDIAGEN_DATA_DIR", app.data_dir.path())
        .env("MEDIAGEN_MODELS_DIR", crate::helpers::models_dir())
        .env("MEDIAGEN_WORKER_CONCURRENCY", "1")
        .env("MEDIAGEN_PREVIEWS_AT_START", "false")
        .env("MEDIAGEN_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = worker.id().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let voice = joe(&app, &key).await;
    let blobs = app.config.storage_dir();

    // Inputs.
    let sine = dir.path().join("tone.wav");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=180:duration=120",
            "-ac",
            "1",
        ],
        &sine,
    );
    let tone = std::fs::read(&sine).unwrap();
    let one_key = app
        .upload(&key, one_keyframe(dir.path(), "640x360", 25), "one-key.mp4")
        .await;
    let big = app
        .upload(&key, big_clip(dir.path(), 2048), "big.mp4")
        .await;
    let huge = app
        .upload(&key, big_clip(dir.path(), 4096), "huge.mp4")
        .await;
    let sample = speech(dir.path());

    // Warm the worker's engines: what is measured after is the work.
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": "Hello there.", "voiceId": voice, "format": "wav"}),
        )
        .await;
    assert_eq!(r.status(), 200);

    let digits = "7777777777777777777 ".repeat(30).trim().to_owned();
    let prose = "The quick brown fox jumps over the lazy dog, then rests in the shade. "
        .repeat(9)
        .trim()
        .to_owned();
    let spelled = format!(
        "<speak><say-as interpret-as='characters'>{}</say-as></speak>",
        "QWERTYUIOPASDFGHJKLZXCVBNM".repeat(20)
    );
    let lines = "Ok\n".repeat(600);
    let tts = |text: &str| json!({"text": text, "voiceId": voice, "format": "wav"});
    // A fifth of the digits: alignment is the slowest work per credit.
    let fifth = "7777777777777777777 ".repeat(6).trim().to_owned();
    let tts_timed = json!({"text": fifth, "voiceId": voice, "format": "wav", "timestamps": true});
    type Case = (&'static str, &'static str, Value);
    let json_cases: Vec<Case> = vec![
        (
            "tts: 600 characters of prose",
            "/v1/text-to-speech",
            tts(&prose),
        ),
        (
            "tts: 599 characters of digits",
            "/v1/text-to-speech",
            tts(&digits),
        ),
        (
            "tts: digits with timestamps",
            "/v1/text-to-speech",
            tts_timed,
        ),
        (
            "tts: 520 spelled letters (say-as)",
            "/v1/text-to-speech",
            tts(&spelled),
        ),
        ("tts: 600 lines of `Ok`", "/v1/text-to-speech", tts(&lines)),
        (
            "video.trim: accurate, 2 × 0.04 s after one keyframe",
            "/v1/video/trim",
            json!({"fileId": one_key, "mode": "accurate", "format": "mp4",
                   "ranges": [{"start": 110.0, "end": 110.04}, {"start": 115.0, "end": 115.04}]}),
        ),
        (
            "video.trim: fast, the same ranges (refused)",
            "/v1/video/trim",
            json!({"fileId": one_key, "mode": "fast", "format": "mp4",
                   "ranges": [{"start": 110.0, "end": 110.04}, {"start": 115.0, "end": 115.04}]}),
        ),
        (
            "avatar.expand: 2048×2048, 10 fps, 30 s pingpong",
            "/v1/avatar-expansion",
            json!({"fileId": big, "duration": 30, "mode": "pingpong"}),
        ),
        (
            "avatar.expand: 4096×4096, 10 fps, 60 s pingpong",
            "/v1/avatar-expansion",
            json!({"fileId": huge, "duration": 60, "mode": "pingpong"}),
        ),
    ];
    let mut rows = Vec::new();
    let mut measure = |case: &'static str, before: (f64, u64, u64, Sampler), job: &Value| {
        let (cpu, stored, rss, sampler) = before;
        let cpu = cpu_seconds(pid) - cpu;
        let peak = sampler
            .peak()
            .max(memory(pid, "VmHWM:"))
            .saturating_sub(rss);
        drop(sampler);
        std::thread::sleep(Duration::from_secs(3));
        rows.push(Row {
            case,
            credits: job["credits"].as_f64().unwrap_or(0.0),
            cpu,
            stored: bytes_under(&blobs).saturating_sub(stored),
            peak,
            after: memory(pid, "VmRSS:") as i64 - rss as i64,
            status: job["status"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| job["error"]["code"].as_str().unwrap_or("?").to_owned()),
        });
    };
    let start = || {
        // Peak memory counted from here (writing 5 resets VmHWM).
        let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        let rss = memory(pid, "VmRSS:");
        (
            cpu_seconds(pid),
            bytes_under(&blobs),
            rss,
            Sampler::start(pid),
        )
    };
    for (case, path, body) in json_cases {
        let before = start();
        let started = Instant::now();
        let r = app
            .client
            .post(format!("{}{path}", app.addr))
            .bearer_auth(&key)
            .json(&body)
            .timeout(Duration::from_secs(1800))
            .send()
            .await
            .unwrap();
        let job: Value = r.json().await.unwrap();
        let job = match job["id"].as_str() {
            Some(id) if job["status"] == "queued" || job["status"] == "processing" => {
                app.settled(&key, id, Duration::from_secs(1800)).await
            }
            _ => job,
        };
        eprintln!("{case}: {:.1} s", started.elapsed().as_secs_f64());
        measure(case, before, &job);
    }
    let before = start();
    let r = app
        .post_form(
            "/v1/voice-changer",
            &key,
            form(
                vec![("file", tone, "tone.wav")],
                &[("voiceId", voice.as_str())],
            ),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    measure("voice.change: 120 s of sound, convert", before, &job);
    let before = start();
    let r = app
        .post_form(
            "/v1/voices",
            &key,
            form(
                vec![("files", sample, "s.wav")],
                &[("name", "Mine"), ("consent", "true"), ("method", "world")],
            ),
        )
        .await;
    assert_eq!(r.status(), 201);
    let jobs = app.get_json("/v1/jobs?limit=1", &key).await;
    measure(
        "voice.clone: WORLD, 12 s of samples",
        before,
        &jobs["data"][0],
    );

    println!(
        "| case | credits | CPU s | CPU s a credit | stored MB | peak memory MB | memory kept MB | status |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.1} | {:.3} | {:.1} | {:.0} | {:.0} | {} |",
            r.case,
            r.credits,
            r.cpu,
            r.cpu / r.credits.max(1.0),
            r.stored as f64 / 1e6,
            r.peak as f64 / 1e6,
            r.after as f64 / 1e6,
            r.status
        );
    }
    let _ = worker.kill().await;
    // The bench's claim: no case buys more than a second of CPU a credit.
    for r in &rows {
        assert!(
            r.cpu / r.credits.max(1.0) < 1.0,
            "{}: {:.2} s a credit",
            r.case,
            r.cpu / r.credits.max(1.0)
        );
    }
}
