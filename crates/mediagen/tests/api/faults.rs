//! Faults of what the API stands on: the database stops and starts again,
//! the file store cannot be reached. Requests meanwhile answer 503
//! `service_unavailable` with `Retry-After` (never 500), `/readyz` says
//! which service is down, and everything recovers without a restart.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{
    assert_error, assert_held_and_captured_once, form, silent_wav, Backend, TestApp,
};

/// A PostgreSQL server of the test's own (a fresh cluster in a temporary
/// directory on a free port), which the test stops and starts; the shared
/// server the other tests use is never touched.
pub struct OwnPostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl OwnPostgres {
    /// Debian's server binaries (`scripts/ensure-postgres.sh` installs
    /// them where no server runs).
    fn bin() -> PathBuf {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL's server is installed (scripts/ensure-postgres.sh)")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|bin| bin.join("pg_ctl").is_file())
            .collect();
        versions.sort();
        versions.pop().expect("a PostgreSQL version with pg_ctl")
    }

    pub fn start_new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let pg = Self {
            bin: Self::bin(),
            dir,
            port,
        };
        // The server refuses to run as root: it runs as `postgres` then.
        if as_root() {
            let chown = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(pg.dir.path())
                .status()
                .unwrap();
            assert!(chown.success());
        }
        pg.run(
            "initdb",
            &[
                "-D",
                &pg.data(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        pg.start();
        pg
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    /// A fast shutdown: sessions are ended, as in a restart or fail-over.
    pub fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let mut command = if as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let out = command
            .args(args)
            .current_dir(Path::new("/"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let program = self.bin.join("pg_ctl");
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "stop"];
        let _ = if as_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&program)
                .args(args)
                .output()
        } else {
            Command::new(&program).args(args).output()
        };
    }
}

/// `/readyz`: its status and body.
async fn readiness(app: &TestApp) -> (u16, serde_json::Value) {
    let r = app
        .client
        .get(format!("{}/readyz", app.addr))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// Asserts a 503 `service_unavailable` that says when to retry.
async fn assert_unavailable(r: reqwest::Response) -> serde_json::Value {
    assert_eq!(
        r.headers().get("retry-after").map(|v| v.to_str().unwrap()),
        Some("5")
    );
    assert_error(r, 503, "service_unavailable").await
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

#[tokio::test]
async fn a_database_restart_answers_503_and_recovers() {
    let pg = OwnPostgres::start_new();
    // Its own database: the URL replaces the one the helper would make.
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.database_url = pg.url()).await;
    let key = app.admin_key.clone();
    let job = json!({"ms": 50});
    let r = app.post("/v1/test-jobs", &key, job.clone()).await;
    assert_eq!(r.status(), 200, "a job runs before the fault");

    pg.stop();
    let asked = Instant::now();
    let r = app.get("/v1/account", &key).await;
    let waited = asked.elapsed();
    assert_unavailable(r).await;
    assert!(waited < Duration::from_secs(30), "answered in {waited:?}");
    // Known down: the next requests answer at once, not after the pool's
    // wait.
    let asked = Instant::now();
    let r = app.get("/v1/voices", &key).await;
    let quick = asked.elapsed();
    assert_unavailable(r).await;
    assert!(quick < Duration::from_secs(3), "answered in {quick:?}");
    let (status, body) = readiness(&app).await;
    assert_eq!(status, 503);
    assert_eq!(body["status"], "database unavailable", "{body}");

    // Back: the same process serves again, and its worker claims again.
    pg.start();
    let back = Instant::now();
    loop {
        let r = app.get("/v1/account", &key).await;
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503, "only 503 while recovering");
        assert!(back.elapsed() < Duration::from_secs(60), "no recovery");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "database down: 503 after {waited:?}, then after {quick:?}; back: served again after {:?}",
        back.elapsed()
    );
    let r = app.post("/v1/test-jobs", &key, job).await;
    assert_eq!(r.status(), 200, "a job runs after the fault");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(readiness(&app).await.0, 200);
}

/// Files in a bucket of an S3 endpoint where nothing listens, each
/// request to it retried for `retry_seconds`.
fn on_no_store(c: &mut mediagen_server::Config, retry_seconds: f64) {
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    crate::storage::on_bucket(c, "gone", &nowhere);
    c.storage_retry_seconds = retry_seconds;
}

#[tokio::test]
async fn an_unreachable_file_store_answers_503() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| on_no_store(c, 1.0)).await;
    let key = app.admin_key.clone();
    let upload = form(vec![("file", silent_wav(16_000, 16_000), "a.wav")], &[]);
    let r = app.post_form("/v1/files", &key, upload).await;
    let body = assert_unavailable(r).await;
    assert!(
        !body.to_string().contains("127.0.0.1"),
        "the cause stays in the log: {body}"
    );
    let (status, body) = readiness(&app).await;
    assert_eq!(status, 503);
    assert_eq!(body["status"], "file store unavailable", "{body}");
}

/// Jobs running or queued when the database stops for 10 s finish once it
/// is back: each completes exactly once (one hold, one capture), its output
/// whole, and the account's ledger adds up.
#[tokio::test]
async fn jobs_in_flight_survive_a_database_restart() {
    let pg = OwnPostgres::start_new();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.database_url = pg.url();
        c.workers = 2;
        c.max_concurrent_jobs = 20;
    })
    .await;
    let (account, key) = app.account(1_000, "write").await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let job = json!({"ms": 2000, "units": 1, "output": format!("output of job {i}")});
        ids.push(app.test_job_async(&key, job).await);
    }
    // Jobs are running when the database goes.
    let first = app
        .wait_job(&key, &ids[0], Duration::from_secs(30), |j| {
            j["status"] == "processing"
        })
        .await;
    assert_eq!(first["status"], "processing", "{first}");
    pg.stop();
    tokio::time::sleep(Duration::from_secs(10)).await;
    pg.start();

    let mut retried = 0;
    for (i, id) in ids.iter().enumerate() {
        let job = app
            .wait_job(&key, id, Duration::from_secs(120), |j| {
                j["status"] == "completed" || j["status"] == "failed"
            })
            .await;
        assert_eq!(job["status"], "completed", "{job}");
        retried += usize::from(job["attempts"].as_i64().unwrap() > 1);
        let text = app
            .download(job["result"]["textUrl"].as_str().unwrap())
            .await;
        assert_eq!(text, format!("output of job {i}").as_bytes());
    }
    let ledger = app
        .state
        .db
        .ledger(&mediagen_core::AccountId::parse(&account).unwrap(), 1_000)
        .await
        .unwrap();
    for id in &ids {
        assert_held_and_captured_once(&ledger, id);
    }
    let credits = &app.account_view(&key).await["credits"];
    assert_eq!(credits["reserved"], 0, "{credits}");
    assert_eq!(credits["used"], 12, "{credits}");
    assert_eq!(credits["balance"], 1_000 - 12, "{credits}");
    // (A stop shorter than the pool's wait for a connection is absorbed:
    // the running jobs record their outcome once it is back.)
    eprintln!("database restarted under 12 jobs: {retried} ran again");
}

/// A job that cannot store its output (the file store is down) is tried
/// again while attempts remain, each attempt after a longer wait, then
/// fails with `storage_error` (503) and its hold is refunded.
#[tokio::test]
async fn a_job_that_cannot_store_its_output_fails_refunded() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        on_no_store(c, 0.5);
        c.retry_backoff_seconds = 1.0;
    })
    .await;
    let (_, key) = app.account(100, "write").await;
    let started = Instant::now();
    let id = app
        .test_job_async(&key, json!({"ms": 10, "units": 5}))
        .await;
    let job = app
        .wait_job(&key, &id, Duration::from_secs(60), |j| {
            j["status"] == "failed" || j["status"] == "completed"
        })
        .await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "storage_error", "{job}");
    assert_eq!(job["attempts"], app.config.max_attempts, "{job}");
    // Three attempts of 0.5 s of storage retries, 1 s and 2 s apart.
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(3), "{took:?}");
    let credits = &app.account_view(&key).await["credits"];
    assert_eq!(
        (&credits["balance"], &credits["reserved"], &credits["used"]),
        (&json!(100), &json!(0), &json!(0)),
        "{credits}"
    );

    // A client that waits for such a job is told to send it again later
    // (503 with Retry-After), not that the job failed for good (500).
    let body = assert_unavailable(app.test_job(&key, json!({"ms": 10, "units": 5})).await).await;
    assert_eq!(
        body["error"]["details"]["error"]["code"], "storage_error",
        "{body}"
    );
    assert_eq!(body["error"]["details"]["status"], "failed", "{body}");
}
