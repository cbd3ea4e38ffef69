use std::time::Duration;

use mediagen_core::job::{Job, JobError, JobOutput};
use mediagen_core::ErrorCode;
use mediagen_core::{time::now_ms, CreditState, JobKind, JobStatus};
use mediagen_core::{AccountId, JobId};
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::accounts::{post, Movement};
use crate::db::{Backend, Db, StoreError};

/// A job to enqueue, with the credits to hold for it.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub account_id: AccountId,
    pub kind: JobKind,
    pub payload: Value,
    pub cost: i64,
    /// The units the hold was priced on (estimated) and the credits per
    /// unit: a job that measures what it processed settles on that.
    pub units: f64,
    pub unit_price: f64,
    pub max_attempts: i64,
    pub timeout_ms: i64,
    pub idempotency_key: Option<String>,
    /// Jobs the account may have queued or running at once.
    pub max_concurrent: i64,
    /// The request's own `webhookUrl` (checked by the API), told of the
    /// job's end.
    pub webhook_url: Option<String>,
}

#[cfg(test)]
impl NewJob {
    /// A job of `kind` for the store's tests: 1 credit, 3 attempts.
    pub(crate) fn test(account_id: &AccountId, kind: JobKind) -> Self {
        NewJob {
            account_id: account_id.clone(),
            kind,
            payload: serde_json::json!({}),
            cost: 1,
            units: 1.0,
            unit_price: 1.0,
            max_attempts: 3,
            timeout_ms: 60_000,
            idempotency_key: None,
            max_concurrent: 10,
            webhook_url: None,
        }
    }
}

/// Why a job was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateJobError {
    #[error("insufficient credits: {required} required, {available} available")]
    InsufficientCredits { required: i64, available: i64 },
    #[error("{limit} jobs already queued or running")]
    TooManyJobs { limit: i64 },
    /// A job with this idempotency key exists already: here it is.
    #[error("duplicate idempotency key")]
    Duplicate(Box<Job>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for CreateJobError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(e.into())
    }
}

/// Filters of the job list.
#[derive(Debug, Default, Clone)]
pub struct JobFilter {
    pub status: Option<JobStatus>,
    pub kind: Option<JobKind>,
}

/// Jobs per kind and status, for metrics.
#[derive(Debug, Clone)]
pub struct QueueDepth {
    pub kind: String,
    pub status: String,
    pub count: i64,
}

const JOB_COLS: &str =
    "id, account_id, kind, status, payload, result, outputs, error, progress, cost, \
                        credit_state, attempts, max_attempts, timeout_ms, created_at, updated_at";

fn job_from_row(row: &AnyRow) -> Result<Job, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(what.to_owned());
    let json = |col: &str| -> Result<Option<Value>, StoreError> {
        let text: Option<String> = row.try_get(col)?;
        text.map(|t| serde_json::from_str(&t).map_err(|_| corrupt(col)))
            .transpose()
    };
    let status: String = row.try_get("status")?;
    let credit: String = row.try_get("credit_state")?;
    let kind: String = row.try_get("kind")?;
    Ok(Job {
        id: JobId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        kind: JobKind::parse(&kind).ok_or_else(|| corrupt("kind"))?,
        status: JobStatus::parse(&status).ok_or_else(|| corrupt("status"))?,
        payload: json("payload")?.unwrap_or(Value::Null),
        result: json("result")?,
        outputs: json("outputs")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|_| corrupt("outputs"))?
            .unwrap_or_default(),
        error: json("error")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|_| corrupt("error"))?,
        progress: row.try_get("progress")?,
        cost: row.try_get("cost")?,
        credit_state: match credit.as_str() {
            "held" => CreditState::Held,
            "captured" => CreditState::Captured,
            "refunded" => CreditState::Refunded,
            _ => return Err(corrupt("credit_state")),
        },
        attempts: row.try_get("attempts")?,
        max_attempts: row.try_get("max_attempts")?,
        timeout_ms: row.try_get("timeout_ms")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// Moves a job's credit hold to `to` exactly once: the conditional UPDATE
/// on `credit_state` makes a second settlement a no-op.
async fn settle(conn: &mut AnyConnection, job: &Job, to: CreditState) -> Result<(), StoreError> {
    let changed =
        sqlx::query("UPDATE jobs SET credit_state = $2 WHERE id = $1 AND credit_state = 'held'")
            .bind(job.id.as_str())
            .bind(to.as_str())
            .execute(&mut *conn)
            .await?
            .rows_affected();
    if changed == 1 {
        let movement = match to {
            CreditState::Captured => Movement::capture(&job.id, job.cost),
            _ => Movement::refund(&job.id, job.cost),
        };
        post(conn, &job.account_id, movement).await?;
    }
    Ok(())
}

/// The credits due for `job` once its units are known: `units` maps the
/// estimate the hold was priced on to the units to charge. Jobs from
/// before prices were kept per job owe their hold.
async fn due_for(
    conn: &mut AnyConnection,
    job: &Job,
    units: impl FnOnce(f64) -> f64,
) -> Result<i64, StoreError> {
    let row = sqlx::query("SELECT units, unit_price FROM jobs WHERE id = $1")
        .bind(job.id.as_str())
        .fetch_one(&mut *conn)
        .await?;
    let estimated: Option<f64> = row.try_get("units")?;
    let per_unit: Option<f64> = row.try_get("unit_price")?;
    Ok(match (estimated, per_unit) {
        (Some(estimated), Some(per_unit)) => {
            mediagen_core::billing::price(units(estimated), per_unit)
        }
        _ => job.cost,
    })
}

/// Settles a job's hold to `due` credits exactly once: less than the hold
/// captures `due` and refunds the rest; more captures the hold and tops it
/// up from the balance. Returns false (and changes nothing) when the
/// balance cannot cover a top-up. The job's `cost` becomes what it cost.
async fn settle_measured(
    conn: &mut AnyConnection,
    job: &Job,
    due: i64,
) -> Result<bool, StoreError> {
    if due == job.cost {
        settle(conn, job, CreditState::Captured).await?;
        return Ok(true);
    }
    let state = if due > 0 {
        CreditState::Captured
    } else {
        CreditState::Refunded
    };
    // The hold moves once; only the call that moves it charges.
    let changed = sqlx::query(
        "UPDATE jobs SET credit_state = $2, cost = $3 WHERE id = $1 AND credit_state = 'held'",
    )
    .bind(job.id.as_str())
    .bind(state.as_str())
    .bind(due)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(true);
    }
    if due > job.cost {
        let top_up = Movement::top_up(&job.id, due - job.cost);
        if post(conn, &job.account_id, top_up).await?.is_none() {
            // Not covered: the hold is still held, for the caller to refund.
            sqlx::query("UPDATE jobs SET credit_state = 'held', cost = $2 WHERE id = $1")
                .bind(job.id.as_str())
                .bind(job.cost)
                .execute(&mut *conn)
                .await?;
            return Ok(false);
        }
    }
    let captured = due.min(job.cost);
    if captured > 0 {
        post(conn, &job.account_id, Movement::capture(&job.id, captured)).await?;
    }
    if job.cost > captured {
        let back = Movement::refund(&job.id, job.cost - captured);
        post(conn, &job.account_id, back).await?;
    }
    Ok(true)
}

/// The outputs of a result written before outputs were registered: each
/// `blob:<key>` string naming a file under the job's own prefix becomes an
/// output at its place (the string is cleared; the URL is put there when the
/// job is shown). Any other string stays text.
pub fn legacy_outputs(job_id: &str, result: &mut Value) -> Vec<JobOutput> {
    fn walk(v: &mut Value, pointer: String, prefix: &str, out: &mut Vec<JobOutput>) {
        match v {
            Value::String(s) => {
                if let Some(key) = s.strip_prefix("blob:").filter(|k| k.starts_with(prefix)) {
                    out.push(JobOutput {
                        field: pointer,
                        key: key.to_owned(),
                        content_type: crate::content_type_for(key).to_owned(),
                        size: 0,
                    });
                    *v = Value::Null;
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, format!("{pointer}/{i}"), prefix, out);
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    let token = k.replace('~', "~0").replace('/', "~1");
                    walk(item, format!("{pointer}/{token}"), prefix, out);
                }
            }
            _ => {}
        }
    }
    let prefix = format!("jobs/{job_id}/");
    let mut out = Vec::new();
    walk(result, String::new(), &prefix, &mut out);
    out
}

/// The end state a worker reports for a job.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The result, the files registered for it, and the units the work
    /// measured (charged instead of the estimate; `None`: the estimate).
    Completed(Value, Vec<JobOutput>, Option<f64>),
    /// Failed: nothing is charged.
    Failed(JobError),
    /// Stopped part way (a stream the client closed) after delivering
    /// `units`: those are charged, at most the hold, the rest refunded.
    Cut(JobError, f64),
}

impl Db {
    /// Creates a queued job and holds its cost, in one transaction. Refuses
    /// when credits or the concurrency cap do not allow it, and returns the
    /// existing job when the idempotency key was used before.
    pub async fn create_job(&self, new: NewJob) -> Result<Job, CreateJobError> {
        let id = JobId::random();
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        // First statement writes: it takes the account's lock (row lock on
        // PostgreSQL, the write lock on SQLite) so the checks below are not
        // raced by another request of the same account.
        let held = post(&mut tx, &new.account_id, Movement::reserve(&id, new.cost)).await?;
        if let Some(key) = &new.idempotency_key {
            // A key past its time no longer names the job it made.
            sqlx::query(
                "UPDATE jobs SET idempotency_key = NULL \
                 WHERE account_id = $1 AND idempotency_key = $2 AND created_at < $3",
            )
            .bind(new.account_id.as_str())
            .bind(key)
            .bind(self.idempotency_cutoff())
            .execute(&mut *tx)
            .await?;
            let row = sqlx::query(&format!(
                "SELECT {JOB_COLS} FROM jobs WHERE account_id = $1 AND idempotency_key = $2"
            ))
            .bind(new.account_id.as_str())
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = row {
                tx.rollback().await?;
                return Err(CreateJobError::Duplicate(Box::new(job_from_row(&row)?)));
            }
        }
        if held.is_none() {
            let available: i64 = sqlx::query("SELECT balance FROM accounts WHERE id = $1")
                .bind(new.account_id.as_str())
                .fetch_one(&mut *tx)
                .await?
                .try_get("balance")?;
            tx.rollback().await?;
            return Err(CreateJobError::InsufficientCredits {
                required: new.cost,
                available,
            });
        }
        let active: i64 = sqlx::query(
            "SELECT COUNT(*) AS n FROM jobs WHERE account_id = $1 AND status IN ('queued', 'processing')",
        )
        .bind(new.account_id.as_str())
        .fetch_one(&mut *tx)
        .await?
        .try_get("n")?;
        if active >= new.max_concurrent {
            tx.rollback().await?;
            return Err(CreateJobError::TooManyJobs {
                limit: new.max_concurrent,
            });
        }
        sqlx::query(
            "INSERT INTO jobs (id, account_id, kind, status, payload, progress, cost, credit_state, \
             attempts, max_attempts, timeout_ms, idempotency_key, created_at, updated_at, \
             units, unit_price, webhook_url) \
             VALUES ($1, $2, $3, 'queued', $4, 0, $5, 'held', 0, $6, $7, $8, $9, $9, $10, $11, $12)",
        )
        .bind(id.as_str())
        .bind(new.account_id.as_str())
        .bind(new.kind.name())
        .bind(new.payload.to_string())
        .bind(new.cost)
        .bind(new.max_attempts)
        .bind(new.timeout_ms)
        .bind(new.idempotency_key.as_deref())
        .bind(now)
        .bind(new.units)
        .bind(new.unit_price)
        .bind(new.webhook_url.as_deref())
        .execute(&mut *tx)
        .await?;
        self.announce_queued(&mut *tx, new.kind.name()).await?;
        tx.commit().await?;
        self.job_by_id(&id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("job vanished".into()).into())
    }

    /// Once per database, at start-up: registers the outputs of jobs
    /// completed before outputs were registered (see [`legacy_outputs`]),
    /// then records that it did (setting `legacy_outputs_registered`), so
    /// later starts do not scan the jobs again. Returns how many jobs
    /// changed.
    pub async fn register_legacy_outputs(&self) -> Result<u64, StoreError> {
        const DONE: &str = "legacy_outputs_registered";
        let done = sqlx::query("SELECT value FROM settings WHERE name = $1")
            .bind(DONE)
            .fetch_optional(&self.pool)
            .await?;
        if done.is_some() {
            return Ok(0);
        }
        let rows = sqlx::query(
            "SELECT id, result FROM jobs WHERE status = 'completed' AND outputs IS NULL \
             AND result IS NOT NULL",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut changed = 0;
        for row in rows {
            let id: String = row.try_get("id")?;
            let text: String = row.try_get("result")?;
            let Ok(mut result) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let outputs = legacy_outputs(&id, &mut result);
            sqlx::query("UPDATE jobs SET result = $2, outputs = $3 WHERE id = $1")
                .bind(&id)
                .bind(result.to_string())
                .bind(serde_json::to_string(&outputs).unwrap_or_default())
                .execute(&self.pool)
                .await?;
            changed += 1;
        }
        self.setting_or_init(DONE, || "1".to_owned()).await?;
        Ok(changed)
    }

    /// A job by id alone, whatever its account: for the signed download
    /// route, which is authorised by its signature, and for internal use.
    pub async fn job_by_id(&self, id: &JobId) -> Result<Option<Job>, StoreError> {
        let row = sqlx::query(&format!("SELECT {JOB_COLS} FROM jobs WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(job_from_row).transpose()
    }

    /// A job of one account (another account's job is `None`).
    pub async fn job(&self, account_id: &AccountId, id: &JobId) -> Result<Option<Job>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {JOB_COLS} FROM jobs WHERE id = $1 AND account_id = $2"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(job_from_row).transpose()
    }

    /// Jobs of one account, newest first, with the total count.
    pub async fn list_jobs(
        &self,
        account_id: &AccountId,
        filter: &JobFilter,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<Job>, u64), StoreError> {
        // Optional filters bind NULL and are switched off with `$n IS NULL`.
        let cond = "account_id = $1 AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR kind = $3)";
        let status = filter.status.map(|s| s.as_str());
        let rows = sqlx::query(&format!(
            "SELECT {JOB_COLS} FROM jobs WHERE {cond} ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
        ))
        .bind(account_id.as_str())
        .bind(status)
        .bind(filter.kind.map(JobKind::name))
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let total: i64 = sqlx::query(&format!("SELECT COUNT(*) AS n FROM jobs WHERE {cond}"))
            .bind(account_id.as_str())
            .bind(status)
            .bind(filter.kind.map(JobKind::name))
            .fetch_one(&self.pool)
            .await?
            .try_get("n")?;
        let jobs = rows.iter().map(job_from_row).collect::<Result<_, _>>()?;
        Ok((jobs, total as u64))
    }

    /// Cancels a queued or running job of the account and refunds its hold.
    /// Returns the job as it is afterwards (unchanged when already finished),
    /// or `None` when the account has no such job.
    pub async fn cancel_job(
        &self,
        account_id: &AccountId,
        id: &JobId,
    ) -> Result<Option<Job>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(&format!(
            "UPDATE jobs SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, \
             updated_at = $3, finished_at = $3 \
             WHERE id = $1 AND account_id = $2 AND status IN ('queued', 'processing') RETURNING {JOB_COLS}"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .bind(now_ms())
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = row {
            let job = job_from_row(&row)?;
            settle(&mut tx, &job, CreditState::Refunded).await?;
            self.enqueue_webhooks(&mut tx, id).await?;
            self.announce_finished(&mut *tx, id).await?;
        }
        tx.commit().await?;
        self.job(account_id, id).await
    }

    /// Claims the oldest runnable job for `worker` with a lease of
    /// `lease_ms`: a queued job, or a running one whose lease expired (its
    /// worker died) while attempts remain.
    pub async fn claim_job(
        &self,
        worker: &str,
        lease_ms: i64,
        kinds: &[JobKind],
    ) -> Result<Option<Job>, StoreError> {
        if kinds.is_empty() {
            return Ok(None);
        }
        let now = now_ms();
        // Only the kinds this worker runs: the others wait for theirs.
        let listed: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 4)).collect();
        let listed = listed.join(", ");
        // Fair shares: the account running the fewest jobs now goes first,
        // then the one whose last job started longest ago (accounts take
        // turns), then the oldest job: one account's queue cannot keep
        // another account's job waiting behind it for more than the first
        // free slot. SKIP LOCKED lets many PostgreSQL workers claim in parallel;
        // on SQLite the single UPDATE … RETURNING is atomic by itself.
        let lock = match self.backend {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE jobs SET status = 'processing', lease_owner = $1, lease_expires_at = $2, \
             attempts = attempts + 1, updated_at = $3, started_at = COALESCE(started_at, $3) \
             WHERE id = (SELECT q.id FROM jobs q WHERE \
                ((q.status = 'queued' AND (q.run_after IS NULL OR q.run_after <= $3)) \
                OR (q.status = 'processing' AND q.lease_expires_at < $3 AND q.attempts < q.max_attempts)) \
                AND q.kind IN ({listed}) \
                ORDER BY (SELECT COUNT(*) FROM jobs r WHERE r.account_id = q.account_id \
                    AND r.status = 'processing' AND r.lease_expires_at >= $3), \
                  (SELECT COALESCE(MAX(u.started_at), 0) FROM jobs u WHERE u.account_id = q.account_id), \
                  q.created_at, q.id LIMIT 1 {lock}) \
             RETURNING {JOB_COLS}"
        );
        let mut query = sqlx::query(&sql)
            .bind(worker)
            .bind(now + lease_ms)
            .bind(now);
        for kind in kinds {
            query = query.bind(kind.name());
        }
        let row = query.fetch_optional(&self.pool).await?;
        row.as_ref().map(job_from_row).transpose()
    }

    /// Extends the lease and records progress and, for a live session, the
    /// units it has delivered so far (`used`: charged if its worker dies).
    /// Returns false when the job is no longer this worker's (cancelled, or
    /// re-claimed after the lease expired): the worker must then stop
    /// working on it.
    pub async fn heartbeat(
        &self,
        id: &JobId,
        worker: &str,
        lease_ms: i64,
        progress: Option<i64>,
        used: Option<f64>,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let n = sqlx::query(
            "UPDATE jobs SET lease_expires_at = $3, updated_at = $4, progress = COALESCE($5, progress), \
             used_units = COALESCE($6, used_units) \
             WHERE id = $1 AND lease_owner = $2 AND status = 'processing'",
        )
        .bind(id.as_str())
        .bind(worker)
        .bind(now + lease_ms)
        .bind(now)
        .bind(progress)
        .bind(used)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(n == 1)
    }

    /// Raises a running job's hold to the price of `measured` units, as soon
    /// as the job knows them (its input decoded longer than its header
    /// said), before the work is done: the difference moves from the
    /// balance to `reserved` and the job's cost becomes the new hold.
    /// Returns false, changing nothing, when the balance cannot cover it;
    /// true when the hold covers the measurement (raised or already
    /// enough). Only the worker holding the lease can raise it.
    pub async fn raise_hold(
        &self,
        id: &JobId,
        worker: &str,
        measured: f64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        // A write first, so that the transaction holds the lock before it
        // reads (SQLite cannot upgrade a read to a write under contention).
        let row = sqlx::query(&format!(
            "UPDATE jobs SET updated_at = $3 WHERE id = $1 AND lease_owner = $2 \
             AND status = 'processing' AND credit_state = 'held' RETURNING {JOB_COLS}"
        ))
        .bind(id.as_str())
        .bind(worker)
        .bind(now_ms())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            // Not ours any more (cancelled, lease lost): nothing to raise;
            // the job's own loop stops it.
            tx.rollback().await?;
            return Ok(true);
        };
        let job = job_from_row(&row)?;
        let due = due_for(&mut tx, &job, |estimated| {
            mediagen_core::billing::measured_units(estimated, measured)
        })
        .await?;
        if due <= job.cost {
            tx.rollback().await?;
            return Ok(true);
        }
        let more = due - job.cost;
        if post(&mut tx, &job.account_id, Movement::reserve(&job.id, more))
            .await?
            .is_none()
        {
            tx.rollback().await?;
            return Ok(false);
        }
        let n = sqlx::query(
            "UPDATE jobs SET cost = $3 WHERE id = $1 AND lease_owner = $2 \
             AND status = 'processing' AND credit_state = 'held' AND cost = $4",
        )
        .bind(id.as_str())
        .bind(worker)
        .bind(due)
        .bind(job.cost)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n != 1 {
            tx.rollback().await?;
            return Ok(true);
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Records the outcome of a claimed job and settles its credits (capture
    /// on success, refund on failure) in one transaction. Only the worker
    /// holding the lease can finish a job, so a job is finished once.
    pub async fn finish_job(
        &self,
        id: &JobId,
        worker: &str,
        outcome: Outcome,
    ) -> Result<bool, StoreError> {
        let failed = |e: &JobError| {
            (
                "failed",
                None,
                None,
                Some(serde_json::to_string(e).unwrap_or_default()),
            )
        };
        let (status, result, outputs, error) = match &outcome {
            Outcome::Completed(v, outputs, _) => (
                "completed",
                Some(v.to_string()),
                Some(serde_json::to_string(outputs).unwrap_or_default()),
                None,
            ),
            Outcome::Failed(e) | Outcome::Cut(e, _) => failed(e),
        };
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(&format!(
            "UPDATE jobs SET status = $3, result = $4, error = $5, outputs = $7, \
             progress = CASE WHEN $3 = 'completed' THEN 100 ELSE progress END, \
             lease_owner = NULL, lease_expires_at = NULL, updated_at = $6, finished_at = $6 \
             WHERE id = $1 AND lease_owner = $2 AND status = 'processing' RETURNING {JOB_COLS}"
        ))
        .bind(id.as_str())
        .bind(worker)
        .bind(status)
        .bind(result)
        .bind(error)
        .bind(now)
        .bind(outputs)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(false);
        };
        let job = job_from_row(&row)?;
        match outcome {
            Outcome::Failed(_) => settle(&mut tx, &job, CreditState::Refunded).await?,
            Outcome::Completed(_, _, None) => settle(&mut tx, &job, CreditState::Captured).await?,
            Outcome::Completed(_, _, Some(measured)) => {
                let due = due_for(&mut tx, &job, |estimated| {
                    mediagen_core::billing::measured_units(estimated, measured)
                })
                .await?;
                if !settle_measured(&mut tx, &job, due).await? {
                    // More than the hold, and more than the balance covers:
                    // the job fails cleanly, nothing charged.
                    let error = JobError::new(
                        ErrorCode::InsufficientCredits,
                        format!(
                            "The input measured longer than its header said: {due} credits were \
                             needed, {} were held, and the balance does not cover the rest. \
                             Nothing was charged.",
                            job.cost
                        ),
                    );
                    sqlx::query(
                        "UPDATE jobs SET status = 'failed', result = NULL, outputs = NULL, \
                         error = $2, progress = 0 WHERE id = $1",
                    )
                    .bind(job.id.as_str())
                    .bind(serde_json::to_string(&error).unwrap_or_default())
                    .execute(&mut *tx)
                    .await?;
                    settle(&mut tx, &job, CreditState::Refunded).await?;
                }
            }
            Outcome::Cut(_, delivered) => {
                let due = due_for(&mut tx, &job, |_| delivered).await?.min(job.cost);
                settle_measured(&mut tx, &job, due).await?;
            }
        }
        self.enqueue_webhooks(&mut tx, id).await?;
        self.announce_finished(&mut *tx, id).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Gives a claimed job back to the queue after a retryable failure, when
    /// attempts remain; it is claimed again no sooner than `after`. Returns
    /// false when it was not re-queued.
    pub async fn retry_job(
        &self,
        id: &JobId,
        worker: &str,
        error: &JobError,
        after: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let row = sqlx::query(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, \
             error = $3, updated_at = $4, run_after = $5 \
             WHERE id = $1 AND lease_owner = $2 AND status = 'processing' AND attempts < max_attempts \
             RETURNING kind",
        )
        .bind(id.as_str())
        .bind(worker)
        .bind(serde_json::to_string(error).unwrap_or_default())
        .bind(now)
        .bind(now + after.as_millis() as i64)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(false) };
        let kind: String = row.try_get("kind")?;
        self.announce_queued(&self.pool, &kind).await?;
        Ok(true)
    }

    /// Fails jobs whose lease expired after their last attempt (their worker
    /// died every time) and refunds them; a live session is charged what its
    /// last heartbeat said it had delivered, at most its hold. Returns how
    /// many were failed.
    pub async fn reap_expired_jobs(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let rows = sqlx::query(
            "SELECT id, lease_owner, used_units FROM jobs WHERE status = 'processing' \
             AND lease_expires_at < $1 AND attempts >= max_attempts",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        let error = JobError::new(
            ErrorCode::WorkerLost,
            "The worker running this job stopped responding on every attempt.",
        );
        let mut failed = 0;
        for row in rows {
            let id = JobId::from_stored(row.try_get("id")?);
            let owner: Option<String> = row.try_get("lease_owner")?;
            let owner = owner.unwrap_or_default();
            let used: Option<f64> = row.try_get("used_units")?;
            let outcome = match used {
                Some(units) if units > 0.0 => Outcome::Cut(error.clone(), units),
                _ => Outcome::Failed(error.clone()),
            };
            if self.finish_job(&id, &owner, outcome).await? {
                failed += 1;
            }
        }
        Ok(failed)
    }

    /// Number of jobs per kind and status.
    pub async fn queue_depth(&self) -> Result<Vec<QueueDepth>, StoreError> {
        let rows =
            sqlx::query("SELECT kind, status, COUNT(*) AS n FROM jobs GROUP BY kind, status")
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| {
                Ok(QueueDepth {
                    kind: r.try_get("kind")?,
                    status: r.try_get("status")?,
                    count: r.try_get("n")?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Account;
    use serde_json::json;

    /// Results written before outputs were registered: the job's own files
    /// become outputs; text, other jobs' keys and uploads stay text.
    #[test]
    fn legacy_results_register_only_the_jobs_own_files() {
        let mut result = json!({
            "audioUrl": "blob:jobs/job_a/speech.mp3",
            "images": [{"imageUrl": "blob:jobs/job_a/image-0.png"}],
            "words": [{"word": "blob:jobs/job_b/speech.mp3"}],
            "odd/name": "blob:jobs/job_a/x.srt",
            "upload": "blob:files/acct/file_1",
        });
        let outputs = legacy_outputs("job_a", &mut result);
        let fields: Vec<&str> = outputs.iter().map(|o| o.field.as_str()).collect();
        assert_eq!(fields, ["/audioUrl", "/images/0/imageUrl", "/odd~1name"]);
        assert_eq!(outputs[0].content_type, "audio/mpeg");
        assert_eq!(result["audioUrl"], Value::Null);
        assert_eq!(result["words"][0]["word"], "blob:jobs/job_b/speech.mp3");
        assert_eq!(result["upload"], "blob:files/acct/file_1");
    }

    /// A measurement over the estimate raises the hold at once (the
    /// balance pays it into `reserved`), never past the balance; the
    /// settlement then captures the raised hold, with no top-up.
    #[tokio::test]
    async fn a_measured_job_raises_its_hold_before_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let db = Db::connect(&url).await.unwrap();
        let account = db.create_account("a", false, 100).await.unwrap();
        let job = NewJob {
            cost: 13,
            units: 13.0,
            ..NewJob::test(&account.id, JobKind::Stt)
        };
        let job = db.create_job(job).await.unwrap();
        assert!(db
            .claim_job("w1", 30_000, &[JobKind::Tts])
            .await
            .unwrap()
            .is_none());
        let claimed = db
            .claim_job("w1", 30_000, &[JobKind::Tts, JobKind::Stt])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(claimed.id, job.id);
        let credits = |a: Account| (a.balance, a.reserved, a.used);
        // Another worker cannot raise it; more than the balance is refused.
        assert!(db.raise_hold(&job.id, "w2", 60.0).await.unwrap());
        assert!(!db.raise_hold(&job.id, "w1", 200.0).await.unwrap());
        let now = db.account(&account.id).await.unwrap().unwrap();
        assert_eq!(credits(now), (87, 13, 0));
        // Within the tolerance: the estimate stands.
        assert!(db.raise_hold(&job.id, "w1", 13.4).await.unwrap());
        let now = db.account(&account.id).await.unwrap().unwrap();
        assert_eq!(credits(now), (87, 13, 0));
        // 60.05 s decoded: 60 credits held, once however often it is said.
        for _ in 0..2 {
            assert!(db.raise_hold(&job.id, "w1", 60.05).await.unwrap());
        }
        let now = db.account(&account.id).await.unwrap().unwrap();
        assert_eq!(credits(now), (40, 60, 0));
        let outcome = Outcome::Completed(json!({}), vec![], Some(60.05));
        assert!(db.finish_job(&job.id, "w1", outcome).await.unwrap());
        let now = db.account(&account.id).await.unwrap().unwrap();
        assert_eq!(credits(now), (40, 0, 60));
    }
}
