//! Per-key request rate limits: a fixed per-minute and a fixed per-hour
//! window, both aligned to the clock so `X-RateLimit-Reset` is exact.
//!
//! The counters live where the API processes can share them: in the
//! database when it is PostgreSQL (one upsert per request, exact across
//! every API process), in this process on SQLite (one process serves).
//! Setting `rate_limit_store` chooses otherwise (docs/configuration.md).

use std::collections::HashMap;
use std::sync::Mutex;

use mediagen_store::{Db, StoreError};

/// The state reported in `X-RateLimit-*` headers: the window closest to
/// exhaustion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds at which the reported window resets.
    pub reset: i64,
}

#[derive(Default)]
struct Windows {
    minute: (i64, u32),
    hour: (i64, u32),
}

/// Where the counters are kept.
enum Counters {
    Memory(Mutex<HashMap<String, Windows>>),
    Database(Db),
}

pub struct RateLimiter {
    per_minute: u32,
    per_hour: u32,
    counters: Counters,
}

impl RateLimiter {
    /// Counters in this process.
    pub fn new(per_minute: u32, per_hour: u32) -> Self {
        Self {
            per_minute,
            per_hour,
            counters: Counters::Memory(Mutex::default()),
        }
    }

    /// Counters in the database, shared by every process using it.
    pub fn shared(per_minute: u32, per_hour: u32, db: Db) -> Self {
        Self {
            per_minute,
            per_hour,
            counters: Counters::Database(db),
        }
    }

    /// Counts one request of `key` at `now` (Unix seconds), when both
    /// windows allow it.
    pub async fn check(&self, key: &str, now: i64) -> Result<RateStatus, StoreError> {
        let (minute_start, hour_start) = (now - now.rem_euclid(60), now - now.rem_euclid(3600));
        let (allowed, minute, hour) = match &self.counters {
            Counters::Memory(keys) => self.count_here(keys, key, now, minute_start, hour_start),
            Counters::Database(db) => {
                let c = db
                    .count_request(
                        key,
                        (minute_start, self.per_minute),
                        (hour_start, self.per_hour),
                    )
                    .await?;
                (c.allowed, c.minute, c.hour)
            }
        };
        Ok(self.status(allowed, (minute_start, minute), (hour_start, hour)))
    }

    fn count_here(
        &self,
        keys: &Mutex<HashMap<String, Windows>>,
        key: &str,
        now: i64,
        minute_start: i64,
        hour_start: i64,
    ) -> (bool, u32, u32) {
        let mut keys = keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() > 100_000 {
            // Forget keys idle for an hour so the map stays bounded.
            keys.retain(|_, w| w.hour.0 + 3600 > now);
        }
        let w = keys.entry(key.to_owned()).or_default();
        if w.minute.0 != minute_start {
            w.minute = (minute_start, 0);
        }
        if w.hour.0 != hour_start {
            w.hour = (hour_start, 0);
        }
        let allowed = w.minute.1 < self.per_minute && w.hour.1 < self.per_hour;
        if allowed {
            w.minute.1 += 1;
            w.hour.1 += 1;
        }
        (allowed, w.minute.1, w.hour.1)
    }

    /// The headers' view of the windows after counting: `minute` and
    /// `hour` are (window start, requests counted in it).
    fn status(&self, allowed: bool, minute: (i64, u32), hour: (i64, u32)) -> RateStatus {
        let blocked_by_hour = hour.1 >= self.per_hour && minute.1 < self.per_minute;
        let minute_left = self.per_minute.saturating_sub(minute.1);
        let hour_left = self.per_hour.saturating_sub(hour.1);
        let (limit, remaining, reset) = if blocked_by_hour || hour_left < minute_left {
            (self.per_hour, hour_left, hour.0 + 3600)
        } else {
            (self.per_minute, minute_left, minute.0 + 60)
        };
        RateStatus {
            allowed,
            limit,
            remaining,
            reset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn minute_window_blocks_then_resets() {
        let rl = RateLimiter::new(2, 100);
        let t: i64 = 1_800_000_000; // a multiple of 3600
        assert!(rl.check("k", t).await.unwrap().allowed);
        let s = rl.check("k", t + 1).await.unwrap();
        assert!(s.allowed && s.remaining == 0 && s.reset == t + 60 && s.limit == 2);
        assert!(!rl.check("k", t + 59).await.unwrap().allowed);
        assert!(
            rl.check("other", t + 59).await.unwrap().allowed,
            "keys are independent"
        );
        assert!(rl.check("k", t + 60).await.unwrap().allowed, "new minute");
    }

    #[tokio::test]
    async fn hour_window_reports_itself_when_binding() {
        let rl = RateLimiter::new(10, 3);
        let t: i64 = 1_800_000_000;
        for i in 0..3 {
            assert!(rl.check("k", t + i * 61).await.unwrap().allowed);
        }
        let s = rl.check("k", t + 300).await.unwrap();
        assert!(!s.allowed);
        assert_eq!((s.limit, s.remaining, s.reset), (3, 0, t + 3600));
    }
}
