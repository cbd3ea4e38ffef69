//! `TestApp`: the real server on port 0 with a throw-away SQLite file or a
//! uniquely named PostgreSQL database, and a temporary data directory.

use std::time::Duration;

use mediagen_core::ids::random_base62;
use mediagen_server::state::AppState;
use mediagen_server::Config;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::oneshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The models that `make test`'s setup installs (scripts/models.sh).
pub fn models_dir() -> std::path::PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(Into::into)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../models").into())
}

/// The server PostgreSQL tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("MEDIAGEN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn postgres_url_for(db: &str) -> String {
    let admin = postgres_admin_url();
    let base = admin
        .rsplit_once('/')
        .map(|(b, _)| b.to_owned())
        .unwrap_or(admin);
    format!("{base}/{db}")
}

/// One migrated database per test process, which every PostgreSQL test
/// copies (`CREATE DATABASE … TEMPLATE`, a file copy) instead of running
/// the migrations again. `scripts/test.sh` drops what a run leaves behind.
async fn postgres_template() -> &'static str {
    static TEMPLATE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("mg_test_template_{}", std::process::id());
            postgres_exec(&format!("DROP DATABASE IF EXISTS {name}")).await;
            postgres_exec(&format!("CREATE DATABASE {name}")).await;
            let db = mediagen_store::Db::connect(&postgres_url_for(&name))
                .await
                .expect("the migrations apply");
            // A template must have no connections when it is copied.
            db.close().await;
            name
        })
        .await
}

async fn postgres_exec(sql: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&postgres_admin_url())
        .await
        .expect("PostgreSQL must answer for the PostgreSQL tests (make test starts one)");
    sqlx::Executor::execute(&mut conn, sql).await.expect(sql);
}

pub struct TestApp {
    pub addr: String,
    /// `metrics_bind`'s address, when the test set one.
    pub metrics_addr: Option<String>,
    pub client: reqwest::Client,
    /// Admin key of the operator account.
    pub admin_key: String,
    pub state: AppState,
    pub config: Config,
    pub data_dir: tempfile::TempDir,
    pg_db: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    /// The server's task, ended by `stop`.
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// A multipart form: a file part for each `(field, bytes, file name)` and a
/// text part for each `(field, value)`.
pub fn form(
    files: Vec<(&str, Vec<u8>, &str)>,
    fields: &[(&str, &str)],
) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for (field, bytes, name) in files {
        form = form.part(
            field.to_owned(),
            reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
        );
    }
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    form
}

/// Runs ffmpeg with `args`, writing `out` (over any file there).
pub fn ffmpeg(args: &[&str], out: &std::path::Path) {
    let ok = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(args)
        .arg(out)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// A video of ffmpeg's test picture with `speech` (a sound file) as its
/// sound, as long as the speech, written to `out`.
pub fn talking_video(speech: &std::path::Path, out: &std::path::Path) {
    let speech = speech.to_str().unwrap();
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x120:rate=25",
            "-i",
            speech,
            "-shortest",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
        ],
        out,
    );
}

/// The container's duration of the media file at `path`, by ffprobe.
pub fn probe_seconds(path: &std::path::Path) -> f64 {
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "format=duration"])
        .args(["-of", "csv=p=0"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{} does not parse", path.display());
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// A WAV file of `samples` silent samples, mono 16-bit at `rate`.
pub fn silent_wav(samples: u32, rate: u32) -> Vec<u8> {
    wav(&vec![0.0; samples as usize], rate)
}

/// A WAV file of `samples` (clipped to full scale), mono 16-bit at `rate`.
pub fn wav(samples: &[f32], rate: u32) -> Vec<u8> {
    let bytes = (samples.len() * 2) as u32;
    let mut v = Vec::with_capacity(44 + bytes as usize);
    v.extend_from_slice(b"RIFF");
    v.extend_from_slice(&(36 + bytes).to_le_bytes());
    v.extend_from_slice(b"WAVEfmt ");
    v.extend_from_slice(&16u32.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&rate.to_le_bytes());
    v.extend_from_slice(&(rate * 2).to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&16u16.to_le_bytes());
    v.extend_from_slice(b"data");
    v.extend_from_slice(&bytes.to_le_bytes());
    v.extend(
        samples
            .iter()
            .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes()),
    );
    v
}

impl TestApp {
    /// The id of the first voice of the catalog.
    pub async fn any_voice(&self, key: &str) -> String {
        self.first_voice(key, "").await
    }

    /// The id of the first voice `GET /v1/voices?{filters}` lists.
    pub async fn first_voice(&self, key: &str, filters: &str) -> String {
        let voices: Value = self
            .get(&format!("/v1/voices?{filters}&limit=1"), key)
            .await
            .json()
            .await
            .unwrap();
        voices["data"][0]["id"].as_str().unwrap().to_owned()
    }

    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, |_| {}).await
    }

    pub async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Self {
        let data_dir = tempfile::tempdir().unwrap();
        let pg_db = (backend == Backend::Postgres)
            .then(|| format!("mg_test_{}", random_base62(16).to_lowercase()));
        let database_url = match &pg_db {
            Some(name) => {
                let template = postgres_template().await;
                postgres_exec(&format!("CREATE DATABASE {name} TEMPLATE {template}")).await;
                postgres_url_for(name)
            }
            None => format!("sqlite://{}", data_dir.path().join("test.db").display()),
        };
        let mut config = Config {
            bind: "127.0.0.1:0".parse().unwrap(),
            data_dir: data_dir.path().to_owned(),
            models_dir: models_dir(),
            database_url,
            workers: 1,
            // Generous: under the whole suite on two slow cores a short
            // synchronous job has taken over 10 s (tests that want the
            // wait to run out set their own).
            sync_wait_seconds: 60.0,
            lease_seconds: 2.0,
            heartbeat_seconds: 0.2,
            // Retries back off from 0.1 s (5 s by default): tests of
            // failing jobs stay short.
            retry_backoff_seconds: 0.1,
            poll_seconds: 0.05,
            rate_limit_per_minute: 100_000,
            rate_limit_per_hour: 1_000_000,
            enable_test_jobs: true,
            // Each test has its own storage: the preview tests turn this on.
            previews_at_start: false,
            ..Config::default()
        };
        adjust(&mut config);
        let app = mediagen::application(config.clone())
            .await
            .expect("app builds");
        let addr = format!("http://127.0.0.1:{}", app.port());
        let metrics_addr = app.metrics_port().map(|p| format!("127.0.0.1:{p}"));
        let admin_key = app
            .bootstrap_key()
            .expect("fresh database creates the operator")
            .to_owned();
        let state = app.state().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Self {
            addr,
            metrics_addr,
            client: reqwest::Client::new(),
            admin_key,
            state,
            config,
            data_dir,
            pg_db,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the server (workers, dispatcher and all) and starts a new one
    /// on the same database and storage, as a restart of the process
    /// would; it listens on a new port (`addr`).
    pub async fn restart(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let ended = tokio::time::timeout(Duration::from_secs(60), task).await;
            assert!(ended.is_ok(), "the server did not stop");
        }
        let app = mediagen::application(self.config.clone())
            .await
            .expect("app builds again");
        self.addr = format!("http://127.0.0.1:{}", app.port());
        self.state = app.state().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        self.task = Some(tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        })));
        self.stop = Some(stop);
    }

    pub fn database_url(&self) -> &str {
        &self.config.database_url
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Response {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.addr)
        };
        let mut req = self.client.request(method, url);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.expect("request sent")
    }

    pub async fn get(&self, path: &str, key: &str) -> Response {
        self.request(Method::GET, path, Some(key), None).await
    }

    /// A GET's JSON body.
    pub async fn get_json(&self, path: &str, key: &str) -> Value {
        self.get(path, key).await.json().await.unwrap()
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Response {
        self.request(Method::POST, path, Some(key), Some(body))
            .await
    }

    /// POSTs a multipart form. Its connection is not reused: a request
    /// refused before its body is read (401, 403, 413) leaves the server
    /// closing the connection, and a pooled reuse would race that close.
    pub async fn post_form(
        &self,
        path: &str,
        key: &str,
        form: reqwest::multipart::Form,
    ) -> Response {
        self.client
            .post(format!("{}{path}", self.addr))
            .bearer_auth(key)
            .header(reqwest::header::CONNECTION, "close")
            .multipart(form)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn delete(&self, path: &str, key: &str) -> Response {
        self.request(Method::DELETE, path, Some(key), None).await
    }

    /// The job kinds `/readyz` reports live workers for.
    pub async fn ready_kinds(&self) -> Vec<String> {
        let r: Value = self
            .client
            .get(format!("{}/readyz", self.addr))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        serde_json::from_value(r["workerKinds"].clone()).unwrap()
    }

    /// A new key of the operator account.
    pub async fn key(&self, level: &str) -> String {
        let r = self
            .post(
                "/v1/keys",
                &self.admin_key,
                json!({"level": level, "name": level}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        r.json::<Value>().await.unwrap()["key"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A new (non-operator) account with `credits`; returns its id and a key
    /// of `level`.
    pub async fn account(&self, credits: i64, level: &str) -> (String, String) {
        let r = self
            .post(
                "/v1/accounts",
                &self.admin_key,
                json!({"name": "customer", "credits": credits}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let id = r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let r = self
            .post(
                &format!("/v1/accounts/{id}/keys"),
                &self.admin_key,
                json!({"level": level}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let key = r.json::<Value>().await.unwrap()["key"]
            .as_str()
            .unwrap()
            .to_owned();
        (id, key)
    }

    /// Submits a `test.sleep` job and returns the response.
    pub async fn test_job(&self, key: &str, body: Value) -> Response {
        self.post("/v1/test-jobs", key, body).await
    }

    /// Submits a `test.sleep` job with `Prefer: respond-async` and returns its id.
    pub async fn test_job_async(&self, key: &str, body: Value) -> String {
        let r = self
            .client
            .post(format!("{}/v1/test-jobs", self.addr))
            .bearer_auth(key)
            .header("prefer", "respond-async")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Polls a job until `done(job)` holds or `timeout` passes.
    pub async fn wait_job(
        &self,
        key: &str,
        id: &str,
        timeout: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let job: Value = self
                .get(&format!("/v1/jobs/{id}"), key)
                .await
                .json()
                .await
                .unwrap();
            if done(&job) {
                return job;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "job never reached the expected state: {job}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The job a request answered with, once it has ended (see
    /// [`TestApp::settled`]).
    pub async fn finished(&self, key: &str, r: Response, timeout: Duration) -> Value {
        let job: Value = r.json().await.unwrap();
        let id = job["id"]
            .as_str()
            .unwrap_or_else(|| panic!("not a job: {job}"));
        self.settled(key, id, timeout).await
    }

    /// Polls a job until it has ended (neither queued nor processing).
    pub async fn settled(&self, key: &str, id: &str, timeout: Duration) -> Value {
        self.wait_job(key, id, timeout, |j| {
            j["status"] != "queued" && j["status"] != "processing"
        })
        .await
    }

    /// The id of the resource (a cloned voice, an avatar) a creation
    /// request made: at once (201), or once its job completed (202: the
    /// worker took longer than `sync_wait_seconds`; `result.<field>`).
    pub async fn made(&self, key: &str, r: Response, field: &str) -> String {
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        match status {
            201 => v["id"].as_str().unwrap().to_owned(),
            202 => {
                let id = v["id"].as_str().unwrap();
                let job = self.settled(key, id, Duration::from_secs(300)).await;
                assert_eq!(job["status"], "completed", "{job}");
                job["result"][field].as_str().unwrap().to_owned()
            }
            _ => panic!("not created: {status} {v}"),
        }
    }

    /// Uploads `bytes` as file `name` (`POST /v1/files`); its id.
    pub async fn upload(&self, key: &str, bytes: Vec<u8>, name: &str) -> String {
        let r = self
            .post_form("/v1/files", key, form(vec![("file", bytes, name)], &[]))
            .await;
        assert_eq!(r.status(), 201);
        r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The body of a result URL (signed, so no key).
    pub async fn download(&self, url: &str) -> Vec<u8> {
        let r = self.client.get(url).send().await.unwrap();
        assert_eq!(r.status(), 200, "{url}");
        r.bytes().await.unwrap().to_vec()
    }

    /// The published OpenAPI document.
    pub async fn openapi(&self) -> Value {
        self.client
            .get(format!("{}/v1/openapi.json", self.addr))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn account_view(&self, key: &str) -> Value {
        self.get("/v1/account", key).await.json().await.unwrap()
    }
}

/// Another API process on a [`TestApp`]'s database and storage, stopped
/// when dropped.
pub struct Peer {
    pub addr: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl TestApp {
    /// Starts another API process on this app's database and storage,
    /// without workers unless `adjust` says otherwise.
    pub async fn peer(&self, adjust: impl FnOnce(&mut Config)) -> Peer {
        let mut config = self.config.clone();
        config.workers = 0;
        adjust(&mut config);
        let app = mediagen::application(config).await.expect("peer builds");
        let addr = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Peer {
            addr,
            stop: Some(stop),
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(name) = self.pg_db.take() {
            // Dropped on a thread of its own, not waited for: Drop cannot
            // await, and a DROP DATABASE waits for a checkpoint (about a
            // second) that the next test need not wait for. What the end of
            // the process cuts short, scripts/test.sh drops.
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(postgres_exec(&format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )));
            });
        }
    }
}

/// Asserts the error shape: status, `error.code`, a message, a details
/// object, and a `request_id` equal to the `X-Request-Id` header. Returns
/// the body.
/// Asserts that job `id` held credits once and captured them once: it ran
/// to completion exactly once as far as the account is concerned.
pub fn assert_held_and_captured_once(ledger: &[mediagen_store::LedgerEntry], id: &str) {
    let entries = |kind: &str| {
        ledger
            .iter()
            .filter(|e| e.job_id.as_deref() == Some(id) && e.entry == kind)
            .count()
    };
    assert_eq!((entries("reserve"), entries("capture")), (1, 1), "{id}");
}

/// Asserts that an account's ledger adds up to what it shows: `credits`
/// (`GET /v1/account`'s) has the balance the grants leave after holds and
/// refunds, nothing held, and the captures as its usage.
pub fn assert_ledger_adds_up(ledger: &[mediagen_store::LedgerEntry], credits: &Value) {
    let sum = |kinds: &[&str]| -> i64 {
        ledger
            .iter()
            .filter(|e| kinds.contains(&e.entry.as_str()))
            .map(|e| e.amount)
            .sum()
    };
    assert_eq!(
        credits["balance"].as_i64().unwrap(),
        sum(&["grant"]) - sum(&["reserve"]) + sum(&["refund"]) - sum(&["top_up"]),
        "{credits}"
    );
    assert_eq!(credits["reserved"], 0, "{credits}");
    assert_eq!(
        credits["used"].as_i64().unwrap(),
        sum(&["capture"]) + sum(&["top_up"]),
        "{credits}"
    );
}

pub async fn assert_error(r: Response, status: u16, code: &str) -> Value {
    assert_eq!(r.status().as_u16(), status, "status for {code}");
    let header_id = r
        .headers()
        .get("x-request-id")
        .expect("X-Request-Id")
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(r.headers().get("content-type").unwrap(), "application/json");
    let body: Value = r.json().await.unwrap();
    let e = &body["error"];
    assert_eq!(e["code"], code, "{body}");
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(e["details"].is_object(), "{body}");
    assert_eq!(e["request_id"], header_id, "{body}");
    body
}

/// Generates one `#[tokio::test]` per backend for each listed async test
/// function, so the whole suite runs on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::helpers::Backend::Sqlite).await }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::helpers::Backend::Postgres).await }
            )*
        }
    };
}
