//! Timestamps are stored as Unix milliseconds (portable across SQLite and
//! PostgreSQL) and rendered as ISO 8601 UTC strings at the edge.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds rounded to the millisecond: times in results never show float
/// noise such as `5.6000000000000005`.
pub fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// Serializes seconds rounded to the millisecond, for a field marked
/// `#[serde(serialize_with = "mediagen_core::time::seconds")]`.
pub fn seconds<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round_ms(*value))
}

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
    fn times_in_json_are_whole_milliseconds() {
        #[derive(serde::Serialize)]
        struct Span {
            #[serde(serialize_with = "seconds")]
            end: f64,
        }
        assert_eq!(round_ms(5.6000000000000005), 5.6);
        assert_eq!(round_ms(1.23456), 1.235);
        let json = serde_json::to_string(&Span {
            end: 2.8 * 2.0 + 1e-15,
        })
        .unwrap();
        assert_eq!(json, r#"{"end":5.6}"#);
    }

    #[test]
    fn renders_and_parses_round_trip() {
        let s = iso8601(1_795_305_002_123);
        assert_eq!(s, "2026-11-21T23:50:02.123Z");
        assert_eq!(parse_iso8601(&s), Some(1_795_305_002_123));
        assert_eq!(parse_iso8601("yesterday"), None);
    }
}
