//! Request counters shared by every API process (see the server's rate
//! limiter): one row per key, its minute and hour windows counted by one
//! atomic upsert per request.

use sqlx::Row;

use crate::db::{Db, StoreError};

/// The windows after one request was counted (or refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateCounts {
    /// Whether both windows had room, so the request was counted.
    pub allowed: bool,
    /// Requests counted in the current minute window.
    pub minute: u32,
    /// Requests counted in the current hour window.
    pub hour: u32,
}

impl Db {
    /// Counts a request of `key` when its minute window (start, limit)
    /// and its hour window both have room. A window whose start has
    /// passed counts from zero again.
    pub async fn count_request(
        &self,
        key: &str,
        minute: (i64, u32),
        hour: (i64, u32),
    ) -> Result<RateCounts, StoreError> {
        const MINUTE: &str =
            "(CASE WHEN rate_limits.minute_start = $2 THEN rate_limits.minute_count ELSE 0 END)";
        const HOUR: &str =
            "(CASE WHEN rate_limits.hour_start = $3 THEN rate_limits.hour_count ELSE 0 END)";
        let counted = sqlx::query(&format!(
            "INSERT INTO rate_limits (key_id, minute_start, minute_count, hour_start, hour_count) \
             SELECT $1, $2, 1, $3, 1 WHERE $4 > 0 AND $5 > 0 \
             ON CONFLICT (key_id) DO UPDATE SET \
             minute_count = {MINUTE} + 1, hour_count = {HOUR} + 1, \
             minute_start = $2, hour_start = $3 \
             WHERE {MINUTE} < $4 AND {HOUR} < $5 \
             RETURNING minute_count, hour_count"
        ))
        .bind(key)
        .bind(minute.0)
        .bind(hour.0)
        .bind(i64::from(minute.1))
        .bind(i64::from(hour.1))
        .fetch_optional(&self.pool)
        .await?;
        let (allowed, row) = match counted {
            Some(row) => (true, row),
            None => {
                let row = sqlx::query(&format!(
                    "SELECT {MINUTE} AS minute_count, {HOUR} AS hour_count \
                     FROM rate_limits WHERE key_id = $1"
                ))
                .bind(key)
                .bind(minute.0)
                .bind(hour.0)
                .fetch_optional(&self.pool)
                .await?;
                let Some(row) = row else {
                    // Limits of zero: nothing is ever counted.
                    return Ok(RateCounts {
                        allowed: false,
                        minute: 0,
                        hour: 0,
                    });
                };
                (false, row)
            }
        };
        let count = |name: &str| -> Result<u32, StoreError> {
            let n: i64 = row.try_get(name)?;
            Ok(u32::try_from(n).unwrap_or(u32::MAX))
        };
        Ok(RateCounts {
            allowed,
            minute: count("minute_count")?,
            hour: count("hour_count")?,
        })
    }

    /// Forgets the counters of keys idle for longer than an hour.
    pub async fn prune_rate_limits(&self, now_s: i64) -> Result<u64, StoreError> {
        Ok(sqlx::query("DELETE FROM rate_limits WHERE hour_start < $1")
            .bind(now_s - 3600)
            .execute(&self.pool)
            .await?
            .rows_affected())
    }
}
