use mediagen_core::time::now_ms;
use mediagen_core::AccountId;
use sqlx::Row;

use crate::db::{Db, StoreError};

/// What an `Idempotency-Key` lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum IdempotencyState {
    /// First use: the key is now locked for this request.
    Started,
    /// Used before with the same request: replay this response.
    Replay { status: u16, body: String },
    /// Used before with a different request.
    Mismatch,
    /// The first request with this key is still running.
    InProgress,
}

/// How long a started request keeps its key locked before a retry may take
/// it over (a process that died mid-request never unlocks it).
const LOCK_MS: i64 = 5 * 60 * 1000;

impl Db {
    /// Starts a request under an idempotency key, or reports what an earlier
    /// request with the same key left behind.
    pub async fn idempotency_begin(
        &self,
        account_id: &AccountId,
        key: &str,
        request_hash: &str,
    ) -> Result<IdempotencyState, StoreError> {
        // A record past its time is forgotten (the others are swept by
        // `prune_idempotency_keys`).
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_at < $3",
        )
        .bind(account_id.as_str())
        .bind(key)
        .bind(self.idempotency_cutoff())
        .execute(&self.pool)
        .await?;
        let now = now_ms();
        let inserted = sqlx::query(
            "INSERT INTO idempotency_keys (account_id, key, request_hash, locked_until, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id, key) DO NOTHING",
        )
        .bind(account_id.as_str())
        .bind(key)
        .bind(request_hash)
        .bind(now + LOCK_MS)
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 1 {
            return Ok(IdempotencyState::Started);
        }
        let row = sqlx::query(
            "SELECT request_hash, response_status, response_body, locked_until FROM idempotency_keys \
             WHERE account_id = $1 AND key = $2",
        )
        .bind(account_id.as_str())
        .bind(key)
        .fetch_one(&self.pool)
        .await?;
        let stored_hash: String = row.try_get("request_hash")?;
        if stored_hash != request_hash {
            return Ok(IdempotencyState::Mismatch);
        }
        let status: Option<i64> = row.try_get("response_status")?;
        if let Some(status) = status {
            let body: Option<String> = row.try_get("response_body")?;
            return Ok(IdempotencyState::Replay {
                status: status as u16,
                body: body.unwrap_or_default(),
            });
        }
        // A stale lock belongs to a request whose process died: take it over.
        let taken = sqlx::query(
            "UPDATE idempotency_keys SET locked_until = $3 \
             WHERE account_id = $1 AND key = $2 AND response_status IS NULL AND locked_until < $4",
        )
        .bind(account_id.as_str())
        .bind(key)
        .bind(now + LOCK_MS)
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(if taken == 1 {
            IdempotencyState::Started
        } else {
            IdempotencyState::InProgress
        })
    }

    /// Stores the response of a started request for later replays.
    pub async fn idempotency_finish(
        &self,
        account_id: &AccountId,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE idempotency_keys SET response_status = $3, response_body = $4 \
             WHERE account_id = $1 AND key = $2",
        )
        .bind(account_id.as_str())
        .bind(key)
        .bind(i64::from(status))
        .bind(body)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Deletes every record past its time (found by age, indexed); the
    /// workers' maintenance tick calls it. Returns how many went.
    pub async fn prune_idempotency_keys(&self) -> Result<u64, StoreError> {
        Ok(
            sqlx::query("DELETE FROM idempotency_keys WHERE created_at < $1")
                .bind(self.idempotency_cutoff())
                .execute(&self.pool)
                .await?
                .rows_affected(),
        )
    }

    /// Forgets a started request (it failed in a way a retry may fix).
    pub async fn idempotency_abandon(
        &self,
        account_id: &AccountId,
        key: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND response_status IS NULL",
        )
        .bind(account_id.as_str())
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep deletes the records past their time and keeps the rest.
    #[tokio::test]
    async fn expired_records_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let db = Db::connect(&url)
            .await
            .unwrap()
            .with_idempotency_ttl(std::time::Duration::from_secs(1));
        let begun = db
            .idempotency_begin(&AccountId::from_stored("acct_a".into()), "old", "h1")
            .await
            .unwrap();
        assert_eq!(begun, IdempotencyState::Started);
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        db.idempotency_begin(&AccountId::from_stored("acct_a".into()), "new", "h2")
            .await
            .unwrap();
        assert_eq!(db.prune_idempotency_keys().await.unwrap(), 1);
        assert_eq!(db.prune_idempotency_keys().await.unwrap(), 0);
        // The fresh one is still remembered.
        let again = db
            .idempotency_begin(&AccountId::from_stored("acct_a".into()), "new", "h2")
            .await
            .unwrap();
        assert_eq!(again, IdempotencyState::InProgress);
    }
}
