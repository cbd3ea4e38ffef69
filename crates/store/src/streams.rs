//! The chunks of a streamed job: its worker appends the encoded audio as
//! it makes it, and the API process that answers the client reads it back
//! in order and relays it. Each append is announced (`NOTIFY
//! mediagen_chunk` on PostgreSQL, payload the job id) so a relay waits on
//! the database only as a fallback. A client that closes the stream early
//! is recorded on the job (`stream_delivered`: the bytes it took); the
//! worker reads that back with its next append and stops.

use mediagen_core::time::now_ms;
use mediagen_core::JobId;
use sqlx::Row;

use crate::db::{Db, StoreError};

/// Chunks older than this are swept whatever became of their job.
pub const CHUNK_MAX_AGE_MS: i64 = 3600 * 1000;

/// Encoded bytes of one attempt of a streamed job, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub attempt: i64,
    pub seq: i64,
    pub data: Vec<u8>,
}

impl Db {
    /// Appends chunk `seq` of `attempt` of job `id`. Returns the bytes the
    /// client took when it has closed the stream (the worker then stops),
    /// `None` while it listens.
    pub async fn append_chunk(
        &self,
        id: &JobId,
        attempt: i64,
        seq: i64,
        data: &[u8],
    ) -> Result<Option<i64>, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO stream_chunks (job_id, attempt, seq, data, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(id.as_str())
        .bind(attempt)
        .bind(seq)
        .bind(data)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        self.announce_chunk(&mut *tx, id).await?;
        let delivered: Option<i64> = sqlx::query("SELECT stream_delivered FROM jobs WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .map(|row| row.try_get("stream_delivered"))
            .transpose()?
            .flatten();
        tx.commit().await?;
        Ok(delivered)
    }

    /// The chunks of job `id` not relayed yet: those of the attempt
    /// followed (`attempt`) after `seq`, or of its first attempt that
    /// streamed when none is followed yet; and whether a later attempt has
    /// begun streaming. Only unrelayed chunks are read.
    pub async fn chunks_after(
        &self,
        id: &JobId,
        attempt: Option<i64>,
        seq: Option<i64>,
    ) -> Result<(Vec<Chunk>, bool), StoreError> {
        let (attempt_from, seq_after) = (attempt.unwrap_or(0), seq.unwrap_or(-1));
        let rows = sqlx::query(
            "SELECT attempt, seq, data FROM stream_chunks WHERE job_id = $1 \
             AND (attempt > $2 OR (attempt = $2 AND seq > $3)) ORDER BY attempt, seq",
        )
        .bind(id.as_str())
        .bind(attempt_from)
        .bind(seq_after)
        .fetch_all(&self.pool)
        .await?;
        let mut chunks = Vec::new();
        let mut followed = attempt;
        for row in rows {
            let chunk = Chunk {
                attempt: row.try_get("attempt")?,
                seq: row.try_get("seq")?,
                data: row.try_get("data")?,
            };
            if chunk.attempt != *followed.get_or_insert(chunk.attempt) {
                return Ok((chunks, true));
            }
            chunks.push(chunk);
        }
        Ok((chunks, false))
    }

    /// Records that the client of streamed job `id` closed the stream after
    /// taking `delivered` bytes (the first close counts).
    pub async fn close_stream(&self, id: &JobId, delivered: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE jobs SET stream_delivered = $2 WHERE id = $1 AND stream_delivered IS NULL",
        )
        .bind(id.as_str())
        .bind(delivered)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Removes the chunks of job `id` (relayed in full).
    pub async fn drop_chunks(&self, id: &JobId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM stream_chunks WHERE job_id = $1")
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Removes chunks older than [`CHUNK_MAX_AGE_MS`] (their relay died or
    /// nobody listened). Returns how many.
    pub async fn sweep_chunks(&self) -> Result<u64, StoreError> {
        let n = sqlx::query("DELETE FROM stream_chunks WHERE created_at < $1")
            .bind(now_ms() - CHUNK_MAX_AGE_MS)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewJob;

    /// A relay follows the first attempt that streamed, piece by piece; a
    /// later attempt ends it; a close is read back by the worker's next
    /// append (the first close counts).
    #[tokio::test]
    async fn a_relay_follows_one_attempt_and_a_close_reaches_the_worker() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let db = Db::connect(&url).await.unwrap();
        let account = db.create_account("a", false, 100).await.unwrap();
        let job = db
            .create_job(NewJob::test(&account.id, mediagen_core::JobKind::Tts))
            .await
            .unwrap();
        let id = &job.id;
        assert_eq!(
            db.chunks_after(id, None, None).await.unwrap(),
            (vec![], false)
        );
        assert_eq!(db.append_chunk(id, 1, 0, b"ab").await.unwrap(), None);
        assert_eq!(db.append_chunk(id, 1, 1, b"cd").await.unwrap(), None);
        let (first, superseded) = db.chunks_after(id, None, None).await.unwrap();
        let bytes: Vec<u8> = first.iter().flat_map(|c| c.data.clone()).collect();
        assert_eq!((bytes.as_slice(), superseded), (&b"abcd"[..], false));
        let (rest, _) = db.chunks_after(id, Some(1), Some(1)).await.unwrap();
        assert!(rest.is_empty());
        // The worker died; attempt 2 streams anew: the relay of attempt 1
        // hears that it is over, one that had not begun follows attempt 1.
        db.append_chunk(id, 2, 0, b"ab").await.unwrap();
        assert_eq!(
            db.chunks_after(id, Some(1), Some(1)).await.unwrap(),
            (vec![], true)
        );
        assert_eq!(db.chunks_after(id, None, None).await.unwrap().0.len(), 2);
        db.close_stream(id, 3).await.unwrap();
        db.close_stream(id, 9).await.unwrap();
        assert_eq!(db.append_chunk(id, 2, 1, b"cd").await.unwrap(), Some(3));
        db.drop_chunks(id).await.unwrap();
        assert_eq!(
            db.chunks_after(id, None, None).await.unwrap(),
            (vec![], false)
        );
        assert_eq!(db.sweep_chunks().await.unwrap(), 0);
    }
}
