//! A dubbing request: its options, validated, and the job's payload.

use std::collections::HashMap;

use mediagen_core::format::AudioFormat;
use mediagen_core::voice::CONVERSION_RATE as RATE;
use mediagen_core::ApiError;
use mediagen_core::FileId;
use serde::{Deserialize, Serialize};

use super::languages::DubLanguages;
use crate::tts::ClonedVoice;
use crate::{audio_output, MediaFile};
use mediagen_core::form::FilePart;

/// Who speaks the dub.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum DubVoice {
    /// The catalog voice of the target language closest to the speaker.
    Auto,
    /// Each speaker's own voice: a neural clone searched from their lines
    /// (where Kokoro speaks both languages and they say enough), else the
    /// closest voice converted toward their voice profile.
    Clone,
    /// A given voice (catalog or the account's cloned voice).
    #[serde(rename_all = "camelCase")]
    Voice {
        voice_id: String,
        cloned: Option<ClonedVoice>,
    },
}

/// The time `voiceMode: clone` may spend searching for the speakers' neural
/// clones, all speakers together, at most [`CLONE_SEARCH_PER_SPEAKER`]
/// each. Held as that many more units (seconds) of the dub and settled on
/// the seconds spent.
pub const CLONE_SEARCH: std::time::Duration = std::time::Duration::from_secs(120);
/// A speaker's share of [`CLONE_SEARCH`] at most.
pub const CLONE_SEARCH_PER_SPEAKER: std::time::Duration = std::time::Duration::from_secs(60);

/// A validated dubbing request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubRequest {
    pub input: String,
    pub file_id: FileId,
    /// ISO 639-1, or `None` to detect.
    pub source_language: Option<String>,
    pub target_language: String,
    pub voice: DubVoice,
    pub keep_background: bool,
    pub start_time: Option<f64>,
    pub end_time: Option<f64>,
    pub max_speedup: f64,
    pub format: AudioFormat,
    pub sample_rate: u32,
    /// Seconds of the input, as probed.
    #[serde(default)]
    pub duration: f64,
}

impl crate::MediaRequest for DubRequest {
    const LIMITS: crate::limits::MediaLimits = crate::limits::DUBBING;
}

impl mediagen_core::JobRequest for DubRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::Dubbing;

    /// The seconds dubbed, rounded up, and in `clone` mode the speakers'
    /// voice searches it may run ([`CLONE_SEARCH`]): held, and settled on
    /// what was spent.
    fn units(&self) -> f64 {
        let search = match self.voice {
            DubVoice::Clone => CLONE_SEARCH.as_secs_f64(),
            DubVoice::Auto | DubVoice::Voice { .. } => 0.0,
        };
        dubbed_seconds(self.start_time, self.end_time, self.duration).ceil() + search
    }

    fn media_seconds(&self) -> f64 {
        self.duration
    }
}

/// Seconds of a file of `duration` seconds between `start` and `end`.
fn dubbed_seconds(start: Option<f64>, end: Option<f64>, duration: f64) -> f64 {
    let end = end.unwrap_or(duration).min(duration);
    (end - start.unwrap_or(0.0)).max(0.0)
}

/// The options of a dubbing request besides the input.
#[derive(Debug, Clone, PartialEq)]
pub struct DubOptions {
    pub source_language: Option<String>,
    pub target_language: String,
    /// `voiceId` when given (resolved by the caller).
    pub voice_id: Option<String>,
    /// `clone` asked instead of `auto`.
    pub clone: bool,
    pub keep_background: bool,
    pub start_time: Option<f64>,
    pub end_time: Option<f64>,
    pub max_speedup: f64,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

// The form of `POST /v1/dubbing` (multipart text parts beside the `file`
// part, or JSON naming a `fileId`), read by `DubOptions::parse`.
/// `POST /v1/dubbing`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DubbingForm {
    /// Speech in any accepted audio or video container.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// ISO 639-1 (a pair the server lacks: 422, see `GET
    /// /v1/dubbing/languages`).
    #[schema(pattern = "^[A-Za-z]{2}([-_][A-Za-z0-9]+)*$")]
    pub target_language: String,
    /// ISO 639-1, or `auto` (default).
    #[schema(pattern = "^([A-Za-z]{2}([-_][A-Za-z0-9]+)*|auto)$")]
    pub source_language: Option<String>,
    /// One voice for every line (not with `voiceMode: clone`: 422).
    #[schema(min_length = 1, pattern = "\\S")]
    pub voice_id: Option<String>,
    /// `auto` (default: for each speaker, a catalog voice near them) or
    /// `clone` (each speaker's own voice: a neural clone searched from
    /// their lines, or that voice converted toward theirs).
    #[schema(schema_with = voice_modes)]
    pub voice_mode: Option<String>,
    /// Keep the music and noise under the dub (default `true`).
    pub keep_background: Option<bool>,
    /// Seconds; the part dubbed starts here (before the end: 422).
    #[schema(minimum = 0.0)]
    pub start_time: Option<f64>,
    /// Seconds; after `startTime` (422 otherwise).
    #[schema(minimum = 0.0)]
    pub end_time: Option<f64>,
    /// How much a line may be sped up to fit, 1.0–2.0 (default 1.3).
    #[schema(minimum = 1.0, maximum = 2.0)]
    pub max_speedup: Option<f64>,
    #[schema(schema_with = mediagen_core::schema::audio_format_schema)]
    pub format: Option<String>,
    /// A rate the format takes (another: 422).
    #[schema(schema_with = mediagen_core::schema::sample_rate_schema)]
    pub sample_rate: Option<u32>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

fn voice_modes() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["auto", "clone"])
}

/// An ISO 639-1 code named `key`; empty or `auto`: none.
fn language(value: Option<&str>, key: &str) -> Result<Option<String>, ApiError> {
    match value.map(|l| l.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(l) if l.is_empty() || l == "auto" => Ok(None),
        Some(l) => crate::iso_639_1(&l, key).map(Some),
    }
}

impl DubOptions {
    /// Validates the options (JSON fields or multipart text parts, as
    /// strings) against the supported pairs. Errors name the parameter.
    pub fn parse(
        fields: &HashMap<String, String>,
        languages: &DubLanguages,
        duration: f64,
    ) -> Result<Self, ApiError> {
        let form: DubbingForm = mediagen_core::form::from_fields(fields)?;
        let target_language = language(Some(&form.target_language), "targetLanguage")?
            .ok_or_else(|| ApiError::invalid_parameter("targetLanguage", "required"))?;
        let source_language = language(form.source_language.as_deref(), "sourceLanguage")?;
        match &source_language {
            Some(s) if languages.find(s, &target_language).is_none() => {
                return Err(languages.unsupported(Some(s), &target_language))
            }
            None if !languages.targets().contains(&target_language.as_str()) => {
                return Err(languages.unsupported(None, &target_language))
            }
            _ => {}
        }
        let voice_id = form
            .voice_id
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty());
        let clone = match form.voice_mode.as_deref() {
            None | Some("auto") => false,
            Some("clone") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "voiceMode",
                    "must be auto or clone",
                ))
            }
        };
        if clone && voice_id.is_some() {
            return Err(ApiError::invalid_parameter(
                "voiceMode",
                "give either voiceId or voiceMode, not both",
            ));
        }
        let keep_background = form.keep_background.unwrap_or(true);
        let (start_time, end_time) = (form.start_time, form.end_time);
        let (from, to) = (start_time.unwrap_or(0.0), end_time.unwrap_or(duration));
        if from < 0.0 || to <= from || (duration > 0.0 && from >= duration) {
            return Err(ApiError::unprocessable(
                "startTime",
                format!(
                    "startTime and endTime must give a part of the file (0 ≤ start < end, start before {duration:.3} s)"
                ),
            ));
        }
        let max_speedup = form.max_speedup.unwrap_or(1.3);
        if !(1.0..=2.0).contains(&max_speedup) {
            return Err(ApiError::invalid_parameter(
                "maxSpeedup",
                "must be from 1.0 to 2.0",
            ));
        }
        let (format, sample_rate) = audio_output(form.format.as_deref(), form.sample_rate, RATE)?;
        Ok(Self {
            source_language,
            target_language,
            voice_id,
            clone,
            keep_background,
            start_time,
            end_time,
            max_speedup,
            format,
            sample_rate,
        })
    }

    /// The catalog voice `voiceId` names (when it names no cloned voice of
    /// the account) is installed and speaks the target language: 404 or
    /// 422 naming `voiceId` otherwise.
    pub fn check_catalog_voice(&self, voices: &dyn crate::catalog::Voices) -> Result<(), ApiError> {
        let Some(id) = &self.voice_id else {
            return Ok(());
        };
        let voice = voices
            .voice(id)
            .ok_or_else(|| ApiError::voice_not_found(id))?;
        let target = &self.target_language;
        if voice
            .languages
            .iter()
            .any(|l| l.to_ascii_lowercase().starts_with(target.as_str()))
        {
            Ok(())
        } else {
            Err(ApiError::unprocessable(
                "voiceId",
                format!("voice {id} does not speak `{target}`, the target language"),
            ))
        }
    }

    /// Seconds of a file of `duration` seconds that are dubbed (billed).
    pub fn seconds(&self, duration: f64) -> f64 {
        dubbed_seconds(self.start_time, self.end_time, duration)
    }

    /// The job's payload on the input `file`; `cloned` is the resolved
    /// `voiceId` when it names a cloned voice.
    pub fn with(self, file: MediaFile, cloned: Option<ClonedVoice>) -> DubRequest {
        let voice = match self.voice_id {
            Some(voice_id) => DubVoice::Voice { voice_id, cloned },
            None if self.clone => DubVoice::Clone,
            None => DubVoice::Auto,
        };
        DubRequest {
            input: file.key,
            file_id: file.id,
            duration: file.duration,
            source_language: self.source_language,
            target_language: self.target_language,
            voice,
            keep_background: self.keep_background,
            start_time: self.start_time,
            end_time: self.end_time,
            max_speedup: self.max_speedup,
            format: self.format,
            sample_rate: self.sample_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::languages::{Pair, Via};
    use super::*;
    use mediagen_core::{ErrorCode, JobRequest};
    use serde_json::json;

    fn f(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn languages() -> DubLanguages {
        DubLanguages {
            pairs: vec![
                Pair {
                    source: "en".into(),
                    target: "es".into(),
                    translator: Via::Apertium,
                },
                Pair {
                    source: "es".into(),
                    target: "en".into(),
                    translator: Via::Whisper,
                },
            ],
        }
    }

    #[test]
    fn options_are_validated() {
        let l = languages();
        let ok = DubOptions::parse(&f(&[("targetLanguage", "es")]), &l, 10.0).unwrap();
        assert_eq!(ok.max_speedup, 1.3);
        assert!(ok.keep_background && !ok.clone);
        assert_eq!(ok.seconds(10.0), 10.0);
        let part = DubOptions::parse(
            &f(&[
                ("targetLanguage", "ES-es"),
                ("startTime", "2"),
                ("endTime", "5.5"),
            ]),
            &l,
            10.0,
        )
        .unwrap();
        assert_eq!(
            (part.target_language.as_str(), part.seconds(10.0)),
            ("es", 3.5)
        );
        // The request counts its own units: the seconds dubbed, rounded
        // up, and in clone mode the voice searches it may run; its time
        // limit grows with the whole file.
        let file = MediaFile {
            key: "k".into(),
            id: FileId::random(),
            duration: 10.0,
            demuxer: None,
        };
        let request = part.with(file.clone(), None);
        assert_eq!((request.units(), request.media_seconds()), (4.0, 10.0));
        let mut fields = f(&[("targetLanguage", "es"), ("voiceMode", "clone")]);
        fields.insert("endTime".into(), "2.5".into());
        let cloning = DubOptions::parse(&fields, &l, 10.0).unwrap();
        let request = cloning.with(file, None);
        assert_eq!(request.units(), 3.0 + CLONE_SEARCH.as_secs_f64());
        for (fields, param) in [
            (f(&[]), "targetLanguage"),
            (f(&[("targetLanguage", "spanish")]), "targetLanguage"),
            (
                f(&[("targetLanguage", "es"), ("maxSpeedup", "3")]),
                "maxSpeedup",
            ),
            (
                f(&[("targetLanguage", "es"), ("voiceMode", "x")]),
                "voiceMode",
            ),
            (
                f(&[("targetLanguage", "es"), ("keepBackground", "1")]),
                "keepBackground",
            ),
            (
                f(&[("targetLanguage", "es"), ("startTime", "x")]),
                "startTime",
            ),
            (f(&[("targetLanguage", "es"), ("speed", "2")]), "speed"),
        ] {
            let e = DubOptions::parse(&fields, &l, 10.0).unwrap_err();
            assert_eq!(e.details["parameter"], param, "{fields:?}");
        }
        // Unsupported pairs are 422 and list what works.
        let e = DubOptions::parse(&f(&[("targetLanguage", "de")]), &l, 10.0).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnprocessableEntity);
        assert_eq!(e.details["supportedTargets"], json!(["en", "es"]));
        let e = DubOptions::parse(
            &f(&[("targetLanguage", "en"), ("sourceLanguage", "fr")]),
            &l,
            10.0,
        )
        .unwrap_err();
        assert_eq!(e.details["supportedSources"], json!(["es"]));
        // A part past the end.
        let e = DubOptions::parse(
            &f(&[("targetLanguage", "es"), ("startTime", "12")]),
            &l,
            10.0,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::UnprocessableEntity);
    }
}
