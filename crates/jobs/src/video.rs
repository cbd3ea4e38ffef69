//! A trim request (`POST /v1/video/trim`, also the `video.trim` job's
//! payload): time ranges, a cut mode and a container.

use std::collections::HashMap;

use mediagen_core::format::{Container, Range};
use mediagen_core::FileId;
use mediagen_core::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MediaFile;
use mediagen_core::form::FilePart;

/// Cut modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Frame-exact cut points.
    Accurate,
    /// Stream copy: starts snap to the keyframe at or before them.
    Fast,
}

/// A validated trim request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrimRequest {
    /// Blob key of the input file.
    pub input: String,
    pub file_id: FileId,
    pub ranges: Vec<Range>,
    pub mode: Mode,
    pub format: Container,
    /// Seconds of the input, as probed.
    #[serde(default)]
    pub duration: f64,
}

impl crate::MediaRequest for TrimRequest {
    const LIMITS: crate::limits::MediaLimits = crate::limits::VIDEO_TRIM;
}

/// Seconds a range may read beyond itself because of where the keyframes
/// are (a fast copy's span, an accurate cut's decoding lead) at no charge:
/// a GOP of ordinary video.
pub const FREE_OVERRUN: f64 = 2.0;

/// Most seconds a fast cut may copy beyond one range; past that (a file
/// with keyframes far apart) fast mode is refused: accurate mode cuts it.
pub const MAX_FAST_OVERRUN: f64 = 30.0;

/// The seconds charged for a cut's keyframe overruns (each range's, past
/// [`FREE_OVERRUN`]).
pub fn overrun_seconds(overruns: &[f64]) -> f64 {
    overruns.iter().map(|o| (o - FREE_OVERRUN).max(0.0)).sum()
}

impl mediagen_core::JobRequest for TrimRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::VideoTrim;

    /// Seconds of output, rounded up.
    fn units(&self) -> f64 {
        output_seconds(&self.ranges).ceil()
    }

    fn media_seconds(&self) -> f64 {
        self.duration
    }
}

/// Seconds the `ranges` keep.
fn output_seconds(ranges: &[Range]) -> f64 {
    ranges.iter().map(|r| r.end - r.start).sum()
}

/// Parses a time: seconds as a number, or `[[HH:]MM:]SS[.mmm]`.
pub fn parse_time(v: &Value) -> Option<f64> {
    let t = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            let parts: Vec<&str> = s.trim().split(':').collect();
            if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
                return None;
            }
            let mut total = 0.0;
            for (i, p) in parts.iter().enumerate() {
                let last = i == parts.len() - 1;
                if !p.chars().all(|c| c.is_ascii_digit() || (last && c == '.')) {
                    return None;
                }
                let x: f64 = p.parse().ok()?;
                if !last && x.fract() != 0.0 || (i > 0 && x >= 60.0) {
                    return None;
                }
                total = total * 60.0 + x;
            }
            total
        }
        _ => return None,
    };
    (t.is_finite() && t >= 0.0).then_some(t)
}

fn range_error(index: usize, start: f64, end: f64, reason: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidRange)
        .with_message(format!("Range {index} ({start} s to {end} s): {reason}."))
        .with_detail("parameter", "ranges")
        .with_detail("index", index)
        .with_detail("start", start)
        .with_detail("end", end)
        .with_detail("reason", reason)
}

// The form of `POST /v1/video/trim` (multipart text parts beside the
// `file` part, or JSON naming a `fileId`), read by `TrimOptions::parse`.
/// `POST /v1/video/trim`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VideoTrimForm {
    /// A video in an accepted container.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// The ranges to keep, in order (a JSON list in a multipart part):
    /// each `start < end` within the video (422 otherwise).
    #[schema(value_type = Vec<TrimRange>, required = true, min_items = 1)]
    pub ranges: Option<String>,
    /// `accurate` (default, frame-exact) or `fast` (stream copy from
    /// keyframes).
    #[schema(schema_with = trim_modes)]
    pub mode: Option<String>,
    /// `mp4` (default), `webm`, `mov`, `mkv`.
    #[schema(schema_with = containers)]
    pub format: Option<String>,
    /// `true`: ranges past the end are cut at the end.
    pub clamp: Option<bool>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

/// One range to keep, in seconds.
#[derive(utoipa::ToSchema)]
pub struct TrimRange {
    #[schema(minimum = 0.0)]
    pub start: f64,
    #[schema(minimum = 0.0)]
    pub end: f64,
}

fn trim_modes() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["accurate", "fast"])
}

/// The containers a video is written in, for the document.
pub fn containers() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["mp4", "webm", "mov", "mkv"])
}

/// Options of a trim request before the file is stored.
#[derive(Debug, Clone)]
pub struct TrimOptions {
    pub ranges: Vec<Range>,
    pub mode: Mode,
    pub format: Container,
}

impl TrimOptions {
    /// Validates the options against the media's `duration` (seconds).
    pub fn parse(
        fields: &HashMap<String, String>,
        duration: f64,
        max_ranges: usize,
    ) -> Result<Self, ApiError> {
        let form: VideoTrimForm = mediagen_core::form::from_fields(fields)?;
        let bad = |reason: &str| ApiError::invalid_parameter("ranges", reason);
        let raw = form
            .ranges
            .ok_or_else(|| bad("required: a list of {start, end}"))?;
        let list: Vec<Value> = serde_json::from_str(&raw)
            .map_err(|_| bad("must be a JSON list of {start, end} objects"))?;
        if list.is_empty() {
            return Err(bad("at least one range is needed"));
        }
        if list.len() > max_ranges {
            return Err(range_error(
                max_ranges,
                0.0,
                0.0,
                &format!("at most {max_ranges} ranges are allowed"),
            ));
        }
        let clamp = form.clamp.unwrap_or(false);
        let mut ranges = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let time = |k: &str| {
                parse_time(&item[k]).ok_or_else(|| {
                    bad(&format!(
                        "range {i}: `{k}` must be seconds (a number) or \"HH:MM:SS.mmm\""
                    ))
                })
            };
            let (mut start, mut end) = (time("start")?, time("end")?);
            if start >= end {
                return Err(range_error(i, start, end, "start must be before end"));
            }
            if clamp {
                start = start.min(duration);
                end = end.min(duration);
                if start >= end {
                    return Err(range_error(
                        i,
                        start,
                        end,
                        "nothing left after clamping to the media",
                    ));
                }
            } else if end > duration + 0.001 {
                return Err(range_error(
                    i,
                    start,
                    end,
                    &format!(
                        "the media lasts {duration:.3} s (send clamp: true to cut at its end)"
                    ),
                ));
            }
            // Within a millisecond past the end counts as the end; a range
            // that starts there has nothing left.
            let end = end.min(duration);
            if start >= end {
                return Err(range_error(
                    i,
                    start,
                    end,
                    "the range starts at the media's end",
                ));
            }
            ranges.push(Range { start, end });
        }
        let mode = match form.mode.as_deref() {
            None | Some("accurate") => Mode::Accurate,
            Some("fast") => Mode::Fast,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "mode",
                    "must be accurate or fast",
                ))
            }
        };
        let format = match form.format.as_deref() {
            None => Container::Mp4,
            Some(f) => Container::parse(f).ok_or_else(|| {
                ApiError::invalid_parameter("format", "must be one of mp4, webm, mov, mkv")
            })?,
        };
        Ok(Self {
            ranges,
            mode,
            format,
        })
    }

    /// Seconds of output.
    pub fn output_seconds(&self) -> f64 {
        output_seconds(&self.ranges)
    }

    /// The job's payload, on the input `file`.
    pub fn with_file(self, file: MediaFile) -> TrimRequest {
        TrimRequest {
            input: file.key,
            file_id: file.id,
            duration: file.duration,
            ranges: self.ranges,
            mode: self.mode,
            format: self.format,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_parse() {
        assert_eq!(parse_time(&json!(1.5)), Some(1.5));
        assert_eq!(parse_time(&json!("00:01:02.500")), Some(62.5));
        assert_eq!(parse_time(&json!("2:03")), Some(123.0));
        assert_eq!(parse_time(&json!("7.25")), Some(7.25));
        for bad in [
            json!(-1),
            json!("1:60"),
            json!("-5"),
            json!("1::2"),
            json!("a"),
            json!(null),
        ] {
            assert_eq!(parse_time(&bad), None, "{bad}");
        }
    }

    #[test]
    fn ranges_are_validated() {
        let f = |r: &str| HashMap::from([("ranges".to_owned(), r.to_owned())]);
        let ok = TrimOptions::parse(&f(r#"[{"start":1,"end":"00:00:02.5"}]"#), 10.0, 5).unwrap();
        assert_eq!(ok.output_seconds(), 1.5);
        let e = TrimOptions::parse(&f(r#"[{"start":1,"end":2},{"start":3,"end":3}]"#), 10.0, 5)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRange);
        assert_eq!(e.details["index"], 1);
        let e = TrimOptions::parse(&f(r#"[{"start":1,"end":12}]"#), 10.0, 5).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRange);
        // Starting inside the last millisecond's tolerance past the end left
        // a range that ended before it started.
        let e =
            TrimOptions::parse(&f(r#"[{"start":10.0005,"end":10.0009}]"#), 10.0, 5).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRange);
        let mut clamp = f(r#"[{"start":1,"end":12}]"#);
        clamp.insert("clamp".into(), "true".into());
        assert_eq!(
            TrimOptions::parse(&clamp, 10.0, 5).unwrap().ranges[0].end,
            10.0
        );
        let e = TrimOptions::parse(&f(r#"[{"start":"x","end":2}]"#), 10.0, 5).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParameter);
    }
}
