//! Tests that run the real `mediagen` binary: workers killed with SIGKILL,
//! and the key and account commands.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::helpers::{Backend, TestApp};

fn mediagen(app: &TestApp) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediagen"));
    cmd.env("MEDIAGEN_DATABASE_URL", app.database_url())
        .env("MEDIAGEN_DATA_DIR", app.data_dir.path())
        .env("MEDIAGEN_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// A `mediagen worker` process with a one-second lease.
fn worker(app: &TestApp) -> Child {
    mediagen(app)
        .arg("worker")
        .env("MEDIAGEN_ENABLE_TEST_JOBS", "true")
        .env("MEDIAGEN_LEASE_SECONDS", "1")
        .env("MEDIAGEN_HEARTBEAT_SECONDS", "0.2")
        .env("MEDIAGEN_POLL_SECONDS", "0.05")
        .stdout(Stdio::null())
        .spawn()
        .expect("worker starts")
}

async fn kill9(mut child: Child) {
    child.start_kill().expect("SIGKILL sent");
    child.wait().await.unwrap();
}

async fn killed_worker_job_completes_once(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.workers = 0).await;
    let (account, key) = app.account(100, "write").await;
    let id = app
        .test_job_async(&key, json!({"ms": 2000, "units": 10, "output": "survived"}))
        .await;

    let first = worker(&app);
    app.wait_job(&key, &id, Duration::from_secs(30), |j| {
        j["status"] == "processing"
    })
    .await;
    kill9(first).await;
    let job: Value = app
        .get(&format!("/v1/jobs/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (job["status"].as_str(), job["attempts"].as_i64()),
        (Some("processing"), Some(1))
    );

    let second = worker(&app);
    let done = app
        .wait_job(&key, &id, Duration::from_secs(30), |j| {
            j["status"] == "completed"
        })
        .await;
    assert_eq!(done["attempts"], 2);
    assert_eq!(done["result"]["attempt"], 2, "the second worker ran it");
    let text = app
        .client
        .get(done["result"]["textUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(text, "survived");

    // Charged exactly once.
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 90, "reserved": 0, "used": 10})
    );
    let entries: Vec<String> = app
        .state
        .db
        .ledger(&mediagen_core::AccountId::parse(&account).unwrap(), 10)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .map(|e| e.entry)
        .collect();
    assert_eq!(entries, ["grant", "reserve", "capture"]);
    kill9(second).await;
}

async fn job_whose_workers_always_die_fails_and_refunds(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| {
        c.workers = 0;
        c.max_attempts = 1;
    })
    .await;
    let (_, key) = app.account(100, "write").await;
    let id = app
        .test_job_async(&key, json!({"ms": 10000, "units": 10}))
        .await;
    let first = worker(&app);
    app.wait_job(&key, &id, Duration::from_secs(30), |j| {
        j["status"] == "processing"
    })
    .await;
    kill9(first).await;
    let second = worker(&app);
    let failed = app
        .wait_job(&key, &id, Duration::from_secs(30), |j| {
            j["status"] == "failed"
        })
        .await;
    assert_eq!(failed["error"]["code"], "worker_lost");
    assert_eq!(failed["attempts"], 1);
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 100, "reserved": 0, "used": 0})
    );
    kill9(second).await;
}

async fn output(cmd: &mut Command) -> String {
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

async fn key_and_account_commands(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = output(mediagen(&app).args([
        "admin", "keys", "create", "--level", "read", "--name", "cli",
    ]))
    .await;
    let key = key.trim_end_matches('\n');
    assert_eq!(key.len(), 64, "the key alone on stdout: {key:?}");
    let me: Value = app.get("/v1/account", key).await.json().await.unwrap();
    assert_eq!(me["key"]["level"], "read");

    let account = output(mediagen(&app).args([
        "admin",
        "accounts",
        "create",
        "--name",
        "cli customer",
        "--credits",
        "5",
    ]))
    .await;
    let account = account.trim();
    assert!(account.starts_with("acct_"));
    assert_eq!(
        output(mediagen(&app).args(["admin", "accounts", "grant", account, "7"]))
            .await
            .trim(),
        "12"
    );
    let shown = output(mediagen(&app).args(["admin", "accounts", "show", account])).await;
    assert!(shown.contains("balance\t12"), "{shown}");

    let listed = output(mediagen(&app).args(["admin", "keys", "list"])).await;
    assert_eq!(listed.lines().count(), 2, "{listed}");
    let key_id = listed
        .lines()
        .find(|l| l.contains("\tcli"))
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .to_owned();
    output(mediagen(&app).args(["admin", "keys", "revoke", &key_id])).await;
    // Revoked from another process: refused once the API's key cache
    // (auth_cache_seconds, 1 s by default) lets go, so within a second
    // (and a request's time).
    assert_eq!(app.config.auth_cache_seconds, 1.0);
    let revoked_at = std::time::Instant::now();
    while app.get("/v1/account", key).await.status() != 401 {
        assert!(
            revoked_at.elapsed() < Duration::from_secs_f64(1.25),
            "still accepted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

crate::on_both_backends!(
    killed_worker_job_completes_once,
    job_whose_workers_always_die_fails_and_refunds,
    key_and_account_commands
);

/// `mediagen migrate` (a deployment's migration step) prepares a fresh
/// database, prints the operator's admin key once, and exits; the key
/// then works on a server of that database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_prepares_a_fresh_database() {
    let dir = tempfile::tempdir().unwrap();
    let migrate = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mediagen"));
        cmd.arg("migrate")
            .env("MEDIAGEN_DATA_DIR", dir.path())
            .env("MEDIAGEN_LOG", "warn")
            .stdin(Stdio::null());
        cmd
    };
    let key = output(&mut migrate()).await;
    let key = key.trim_end_matches('\n').to_owned();
    assert_eq!(key.len(), 64, "the key alone on stdout: {key:?}");
    assert_eq!(
        output(&mut migrate()).await,
        "",
        "a second run creates nothing"
    );
    let db = mediagen_store::Db::connect(&format!(
        "sqlite://{}",
        dir.path().join("mediagen.db").display()
    ))
    .await
    .unwrap();
    let found = db.find_key(&key).await.unwrap();
    assert!(
        found.is_some_and(|k| k.is_operator),
        "the printed key is the operator's"
    );
}

/// An API process without workers loads no model: after listing voices and
/// models and queueing speech and transcription jobs its peak memory stays
/// under 150 MB (it was about 630 MB when every process loaded every model).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_process_without_workers_stays_small() {
    let app = TestApp::spawn_with(Backend::Postgres, |c| c.workers = 0).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = tempfile::tempdir().unwrap();
    let mut api = mediagen(&app)
        .arg("serve")
        .env("MEDIAGEN_DATA_DIR", data.path())
        .env("MEDIAGEN_MODELS_DIR", crate::helpers::models_dir())
        .env("MEDIAGEN_BIND", format!("127.0.0.1:{port}"))
        .env("MEDIAGEN_WORKERS", "0")
        .env("MEDIAGEN_SYNC_WAIT_SECONDS", "1")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("http://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..600 {
        if reqwest::get(format!("{addr}/healthz")).await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "the API process did not start");
    let key = &app.admin_key;
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("{addr}{path}")).bearer_auth(key).send();
    assert_eq!(get("/v1/voices?limit=100").await.unwrap().status(), 200);
    assert_eq!(get("/v1/models").await.unwrap().status(), 200);
    let voice = app.any_voice(key).await;
    let queued = client
        .post(format!("{addr}/v1/text-to-speech"))
        .bearer_auth(key)
        .header("prefer", "respond-async")
        .json(&json!({"text": "Nobody will say this here.", "voiceId": voice}))
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status(), 202);
    let form = crate::helpers::form(
        vec![("file", crate::helpers::silent_wav(16_000, 16_000), "a.wav")],
        &[],
    );
    let queued = client
        .post(format!("{addr}/v1/speech-to-text"))
        .bearer_auth(key)
        .header("prefer", "respond-async")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status(), 202);
    // Cloning and streaming are workers' work: queued, or refused for want
    // of a worker, never done here.
    let form = crate::helpers::form(
        vec![(
            "files",
            crate::helpers::silent_wav(12 * 24_000, 24_000),
            "s.wav",
        )],
        &[("name", "Later"), ("consent", "true")],
    );
    let queued = client
        .post(format!("{addr}/v1/voices"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status(), 202);
    let streamed = client
        .post(format!("{addr}/v1/text-to-speech/stream"))
        .bearer_auth(key)
        .json(&json!({"text": "Nobody will stream this here.", "voiceId": voice}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 503);
    assert_eq!(get("/v1/jobs").await.unwrap().status(), 200);
    let status = std::fs::read_to_string(format!("/proc/{}/status", api.id().unwrap())).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    eprintln!("API process without workers: peak {} MB", peak_kb / 1024);
    assert!(peak_kb < 150 * 1024, "peak memory {} MB", peak_kb / 1024);
    api.start_kill().unwrap();
    api.wait().await.unwrap();
}
