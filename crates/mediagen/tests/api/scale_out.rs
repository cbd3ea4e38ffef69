//! The scale-out proof: two API processes without workers and four worker
//! processes split by kind, on PostgreSQL and an S3 bucket (moto's server),
//! take 200 mixed jobs while workers are killed with SIGKILL at random
//! moments. Every job completes exactly once, the ledger adds up to every
//! balance, every output is an object in the bucket (none on local disk),
//! and every URL serves the whole file.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::helpers::{
    assert_held_and_captured_once, assert_ledger_adds_up, form, Backend, TestApp,
};
use crate::storage::{bucket, endpoint, local_files, on_bucket};

const JOBS: usize = 200;
const KILLS: usize = 20;

/// What every process of the deployment shares: the database, the bucket
/// and the settings that matter here (`settings`: `MEDIAGEN_*` variables
/// over the scale-out test's). Each process has its own data directory
/// (its local disk).
pub struct Deployment {
    pub database_url: String,
    pub bucket: String,
    pub endpoint: String,
    pub settings: Vec<(&'static str, String)>,
}

impl Deployment {
    fn command(&self, data_dir: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediagen"));
        cmd.env("MEDIAGEN_DATABASE_URL", &self.database_url)
            .env("MEDIAGEN_DATA_DIR", data_dir)
            .env("MEDIAGEN_MODELS_DIR", crate::helpers::models_dir())
            .env(
                "MEDIAGEN_STORAGE_URL",
                format!("s3://{}/deploy", self.bucket),
            )
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("MEDIAGEN_ENABLE_TEST_JOBS", "true")
            .env("MEDIAGEN_LEASE_SECONDS", "1")
            .env("MEDIAGEN_HEARTBEAT_SECONDS", "0.2")
            .env("MEDIAGEN_MAX_ATTEMPTS", "50")
            .env("MEDIAGEN_MAX_CONCURRENT_JOBS", "1000")
            .env("MEDIAGEN_RATE_LIMIT_PER_MINUTE", "100000")
            .env("MEDIAGEN_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        cmd.envs(self.settings.iter().map(|(k, v)| (k, v)));
        // A log of each process (appended across restarts) where asked.
        if let Ok(dir) = std::env::var("MEDIAGEN_TEST_PROCESS_LOGS") {
            let name = data_dir.file_name().unwrap().to_string_lossy();
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(Path::new(&dir).join(format!("{name}.log")))
                .unwrap();
            cmd.stderr(log);
        }
        cmd
    }

    pub fn worker(&self, data_dir: &Path, kinds: &str) -> Child {
        self.command(data_dir)
            .args(["worker", "--kinds", kinds])
            .env("MEDIAGEN_WORKER_CONCURRENCY", "2")
            .spawn()
            .expect("worker starts")
    }

    /// `mediagen serve` without workers on a free port; its address.
    pub async fn api(&self, data_dir: &Path) -> (Child, String) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        self.api_on(data_dir, port).await
    }

    /// `mediagen serve` without workers on `port`, once it answers.
    pub async fn api_on(&self, data_dir: &Path, port: u16) -> (Child, String) {
        let child = self
            .command(data_dir)
            .arg("serve")
            .env("MEDIAGEN_BIND", format!("127.0.0.1:{port}"))
            .env("MEDIAGEN_WORKERS", "0")
            .spawn()
            .expect("API starts");
        let addr = format!("http://127.0.0.1:{port}");
        for _ in 0..600 {
            if reqwest::get(format!("{addr}/healthz")).await.is_ok() {
                return (child, addr);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("an API process did not start");
    }
}

/// A small pseudo-random sequence (the test's moments of killing).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// A 6-second test video with sound.
pub fn video(dir: &Path) -> Vec<u8> {
    let out = dir.join("source.mp4");
    let ok = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg("testsrc2=size=320x180:rate=25:duration=6")
        .args(["-f", "lavfi", "-i", "sine=frequency=440:duration=6"])
        .args(["-c:v", "libx264", "-preset", "veryfast", "-g", "25"])
        .args(["-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::read(out).unwrap()
}

/// Seconds of media in `bytes`, by ffprobe.
fn duration_of(bytes: &[u8], dir: &Path, name: &str) -> f64 {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    crate::helpers::probe_seconds(&path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by `make test-long`"]
async fn jobs_complete_once_while_workers_are_killed() {
    let endpoint = endpoint();
    let bucket = bucket(&endpoint).await;
    let (b, e) = (bucket.clone(), endpoint.clone());
    let app = TestApp::spawn_with(Backend::Postgres, move |c| {
        c.workers = 0;
        on_bucket(c, &b, &e);
        c.max_attempts = 50;
        c.max_concurrent_jobs = 1000;
    })
    .await;
    let deployment = Deployment {
        database_url: app.database_url().to_owned(),
        bucket,
        endpoint,
        settings: Vec::new(),
    };
    let disks: Vec<tempfile::TempDir> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
    let (_api, api2) = deployment.api(disks[0].path()).await;
    let apis = [app.addr.clone(), api2];
    let kinds = [
        "test.sleep",
        "test.sleep",
        "video.trim",
        "video.trim,test.sleep",
    ];
    let mut workers: Vec<Child> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| deployment.worker(disks[i + 1].path(), k))
        .collect();

    let (account, key) = app.account(100_000, "write").await;
    let scratch = tempfile::tempdir().unwrap();
    let r = app
        .post_form(
            "/v1/files",
            &key,
            form(vec![("file", video(scratch.path()), "source.mp4")], &[]),
        )
        .await;
    assert_eq!(r.status(), 201);
    let file = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // 200 jobs through both APIs: three sleeps (100 to 800 ms, each with
    // its own output) for every trim (its own range of the video).
    let mut expected: HashMap<String, (usize, Value)> = HashMap::new();
    for i in 0..JOBS {
        let (path, body) = if i % 4 == 3 {
            let start = (i % 5) as f64;
            (
                "/v1/video/trim",
                json!({"fileId": file, "ranges": [{"start": start, "end": start + 1.0}]}),
            )
        } else {
            let ms = 100 + (i * 97) % 700;
            (
                "/v1/test-jobs",
                json!({"ms": ms, "units": 1, "output": format!("output of job {i}")}),
            )
        };
        let r = app
            .client
            .post(format!("{}{path}", apis[i % 2]))
            .bearer_auth(&key)
            .header("prefer", "respond-async")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202, "{}", r.text().await.unwrap());
        let id = r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        expected.insert(id, (i, body));
    }

    // Kill a random worker every 0.2–0.5 s (and start it again) while
    // jobs remain, KILLS times; the jobs that remain then finish in peace
    // (each kill costs a lease, so more of them only make the test longer).
    let mut rng = Lcg(0x5eed);
    let mut kills = 0;
    let started = Instant::now();
    loop {
        let open: i64 = app
            .state
            .db
            .queue_depth()
            .await
            .unwrap()
            .iter()
            .filter(|d| d.status == "queued" || d.status == "processing")
            .map(|d| d.count)
            .sum();
        if open == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{open} jobs still open"
        );
        tokio::time::sleep(Duration::from_millis(200 + rng.below(300))).await;
        if kills == KILLS {
            continue;
        }
        let w = rng.below(workers.len() as u64) as usize;
        workers[w].start_kill().unwrap();
        workers[w].wait().await.unwrap();
        kills += 1;
        workers[w] = deployment.worker(disks[w + 1].path(), kinds[w]);
    }
    assert!(
        kills >= KILLS,
        "only {kills} kills before the jobs were done"
    );
    let done = started.elapsed();

    // Every job completed, exactly once: one hold and one capture each.
    let ledger = app
        .state
        .db
        .ledger(&mediagen_core::AccountId::parse(&account).unwrap(), 100_000)
        .await
        .unwrap();
    let mut retried = 0;
    for (id, (i, body)) in &expected {
        let job: Value = app
            .client
            .get(format!("{}/v1/jobs/{id}", apis[i % 2]))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(job["status"], "completed", "{job}");
        retried += usize::from(job["attempts"].as_i64().unwrap() > 1);
        assert_held_and_captured_once(&ledger, id);
        // The whole output, from the bucket, through the signed URL.
        let stored = app
            .state
            .db
            .job_by_id(&mediagen_core::JobId::parse(id).unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.outputs.len(), 1, "{id}");
        let object = app
            .state
            .blobs
            .get_bytes(&stored.outputs[0].key)
            .await
            .unwrap();
        let url = job["result"][if body.get("ms").is_some() {
            "textUrl"
        } else {
            "videoUrl"
        }]
        .as_str()
        .unwrap();
        let served = app.download(url).await;
        assert_eq!(served, object.to_vec(), "{id}: the URL served other bytes");
        if body.get("ms").is_some() {
            assert_eq!(served, format!("output of job {i}").as_bytes());
        } else {
            let seconds = duration_of(&served, scratch.path(), &format!("{id}.mp4"));
            assert!((seconds - 1.0).abs() < 0.15, "{id}: {seconds} s");
        }
    }
    assert!(retried > 0, "no kill landed on a running job");

    // The ledger adds up to the balance, the hold and the usage.
    assert_ledger_adds_up(&ledger, &app.account_view(&key).await["credits"]);

    // Nothing of any job on any process's disk.
    for disk in disks.iter().map(|d| d.path()).chain([app.data_dir.path()]) {
        let local: Vec<_> = local_files(disk)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("jobs"))
            .collect();
        assert!(local.is_empty(), "job files on local disk: {local:?}");
    }
    eprintln!(
        "scale-out: {JOBS} jobs done in {done:?} through {kills} kills, {retried} jobs retried"
    );
    for mut w in workers {
        let _ = w.start_kill();
    }
}
