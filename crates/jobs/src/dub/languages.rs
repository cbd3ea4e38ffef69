//! The language pairs dubbing can do: recognizer × translator × voice.

use mediagen_core::{ApiError, ErrorCode};
use serde::Serialize;

/// How a pair is translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// Text translation by the translator (possibly through a pivot).
    Apertium,
    /// Whisper's translate task, from the audio (any language → English).
    Whisper,
}

/// A language pair that works end to end: recognizer × translator × voice.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pair {
    pub source: String,
    pub target: String,
    pub translator: Via,
}

/// The pairs this server can dub.
pub struct DubLanguages {
    pub pairs: Vec<Pair>,
}

impl DubLanguages {
    pub fn find(&self, source: &str, target: &str) -> Option<&Pair> {
        self.pairs
            .iter()
            .find(|p| p.source == source && p.target == target)
    }

    pub fn targets(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self.pairs.iter().map(|p| p.target.as_str()).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// 422 naming the pair and listing what works.
    pub fn unsupported(&self, source: Option<&str>, target: &str) -> ApiError {
        let sources: Vec<&str> = self
            .pairs
            .iter()
            .filter(|p| p.target == target)
            .map(|p| p.source.as_str())
            .collect();
        let message = match source {
            Some(s) if s == target => format!("The file is already in `{target}`; use the voice changer's resynthesize mode to re-speak it."),
            Some(s) => format!("Dubbing from `{s}` into `{target}` is not supported. Supported pairs: GET /v1/dubbing/languages."),
            None => format!("Dubbing into `{target}` is not supported. Supported pairs: GET /v1/dubbing/languages."),
        };
        ApiError::new(ErrorCode::UnprocessableEntity)
            .with_message(message)
            .with_detail("parameter", "targetLanguage")
            .with_detail("sourceLanguage", source)
            .with_detail("targetLanguage", target)
            .with_detail("supportedSources", sources)
            .with_detail("supportedTargets", self.targets())
    }
}
