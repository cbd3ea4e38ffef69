//! What the retention sweep removes from the database: finished jobs (with
//! their outputs, whose keys all lie under `jobs/<id>/`) and uploaded files
//! older than their retention. The caller removes the stored bytes first,
//! then the rows, so a sweep cut short is finished by the next one.

use mediagen_core::{FileId, JobId};
use sqlx::Row;

use crate::db::{Db, StoreError};

/// Statuses after which a job never changes again.
const FINISHED: &str = "('completed', 'failed', 'cancelled')";

impl Db {
    /// Up to `limit` jobs finished (last changed) before `before_ms`.
    pub async fn expired_jobs(&self, before_ms: i64, limit: i64) -> Result<Vec<JobId>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT id FROM jobs WHERE status IN {FINISHED} AND updated_at < $1 \
             ORDER BY updated_at LIMIT $2"
        ))
        .bind(before_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok(JobId::from_stored(r.try_get("id")?)))
            .collect()
    }

    /// Deletes a finished job's row (its stored files already removed)
    /// and its webhook deliveries, whose log goes with it.
    pub async fn delete_finished_job(&self, id: &JobId) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let n = sqlx::query(&format!(
            "DELETE FROM jobs WHERE id = $1 AND status IN {FINISHED}"
        ))
        .bind(id.as_str())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 1 {
            sqlx::query("DELETE FROM webhook_deliveries WHERE job_id = $1")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(n == 1)
    }

    /// Up to `limit` uploaded files created before `before_ms` that no
    /// queued or running job reads: (id, blob key).
    pub async fn expired_files(
        &self,
        before_ms: i64,
        limit: i64,
    ) -> Result<Vec<(FileId, String)>, StoreError> {
        // A job names its inputs by blob key in its payload; keys are
        // `files/<account>/<file id>` with random ids, so a match is exact.
        let rows = sqlx::query(
            "SELECT f.id, f.blob_key FROM files f WHERE f.created_at < $1 \
             AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.account_id = f.account_id \
             AND j.status IN ('queued', 'processing') \
             AND j.payload LIKE '%' || f.blob_key || '%') \
             ORDER BY f.created_at LIMIT $2",
        )
        .bind(before_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    FileId::from_stored(r.try_get("id")?),
                    r.try_get("blob_key")?,
                ))
            })
            .collect()
    }

    /// Deletes an uploaded file's row (its bytes already removed).
    pub async fn delete_expired_file(&self, id: &FileId) -> Result<bool, StoreError> {
        let n = sqlx::query("DELETE FROM files WHERE id = $1")
            .bind(id.as_str())
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(n == 1)
    }
}
