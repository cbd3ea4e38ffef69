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
        .ledger(&account, 10)
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
    let key =
        output(mediagen(&app).args(["keys", "create", "--level", "read", "--name", "cli"])).await;
    let key = key.trim_end_matches('\n');
    assert_eq!(key.len(), 64, "the key alone on stdout: {key:?}");
    let me: Value = app.get("/v1/account", key).await.json().await.unwrap();
    assert_eq!(me["key"]["level"], "read");

    let account = output(mediagen(&app).args([
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
        output(mediagen(&app).args(["accounts", "grant", account, "7"]))
            .await
            .trim(),
        "12"
    );
    let shown = output(mediagen(&app).args(["accounts", "show", account])).await;
    assert!(shown.contains("balance\t12"), "{shown}");

    let listed = output(mediagen(&app).args(["keys", "list"])).await;
    assert_eq!(listed.lines().count(), 2, "{listed}");
    let key_id = listed
        .lines()
        .find(|l| l.contains("\tcli"))
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .to_owned();
    output(mediagen(&app).args(["keys", "revoke", &key_id])).await;
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
