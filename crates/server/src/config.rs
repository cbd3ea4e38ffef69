//! Configuration, layered: built-in defaults → optional TOML file →
//! `MEDIAGEN_*` environment variables → command-line flags.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use mediagen_core::JobKind;
use serde::{Deserialize, Serialize};

/// A string that never appears in logs or `Debug` output.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"[redacted]\"")
    }
}

/// Every setting of the server and workers. Each field can be set in the
/// TOML file under its own name, or as `MEDIAGEN_<NAME>` in the environment
/// (e.g. `MEDIAGEN_SYNC_WAIT_SECONDS=5`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the API listens on.
    pub bind: SocketAddr,
    /// A second address serving only `/metrics`, without a key (for a
    /// Prometheus scraper on a private network); empty: none. On `bind`,
    /// `/metrics` takes an admin key of the operator account.
    pub metrics_bind: String,
    /// Most connections open at once (kept below the process's open-file
    /// limit); a connection past it is closed as it is accepted.
    pub max_connections: usize,
    /// Most connections one address (an IPv4 address or an IPv6 /64) may
    /// hold open before one of its requests has shown a valid key.
    pub max_anonymous_connections_per_address: usize,
    /// Most connections the keys of one account may hold open together
    /// (a connection counts for the account of the first key it shows).
    pub max_connections_per_account: usize,
    /// A request's headers must arrive within this time, and a keep-alive
    /// connection idle this long is closed.
    pub header_read_timeout_seconds: f64,
    /// Where the SQLite database and local blob storage live.
    pub data_dir: PathBuf,
    /// Where engines look for model files.
    pub models_dir: PathBuf,
    /// `sqlite://<path>` or `postgres://…`; empty means `sqlite://<data_dir>/mediagen.db`.
    pub database_url: String,
    /// Directory for job outputs; empty means `<data_dir>/blobs`. Used
    /// when `storage_url` is empty.
    pub storage_dir: String,
    /// Where files are stored: empty (the local `storage_dir`),
    /// `file:///dir`, or `s3://bucket/prefix` for any S3-compatible store,
    /// configured by the standard `AWS_*` variables (`AWS_ENDPOINT_URL`,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
    /// `AWS_ALLOW_HTTP`) and `storage_options`.
    pub storage_url: String,
    /// S3 settings by their lower-case names (`aws_endpoint`,
    /// `aws_region`, `aws_allow_http`, …), over the `AWS_*` variables.
    pub storage_options: BTreeMap<String, String>,
    /// Seconds a request to an S3 store is retried (with backoff) before it
    /// fails: an API request then answers 503 with `Retry-After`, a job
    /// retries.
    pub storage_retry_seconds: f64,
    /// `true`: signed result URLs answer with a redirect (307) to a
    /// presigned URL of the S3 store, which then serves the bytes; `false`
    /// (default): this server streams them from the store.
    pub storage_redirect: bool,
    /// Base of the absolute result URLs; empty means `http://<bind>`.
    pub public_base_url: String,
    /// HMAC key for signed URLs. Empty: a random key is generated once and
    /// kept in the database, so every process of one deployment shares it.
    pub signing_secret: Secret,
    /// How long signed result URLs stay valid.
    pub url_ttl_seconds: u64,
    /// Allow webhook endpoints on loopback, private and link-local
    /// addresses (refused by default: a webhook must not reach the
    /// server's own network).
    pub webhook_allow_private: bool,
    /// How long a capability endpoint waits for its job before answering
    /// 202 with the queued job instead of the finished one.
    pub sync_wait_seconds: f64,
    /// Jobs run at once by the workers inside `mediagen serve` (0: none,
    /// for deployments with separate `mediagen worker` processes).
    pub workers: usize,
    /// Jobs run at once by `mediagen worker`.
    pub worker_concurrency: usize,
    /// Live sessions (`stt.realtime`) a worker process runs at once, beside
    /// its jobs (0: none).
    pub session_slots: usize,
    /// Where a worker with session slots takes the API's relays of its
    /// sessions (`host:port`; port 0 picks a free one).
    pub sessions_bind: String,
    /// The address API processes reach `sessions_bind` at, when it is not
    /// the bound one (a container's or host's name); empty: the bound one.
    pub sessions_advertise: String,
    /// Live sessions one account may hold open at once (429 at the upgrade
    /// past it).
    pub max_sessions_per_account: i64,
    /// A live session that receives nothing for this long is closed.
    pub session_idle_seconds: f64,
    /// The job kinds this process's workers claim, comma-separated (`tts,stt`;
    /// `mediagen worker --kinds`); empty: every kind. Jobs of a kind no live
    /// worker claims wait queued.
    pub worker_kinds: String,
    /// Lease of a claimed job; a worker silent this long is presumed dead.
    pub lease_seconds: f64,
    /// How often a running job's lease is renewed.
    pub heartbeat_seconds: f64,
    /// How often idle workers poll for work.
    pub poll_seconds: f64,
    /// Attempts per job before it fails for good.
    pub max_attempts: i64,
    /// Seconds a job waits after its first retryable failure (a storage
    /// fault, a busy engine) before it runs again; each later wait doubles,
    /// at most 60 s.
    pub retry_backoff_seconds: f64,
    /// Most wall-clock time of one job attempt (plus the media allowance):
    /// a cap on each kind's own limit (docs/billing.md lists them).
    pub job_timeout_seconds: f64,
    /// Most extra time per second of input media (long files get longer):
    /// a cap on each kind's own allowance.
    pub timeout_per_media_second: f64,
    /// How long a key lookup is reused by this process. Revocations made
    /// through this process apply at once; those made elsewhere (another
    /// process, the CLI) within this time. 0 disables the cache.
    pub auth_cache_seconds: f64,
    /// CPU threads each neural engine may use for one request.
    pub engine_threads: usize,
    /// Most ranges one video trim may have.
    pub max_trim_ranges: usize,
    /// Speech-to-text chunks decoded at once across all requests (each
    /// decoding takes one thread on the CTranslate2 engine); waiting
    /// requests take turns chunk by chunk, first come first served. A long
    /// file is decoded in this many parts side by side.
    pub stt_concurrency: usize,
    /// Requests per minute per account (its keys share the count).
    pub rate_limit_per_minute: u32,
    /// Requests per hour per account (its keys share the count).
    pub rate_limit_per_hour: u32,
    /// Live API keys (not revoked, not expired) one account may hold.
    pub max_keys_per_account: u32,
    /// Workers that run `tts` make every catalog voice's preview
    /// as they start (kept under the models directory for later starts).
    pub previews_at_start: bool,
    /// Where the rate-limit counters live: `database` (shared by every API
    /// process: exact across them), `memory` (each process counts its own
    /// traffic) or empty for the default: `database` on PostgreSQL,
    /// `memory` on SQLite.
    pub rate_limit_store: String,
    /// Jobs one account may have queued or running at once.
    pub max_concurrent_jobs: i64,
    /// Largest JSON request body, in bytes.
    pub json_body_limit: usize,
    /// Largest multipart (upload) request body, in bytes.
    pub upload_body_limit: usize,
    /// An upload that sends nothing for this long is refused (408).
    pub upload_idle_seconds: f64,
    /// An upload must arrive whole within this time (408).
    pub upload_timeout_seconds: f64,
    /// Days a finished job and its outputs are kept (0: forever). Result
    /// URLs never outlive it.
    pub job_retention_days: f64,
    /// Days an uploaded file is kept (0: forever), and longer while a
    /// queued or running job reads it.
    pub file_retention_days: f64,
    /// How long an `Idempotency-Key` is remembered (replays and the jobs
    /// it made); a key used again later starts a new request.
    pub idempotency_ttl_seconds: f64,
    /// Credits granted to the operator account created on first start.
    pub initial_credits: i64,
    /// Credits per unit of work, by job kind, where they differ from the
    /// kind's own price (docs/billing.md lists the kinds, their units and
    /// prices).
    pub costs: BTreeMap<String, f64>,
    /// Registers the internal `test.sleep` job kind and its route. For the
    /// test suite only.
    pub enable_test_jobs: bool,
    /// Problems found while loading, logged once logging is up.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".parse().expect("valid default address"),
            metrics_bind: String::new(),
            max_connections: 4096,
            max_anonymous_connections_per_address: 64,
            max_connections_per_account: 256,
            header_read_timeout_seconds: 10.0,
            data_dir: PathBuf::from("./data"),
            models_dir: PathBuf::from("./models"),
            database_url: String::new(),
            storage_dir: String::new(),
            storage_url: String::new(),
            storage_options: BTreeMap::new(),
            storage_retry_seconds: 30.0,
            storage_redirect: false,
            worker_kinds: String::new(),
            public_base_url: String::new(),
            signing_secret: Secret::default(),
            url_ttl_seconds: 24 * 3600,
            webhook_allow_private: false,
            sync_wait_seconds: 30.0,
            workers: 2,
            worker_concurrency: 2,
            session_slots: 4,
            sessions_bind: "127.0.0.1:0".into(),
            sessions_advertise: String::new(),
            max_sessions_per_account: 4,
            session_idle_seconds: 20.0,
            lease_seconds: 30.0,
            heartbeat_seconds: 5.0,
            poll_seconds: 0.5,
            max_attempts: 3,
            retry_backoff_seconds: 5.0,
            job_timeout_seconds: 1800.0,
            timeout_per_media_second: 2.0,
            auth_cache_seconds: 1.0,
            engine_threads: 2,
            stt_concurrency: 2,
            max_trim_ranges: 50,
            rate_limit_per_minute: 600,
            rate_limit_per_hour: 20_000,
            max_keys_per_account: 100,
            previews_at_start: true,
            rate_limit_store: String::new(),
            max_concurrent_jobs: 10,
            json_body_limit: 1024 * 1024,
            upload_body_limit: 1024 * 1024 * 1024,
            upload_idle_seconds: 30.0,
            upload_timeout_seconds: 1800.0,
            idempotency_ttl_seconds: 24.0 * 3600.0,
            job_retention_days: 30.0,
            file_retention_days: 30.0,
            initial_credits: 1_000_000,
            costs: BTreeMap::new(),
            enable_test_jobs: false,
            warnings: Vec::new(),
        }
    }
}

/// Values given on the command line (clap also reads their `MEDIAGEN_*`
/// variables); they override the file and the other variables.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub bind: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub models_dir: Option<PathBuf>,
    pub database_url: Option<String>,
}

impl Config {
    /// Loads the layers: defaults, the TOML file (if any), `MEDIAGEN_*`
    /// variables from `env`, then `overrides`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: Overrides,
    ) -> anyhow::Result<Self> {
        let mut table = toml::Table::try_from(Config::default())?;
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            let file_table: toml::Table = toml::from_str(&text)
                .with_context(|| format!("parsing config file {}", path.display()))?;
            for (k, v) in file_table {
                table.insert(k, v);
            }
        }
        let mut warnings = Vec::new();
        for (name, value) in env {
            let Some(field) = name.strip_prefix("MEDIAGEN_") else {
                continue;
            };
            let field = field.to_ascii_lowercase();
            if field == "config" || field == "log" {
                continue;
            }
            let Some(current) = table.get(&field) else {
                warnings.push(format!(
                    "ignoring unknown setting {name} (see docs/configuration.md)"
                ));
                continue;
            };
            let parsed = parse_env_value(current, &value)
                .with_context(|| format!("invalid value for {name}"))?;
            table.insert(field, parsed);
        }
        let mut config: Config = table.try_into().context("invalid configuration")?;
        config.check_kinds()?;
        config.warnings = warnings;
        if let Some(v) = overrides.bind {
            config.bind = v;
        }
        if let Some(v) = overrides.data_dir {
            config.data_dir = v;
        }
        if let Some(v) = overrides.models_dir {
            config.models_dir = v;
        }
        if let Some(v) = overrides.database_url {
            config.database_url = v;
        }
        Ok(config)
    }

    /// The database URL, defaulting to a SQLite file in the data directory.
    pub fn database_url(&self) -> String {
        if self.database_url.is_empty() {
            format!("sqlite://{}", self.data_dir.join("mediagen.db").display())
        } else {
            self.database_url.clone()
        }
    }

    /// The blob directory, defaulting to `<data_dir>/blobs`.
    pub fn storage_dir(&self) -> PathBuf {
        if self.storage_dir.is_empty() {
            self.data_dir.join("blobs")
        } else {
            PathBuf::from(&self.storage_dir)
        }
    }

    /// `days` as a duration, `None` for 0 (keep forever).
    fn kept(days: f64) -> Option<std::time::Duration> {
        (days > 0.0).then(|| std::time::Duration::from_secs_f64(days * 86_400.0))
    }

    /// How long finished jobs (`job_retention_days`) and uploads
    /// (`file_retention_days`) are kept.
    pub fn retention(&self) -> mediagen_worker::Retention {
        mediagen_worker::Retention {
            jobs: Self::kept(self.job_retention_days),
            files: Self::kept(self.file_retention_days),
        }
    }

    /// The kinds of `worker_kinds` (empty: every kind); a name that is no
    /// kind is an error naming the kinds.
    pub fn worker_kinds(&self) -> anyhow::Result<Vec<JobKind>> {
        self.worker_kinds
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| {
                JobKind::parse(k)
                    .filter(|k| *k != JobKind::TestSleep || self.enable_test_jobs)
                    .with_context(|| {
                        format!(
                            "worker_kinds: unknown job kind `{k}` (this build runs: {})",
                            self.kind_names()
                        )
                    })
            })
            .collect()
    }

    /// The names of the kinds this process can run, for errors
    /// (`test.sleep` only with test jobs on).
    fn kind_names(&self) -> String {
        let kinds = JobKind::ALL.into_iter();
        let runs: Vec<&str> = kinds
            .filter(|k| *k != JobKind::TestSleep || self.enable_test_jobs)
            .map(JobKind::name)
            .collect();
        runs.join(", ")
    }

    /// Every kind named in `worker_kinds` and `costs` is one, and no price
    /// is negative.
    fn check_kinds(&self) -> anyhow::Result<()> {
        self.worker_kinds()?;
        for (kind, price) in &self.costs {
            if JobKind::parse(kind).is_none() {
                bail!(
                    "costs: unknown job kind `{kind}` (the kinds: {})",
                    self.kind_names()
                );
            }
            if !(price.is_finite() && *price >= 0.0) {
                bail!("costs: the price of `{kind}` must be a number of credits, 0 or more");
            }
        }
        Ok(())
    }

    /// Credits per unit of `kind`: the `costs` table's, else the kind's own.
    pub fn cost_per_unit(&self, kind: JobKind) -> f64 {
        self.costs
            .get(kind.name())
            .copied()
            .unwrap_or(kind.price().credits)
    }

    /// The time limit of a `kind` job over `media_seconds` of input, in
    /// seconds: the kind's, capped by `job_timeout_seconds` and
    /// `timeout_per_media_second`.
    pub fn job_timeout(&self, kind: JobKind, media_seconds: f64) -> f64 {
        let limit = kind.time_limit();
        limit.seconds.min(self.job_timeout_seconds)
            + media_seconds.max(0.0) * limit.per_media_second.min(self.timeout_per_media_second)
    }
}

/// Parses an environment value with the type of the default it replaces.
fn parse_env_value(current: &toml::Value, raw: &str) -> anyhow::Result<toml::Value> {
    Ok(match current {
        toml::Value::String(_) => toml::Value::String(raw.to_owned()),
        toml::Value::Integer(_) => toml::Value::Integer(raw.trim().parse()?),
        toml::Value::Float(_) => toml::Value::Float(raw.trim().parse()?),
        toml::Value::Boolean(_) => toml::Value::Boolean(match raw.trim() {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" => false,
            other => bail!("`{other}` is not a boolean"),
        }),
        _ => {
            let wrapped: toml::Table = toml::from_str(&format!("v = {raw}"))?;
            wrapped
                .get("v")
                .cloned()
                .unwrap_or(toml::Value::String(raw.to_owned()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn layers_apply_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mediagen.toml");
        std::fs::write(
            &file,
            "sync_wait_seconds = 3.5\nworkers = 4\nbind = \"127.0.0.1:9000\"\n[costs]\ntts = 0.5\n",
        )
        .unwrap();
        let c = Config::load(
            Some(&file),
            env(&[
                ("MEDIAGEN_WORKERS", "7"),
                ("MEDIAGEN_BIND", "127.0.0.1:9100"),
                ("PATH", "/bin"),
            ]),
            Overrides {
                bind: Some("127.0.0.1:9200".parse().unwrap()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.sync_wait_seconds, 3.5, "file beats default");
        assert_eq!(c.workers, 7, "env beats file");
        assert_eq!(c.bind.port(), 9200, "flag beats env");
        assert_eq!(c.cost_per_unit(JobKind::Tts), 0.5);
        // The file's table changes the kinds it names, not the others.
        assert_eq!(c.cost_per_unit(JobKind::Dubbing), 2.0);
        assert_eq!(c.cost_per_unit(JobKind::AvatarCreate), 1.0);
        assert_eq!(c.rate_limit_per_minute, 600, "default kept");
    }

    #[test]
    fn bad_settings_are_refused() {
        let typo = Config::load(
            None,
            env(&[("MEDIAGEN_WORKRES", "1")]),
            Overrides::default(),
        )
        .unwrap();
        assert!(typo.warnings[0].contains("MEDIAGEN_WORKRES"));
        assert!(Config::load(
            None,
            env(&[("MEDIAGEN_WORKERS", "many")]),
            Overrides::default()
        )
        .is_err());
        assert!(
            Config::load(
                None,
                env(&[("MEDIAGEN_ENABLE_TEST_JOBS", "yes")]),
                Overrides::default()
            )
            .unwrap()
            .enable_test_jobs
        );
        // Kinds are checked: a misspelt one would run or price nothing.
        for (name, value) in [
            ("MEDIAGEN_WORKER_KINDS", "tts,video-trim"),
            ("MEDIAGEN_COSTS", "{ speech = 2.0 }"),
            ("MEDIAGEN_COSTS", "{ tts = -1.0 }"),
        ] {
            let refused = Config::load(None, env(&[(name, value)]), Overrides::default())
                .expect_err(value)
                .to_string();
            assert!(
                refused.contains(
                    name.trim_start_matches("MEDIAGEN_")
                        .to_ascii_lowercase()
                        .as_str()
                ),
                "{refused}"
            );
        }
        let kinds = Config::load(
            None,
            env(&[("MEDIAGEN_WORKER_KINDS", " tts , video.trim")]),
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            kinds.worker_kinds().unwrap(),
            [JobKind::Tts, JobKind::VideoTrim]
        );
    }

    #[test]
    fn every_setting_is_documented() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/configuration.md"
        ))
        .unwrap();
        for name in toml::Table::try_from(Config::default()).unwrap().keys() {
            assert!(
                doc.contains(&format!("| `{name}` |")),
                "docs/configuration.md lacks `{name}`"
            );
        }
    }

    #[test]
    fn secrets_do_not_print() {
        let c = Config {
            signing_secret: Secret("hunter2".into()),
            ..Config::default()
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn database_defaults_to_sqlite_in_data_dir() {
        let c = Config {
            data_dir: "/tmp/x".into(),
            ..Config::default()
        };
        assert_eq!(c.database_url(), "sqlite:///tmp/x/mediagen.db");
    }
}
