//! Timestamps are stored as Unix milliseconds (portable across SQLite and
//! PostgreSQL) and rendered as ISO 8601 UTC strings at the edge.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Renders Unix milliseconds as an RFC 3339 / ISO 8601 UTC timestamp with
/// millisecond precision, e.g. `2026-11-21T23:50:02.123Z`.
pub fn iso8601(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let t = ::time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .unwrap_or(::time::OffsetDateTime::UNIX_EPOCH);
    let f = ::time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&f).unwrap_or_default()
}

/// Parses an ISO 8601 / RFC 3339 timestamp into Unix milliseconds.
pub fn parse_iso8601(s: &str) -> Option<i64> {
    let t =
        ::time::OffsetDateTime::parse(s, &::time::format_description::well_known::Rfc3339).ok()?;
    Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_and_parses_round_trip() {
        let s = iso8601(1_795_305_002_123);
        assert_eq!(s, "2026-11-21T23:50:02.123Z");
        assert_eq!(parse_iso8601(&s), Some(1_795_305_002_123));
        assert_eq!(parse_iso8601("yesterday"), None);
    }
}
