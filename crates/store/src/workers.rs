//! The registry of live workers: each worker process records the job kinds
//! it claims and refreshes its row as it runs; a row not refreshed within a
//! lease belongs to a worker presumed dead.

use std::collections::BTreeSet;

use mediagen_core::time::now_ms;
use mediagen_core::JobKind;
use sqlx::Row;

use crate::db::{Db, StoreError};

impl Db {
    /// Records that worker `id`, claiming `kinds`, is alive now.
    pub async fn worker_seen(&self, id: &str, kinds: &[JobKind]) -> Result<(), StoreError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO workers (id, kinds, started_at, seen_at) VALUES ($1, $2, $3, $3) \
             ON CONFLICT (id) DO UPDATE SET kinds = $2, seen_at = $3",
        )
        .bind(id)
        .bind(kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(","))
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
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
