use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, ConnectOptions, Executor, Row};

/// Errors of the persistence layer. They are server faults: the HTTP layer
/// maps them to 500 without leaking their text, or to 503 with
/// `Retry-After` when the database is unreachable ([`Self::is_unavailable`]).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database url `{0}`: use sqlite://… or postgres://…")]
    UnsupportedUrl(String),
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// The database could not be reached or is restarting: a connection
    /// refused or lost, a pool that found no connection in time,
    /// PostgreSQL's connection errors (class 08), its shutdown and
    /// start-up errors (57P01–57P03) and too many connections (53300). A
    /// fault that passes, unlike a bad query or a corrupt row.
    pub fn is_unavailable(&self) -> bool {
        let StoreError::Sqlx(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| {
                code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")
            }),
            _ => false,
        }
    }
}

/// Rides out a database outage of up to `limit`, for work that should
/// wait through a database restart rather than fail (a streamed response
/// and the worker feeding it): after each failure,
/// [`Outage::wait_after`] says whether to try again.
pub struct Outage {
    limit: std::time::Duration,
    since: Option<std::time::Instant>,
}

impl Outage {
    pub fn new(limit: std::time::Duration) -> Self {
        Self { limit, since: None }
    }

    /// True (after a second's wait) when `e` found the database unreachable
    /// ([`StoreError::is_unavailable`]) and `limit` has not passed since the
    /// first such failure; false for any other error, or once it has.
    pub async fn wait_after(&mut self, e: &StoreError) -> bool {
        if !e.is_unavailable() {
            return false;
        }
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        if since.elapsed() > self.limit {
            return false;
        }
        tracing::debug!(error = %e, "waiting for the database");
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        true
    }
}

/// Which SQL dialect the pool speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The database: one pool, one dialect.
#[derive(Clone)]
pub struct Db {
    pub(crate) pool: AnyPool,
    pub(crate) backend: Backend,
    /// How long an `Idempotency-Key` is remembered (requests and jobs).
    pub(crate) idempotency_ttl_ms: i64,
    /// The PostgreSQL URL, for the wake-up listener's own connection.
    pub(crate) url: Option<String>,
    /// Set when a query found the database unreachable, cleared when a
    /// ping answers: while set, the API answers 503 at once instead of
    /// waiting for a connection ([`Self::is_down`]).
    pub(crate) down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Idempotency keys are remembered this long unless configured otherwise.
pub const IDEMPOTENCY_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

impl Db {
    /// Remembers idempotency keys for `ttl` (at least a second) instead of
    /// [`IDEMPOTENCY_TTL`].
    pub fn with_idempotency_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.idempotency_ttl_ms = ttl.as_millis().clamp(1000, i64::MAX as u128) as i64;
        self
    }

    /// Keys used before this moment are forgotten.
    pub(crate) fn idempotency_cutoff(&self) -> i64 {
        mediagen_core::time::now_ms().saturating_sub(self.idempotency_ttl_ms)
    }

    /// Connects to `url` (`sqlite://path`, `postgres://…`), creating a SQLite
    /// file when missing, and applies the migrations of that dialect.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(StoreError::UnsupportedUrl(url.to_owned()));
        };
        let mut url = url.to_owned();
        if backend == Backend::Sqlite && !url.contains("mode=") {
            url.push_str(if url.contains('?') {
                "&mode=rwc"
            } else {
                "?mode=rwc"
            });
        }
        let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
        let pool = match backend {
            // WAL lets readers run beside the single writer; NORMAL sync is
            // durable across process crashes (the guarantee jobs need) and
            // much faster than FULL.
            Backend::Sqlite => {
                AnyPoolOptions::new()
                    .max_connections(8)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute(
                                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \
                                 PRAGMA busy_timeout=10000; PRAGMA foreign_keys=ON;",
                            )
                            .await?;
                            Ok(())
                        })
                    })
                    .connect_with(options)
                    .await?
            }
            Backend::Postgres => {
                // A connection waits up to 15 s: a server under load (or
                // two cores shared with the engines) can take seconds to
                // accept one, which is not a reason to fail; a server that
                // is down answers 503 after that wait, and the pool opens
                // fresh connections once it is back (no restart).
                AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(15))
                    .connect_with(options)
                    .await?
            }
        };
        match backend {
            Backend::Sqlite => sqlx::migrate!("./migrations/sqlite").run(&pool).await?,
            Backend::Postgres => sqlx::migrate!("./migrations/postgres").run(&pool).await?,
        }
        Ok(Self {
            url: (backend == Backend::Postgres).then(|| url.clone()),
            pool,
            backend,
            idempotency_ttl_ms: IDEMPOTENCY_TTL.as_millis() as i64,
            down: Default::default(),
        })
    }

    /// Notes that a query found the database unreachable.
    pub fn mark_down(&self) {
        self.down.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a query found the database unreachable since the last ping
    /// that answered.
    pub fn is_down(&self) -> bool {
        self.down.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// True when the database answers a trivial query.
    pub async fn ping(&self) -> bool {
        let answered = sqlx::query("SELECT 1").execute(&self.pool).await.is_ok();
        if answered {
            self.down.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        answered
    }

    /// Returns the stored value of setting `name`, storing `init()` first when
    /// none exists. Safe when several processes race: the first write wins.
    pub async fn setting_or_init(
        &self,
        name: &str,
        init: impl FnOnce() -> String,
    ) -> Result<String, StoreError> {
        sqlx::query(
            "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(init())
        .execute(&self.pool)
        .await?;
        let row = sqlx::query("SELECT value FROM settings WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get("value")?)
    }

    /// One page of an account's rows of `table`, newest first, with the
    /// account's total count: the shape of every per-account list.
    pub(crate) async fn account_page<T>(
        &self,
        table: &str,
        cols: &str,
        account_id: &str,
        limit: i64,
        offset: i64,
        map: impl Fn(&AnyRow) -> Result<T, StoreError>,
    ) -> Result<(Vec<T>, u64), StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {cols} FROM {table} WHERE account_id = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
        ))
        .bind(account_id)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let total: i64 = sqlx::query(&format!(
            "SELECT COUNT(*) AS n FROM {table} WHERE account_id = $1"
        ))
        .bind(account_id)
        .fetch_one(&self.pool)
        .await?
        .try_get("n")?;
        let items = rows.iter().map(map).collect::<Result<_, _>>()?;
        Ok((items, total as u64))
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_outage_is_waited_out_within_its_limit_only() {
        let down = StoreError::Sqlx(sqlx::Error::PoolTimedOut);
        let refused = StoreError::Corrupt("a bad row".into());
        let mut outage = Outage::new(std::time::Duration::from_millis(1500));
        assert!(
            !outage.wait_after(&refused).await,
            "other errors are not waited out"
        );
        assert!(outage.wait_after(&down).await);
        assert!(
            outage.wait_after(&down).await,
            "1 s after the first failure"
        );
        assert!(!outage.wait_after(&down).await, "2 s: past the limit");
    }
}
