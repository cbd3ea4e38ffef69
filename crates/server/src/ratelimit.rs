//! Per-key request rate limits: a fixed per-minute and a fixed per-hour
//! window, both aligned to the clock so `X-RateLimit-Reset` is exact. The
//! counters live in this process; with several API processes each enforces
//! the limits on the traffic it sees (documented in docs/limits.md).

use std::collections::HashMap;
use std::sync::Mutex;

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

pub struct RateLimiter {
    per_minute: u32,
    per_hour: u32,
    keys: Mutex<HashMap<String, Windows>>,
}

impl RateLimiter {
    pub fn new(per_minute: u32, per_hour: u32) -> Self {
        Self {
            per_minute,
            per_hour,
            keys: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one request of `key` at `now` (Unix seconds).
    pub fn check(&self, key: &str, now: i64) -> RateStatus {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() > 100_000 {
            // Forget keys idle for an hour so the map stays bounded.
            keys.retain(|_, w| w.hour.0 + 3600 > now);
        }
        let w = keys.entry(key.to_owned()).or_default();
        let (minute_start, hour_start) = (now - now.rem_euclid(60), now - now.rem_euclid(3600));
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
        let minute = (
            self.per_minute,
            self.per_minute.saturating_sub(w.minute.1),
            minute_start + 60,
        );
        let hour = (
            self.per_hour,
            self.per_hour.saturating_sub(w.hour.1),
            hour_start + 3600,
        );
        let blocked_by_hour = w.hour.1 >= self.per_hour && w.minute.1 < self.per_minute;
        let (limit, remaining, reset) = if blocked_by_hour || hour.1 < minute.1 {
            hour
        } else {
            minute
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

    #[test]
    fn minute_window_blocks_then_resets() {
        let rl = RateLimiter::new(2, 100);
        let t: i64 = 1_800_000_000; // a multiple of 3600
        assert!(rl.check("k", t).allowed);
        let s = rl.check("k", t + 1);
        assert!(s.allowed && s.remaining == 0 && s.reset == t + 60 && s.limit == 2);
        assert!(!rl.check("k", t + 59).allowed);
        assert!(rl.check("other", t + 59).allowed, "keys are independent");
        assert!(rl.check("k", t + 60).allowed, "new minute");
    }

    #[test]
    fn hour_window_reports_itself_when_binding() {
        let rl = RateLimiter::new(10, 3);
        let t: i64 = 1_800_000_000;
        for i in 0..3 {
            assert!(rl.check("k", t + i * 61).allowed);
        }
        let s = rl.check("k", t + 300);
        assert!(!s.allowed);
        assert_eq!((s.limit, s.remaining, s.reset), (3, 0, t + 3600));
    }
}
