//! An edit of a finished dub: new text for some of its lines.

use mediagen_core::{ssml, ApiError, JobKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::options::DubRequest;

/// A dubbed line as the result lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubbedLine {
    /// Who says it (`speaker_0`, …) when the dub gave the original's
    /// speakers voices of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub end: f64,
    pub source_text: String,
    pub translated_text: String,
    /// Words of `translated_text` the translator did not know and left in
    /// the source language, which the voice says as that language does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untranslated: Vec<String>,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub spoken_start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub spoken_end: f64,
    pub speedup: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub overrun: f64,
}

/// A new text, or another speaker, for one line of a dub (at least one).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LineEdit {
    pub index: usize,
    /// The line's new text; kept as it was when absent.
    #[serde(default)]
    pub translated_text: Option<String>,
    /// One of the dub's `speakers` (`speaker_1`, …) to say the line in
    /// their voice; kept as it was when absent.
    #[serde(default)]
    pub speaker: Option<String>,
}

/// An edit of a finished dub (also the job's payload): only the edited
/// lines are spoken again; the rest is taken from the dub as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubEdit {
    /// The job whose dub is edited (its stored bed and lines are read).
    pub source_job: String,
    pub request: DubRequest,
    pub source_language: String,
    /// The catalog voice that spoke the dub.
    pub voice_id: String,
    pub segments: Vec<DubbedLine>,
    pub edits: Vec<LineEdit>,
}

impl mediagen_core::JobRequest for DubEdit {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::DubbingEdit;

    /// Seconds spoken again, rounded up.
    fn units(&self) -> f64 {
        self.seconds().ceil()
    }

    fn media_seconds(&self) -> f64 {
        self.request.duration
    }
}

/// Longest edited line, in characters.
const MAX_LINE: usize = 1000;

impl DubEdit {
    /// Validates `edits` against a finished dub's job (`kind`, `payload`
    /// and `result` as stored). Errors name the parameter.
    pub fn parse(
        source_job: &str,
        kind: JobKind,
        payload: &Value,
        result: &Value,
        mut edits: Vec<LineEdit>,
    ) -> Result<Self, ApiError> {
        let mut request: DubRequest = match kind {
            JobKind::Dubbing => serde_json::from_value(payload.clone()),
            _ => serde_json::from_value(payload["request"].clone()),
        }
        .map_err(|_| ApiError::unprocessable("jobId", "not a dubbing job"))?;
        // A dub made before requests kept their input's length.
        if request.duration <= 0.0 {
            request.duration = result["duration"].as_f64().unwrap_or(0.0);
        }
        let segments: Vec<DubbedLine> = serde_json::from_value(result["segments"].clone())
            .map_err(|_| ApiError::unprocessable("jobId", "the dub has no lines"))?;
        if edits.is_empty() {
            return Err(ApiError::invalid_parameter(
                "segments",
                "give at least one line to change",
            ));
        }
        // What the dub holds is not the document's to say: a well-formed
        // edit naming lines it lacks (or one twice) is 422.
        if edits.len() > segments.len() {
            return Err(ApiError::unprocessable(
                "segments",
                format!("give 1 to {} lines to change", segments.len()),
            ));
        }
        let speakers: Vec<String> = result["speakers"]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|s| s["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        edits.sort_by_key(|e| e.index);
        for e in edits.iter_mut() {
            if e.index >= segments.len() {
                return Err(ApiError::unprocessable(
                    "segments",
                    format!(
                        "index {} is past the last line ({})",
                        e.index,
                        segments.len() - 1
                    ),
                ));
            }
            if e.translated_text.is_none() && e.speaker.is_none() {
                return Err(ApiError::invalid_parameter(
                    "segments",
                    format!("line {}: give translatedText, speaker or both", e.index),
                ));
            }
            let text = match e.translated_text.take() {
                Some(t) => t.trim().to_owned(),
                None => segments[e.index].translated_text.clone(),
            };
            let chars = text.chars().count();
            if chars == 0 || chars > MAX_LINE {
                return Err(ApiError::invalid_parameter(
                    "segments",
                    format!(
                        "line {}: translatedText must be 1 to {MAX_LINE} characters",
                        e.index
                    ),
                ));
            }
            if ssml::is_ssml(&text) {
                ssml::parse(&text).map_err(|err| {
                    ApiError::unprocessable(
                        "segments",
                        format!("line {}: invalid SSML: {}", e.index, err.message),
                    )
                    .with_detail("position", err.position)
                })?;
            }
            e.translated_text = Some(text);
            if let Some(who) = &e.speaker {
                if !speakers.iter().any(|s| s == who) {
                    let known = if speakers.is_empty() {
                        "this dub speaks in one voice".to_owned()
                    } else {
                        format!("this dub's speakers are {}", speakers.join(", "))
                    };
                    return Err(ApiError::unprocessable(
                        "segments",
                        format!("line {}: no such speaker; {known}", e.index),
                    ));
                }
            }
        }
        if edits.windows(2).any(|w| w[0].index == w[1].index) {
            return Err(ApiError::unprocessable(
                "segments",
                "each line may be changed once per call",
            ));
        }
        Ok(Self {
            source_job: source_job.to_owned(),
            request,
            source_language: result["sourceLanguage"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            voice_id: result["voiceId"].as_str().unwrap_or_default().to_owned(),
            segments,
            edits,
        })
    }

    /// Seconds billed: each edited line's slot, or the speech its text asks
    /// for where that is longer ([`ssml::estimated_seconds`]: a long text
    /// in a short slot is synthesized in full before it is fitted, so it
    /// pays for what is synthesized).
    pub fn seconds(&self) -> f64 {
        self.edits
            .iter()
            .map(|e| {
                let s = &self.segments[e.index];
                let text = e.translated_text.as_deref().unwrap_or(&s.translated_text);
                billed_seconds(s.end - s.start, text, &self.request.target_language)
            })
            .sum()
    }
}

/// Seconds billed for a line of `slot` seconds spoken again as `text` in
/// `language` (numbers and spelled letters as they are said).
fn billed_seconds(slot: f64, text: &str, language: &str) -> f64 {
    slot.max(ssml::estimated_seconds(text, language)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long text in a short slot pays for the speech it asks for (the
    /// probe's 1,000 characters in an 8-s slot), however its rates are
    /// nested; a short one pays for its slot.
    #[test]
    fn lines_pay_for_what_they_synthesize() {
        let long = "word ".repeat(200);
        assert!(billed_seconds(8.0, &long, "en") >= 70.0);
        let nested = format!(
            "<speak>{}{long}{}</speak>",
            "<prosody rate='50%'>".repeat(9),
            "</prosody>".repeat(9)
        );
        let slow = billed_seconds(8.0, &nested, "en");
        assert!((140.0..=145.0).contains(&slow), "{slow}");
        assert_eq!(billed_seconds(8.0, "Hello there.", "en"), 8.0);
        // The probe's 1000 digits in a short slot: priced as said (it
        // spoke for 481 s).
        let digits = "7".repeat(1000);
        assert!(billed_seconds(8.0, &digits, "es") >= 400.0);
    }
}
