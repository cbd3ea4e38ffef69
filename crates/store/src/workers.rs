//! The registry of live workers: each worker process records the job kinds
//! it claims and refreshes its row as it runs; a row not refreshed within a
//! lease belongs to a worker presumed dead.

use std::collections::BTreeSet;

use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, JobId, JobKind};
use sqlx::Row;

use crate::db::{Db, StoreError};

impl Db {
    /// Records that worker `id`, claiming `kinds`, is alive now;
    /// `sessions_at` is where it takes the relays of its live sessions.
    pub async fn worker_seen(
        &self,
        id: &str,
        kinds: &[JobKind],
        sessions_at: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO workers (id, kinds, started_at, seen_at, sessions_at) \
             VALUES ($1, $2, $3, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET kinds = $2, seen_at = $3, sessions_at = $4",
        )
        .bind(id)
        .bind(kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(","))
        .bind(now)
        .bind(sessions_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Where the worker holding job `id`'s lease takes its session's relay,
    /// once a worker has claimed it.
    pub async fn session_address(&self, id: &JobId) -> Result<Option<String>, StoreError> {
        let row = sqlx::query(
            "SELECT w.sessions_at FROM jobs j JOIN workers w ON w.id = j.lease_owner \
             WHERE j.id = $1 AND j.status = 'processing'",
        )
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(|r| r.try_get::<Option<String>, _>("sessions_at").ok().flatten()))
    }

    /// The account's live sessions: its session jobs queued or running.
    pub async fn open_sessions(&self, account: &AccountId) -> Result<i64, StoreError> {
        let kinds: Vec<&str> = JobKind::ALL
            .into_iter()
            .filter(|k| k.is_session())
            .map(JobKind::name)
            .collect();
        let listed: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT COUNT(*) AS n FROM jobs WHERE account_id = $1 \
             AND status IN ('queued', 'processing') AND kind IN ({})",
            listed.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(account.as_str());
        for kind in kinds {
            query = query.bind(kind);
        }
        let row = query.fetch_one(&self.pool).await?;
        Ok(row.try_get("n")?)
    }

    /// Removes worker `id` (it stopped), and the rows of workers not seen
    /// for a day.
    pub async fn worker_gone(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM workers WHERE id = $1 OR seen_at < $2")
            .bind(id)
            .bind(now_ms() - 24 * 3600 * 1000)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The job kinds claimed by some worker seen within `within_ms` (a
    /// name this build does not know, from a newer worker, is left out).
    pub async fn live_kinds(&self, within_ms: i64) -> Result<BTreeSet<JobKind>, StoreError> {
        let rows = sqlx::query("SELECT kinds FROM workers WHERE seen_at >= $1")
            .bind(now_ms() - within_ms)
            .fetch_all(&self.pool)
            .await?;
        let mut kinds = BTreeSet::new();
        for row in rows {
            let listed: String = row.try_get("kinds")?;
            kinds.extend(listed.split(',').filter_map(JobKind::parse));
        }
        Ok(kinds)
    }
}
