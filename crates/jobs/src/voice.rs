//! A voice-changer request (`POST /v1/voice-changer`, also the
//! `voice.change` job's payload).

use std::collections::HashMap;

use mediagen_core::form::FilePart;
use mediagen_core::voice::CONVERSION_RATE as RATE;
use mediagen_core::FileId;
use mediagen_core::{format::AudioFormat, ApiError};
use serde::{Deserialize, Serialize};

use crate::tts::ClonedVoice;
use crate::{audio_output, MediaFile};

/// How the voice is changed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ChangeMode {
    /// Pitch and formants moved with the WORLD vocoder; everything else kept.
    #[default]
    Convert,
    /// Transcribed and spoken again by the target voice (a neural clone
    /// itself, in the language heard; a WORLD clone by its base voice
    /// converted), each line fitted to its time. `revoice`, its name
    /// before, is still taken.
    #[serde(alias = "revoice")]
    Resynthesize,
}

impl ChangeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Convert => "convert",
            Self::Resynthesize => "resynthesize",
        }
    }
}

/// A validated voice change (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChangeRequest {
    /// Blob key of the input file.
    pub input: String,
    pub file_id: FileId,
    pub voice_id: String,
    /// Set when `voice_id` is a cloned voice (else a catalog voice).
    #[serde(default)]
    pub cloned: Option<ClonedVoice>,
    #[serde(default)]
    pub mode: ChangeMode,
    pub format: AudioFormat,
    pub sample_rate: u32,
    /// Seconds of the input, as probed.
    #[serde(default)]
    pub duration: f64,
}

impl crate::MediaRequest for ChangeRequest {
    const LIMITS: crate::limits::MediaLimits = crate::limits::VOICE_CHANGER;
}

impl mediagen_core::JobRequest for ChangeRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::VoiceChange;

    /// Seconds of input, rounded up.
    fn units(&self) -> f64 {
        self.duration.ceil()
    }

    fn media_seconds(&self) -> f64 {
        self.duration
    }
}

// The form of `POST /v1/voice-changer` (multipart text parts beside the
// `file` part, or JSON naming a `fileId`), read by `ChangeOptions::parse`.
/// `POST /v1/voice-changer`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VoiceChangerForm {
    /// Speech in any accepted audio or video container.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// The target voice: a catalog or cloned voice id (unknown: 404).
    #[schema(min_length = 1, pattern = "\\S")]
    pub voice_id: String,
    /// `convert` (default) or `resynthesize` (`revoice`, its name before,
    /// is still taken).
    #[schema(schema_with = change_modes)]
    pub mode: Option<String>,
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

fn change_modes() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["convert", "resynthesize", "revoice"])
}

/// The options of a voice change besides the input and the target.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeOptions {
    pub voice_id: String,
    pub mode: ChangeMode,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

impl ChangeOptions {
    /// Reads and validates the form's fields. Errors name the parameter.
    pub fn parse(fields: &HashMap<String, String>) -> Result<Self, ApiError> {
        let form: VoiceChangerForm = mediagen_core::form::from_fields(fields)?;
        if form.voice_id.trim().is_empty() {
            return Err(ApiError::invalid_parameter("voiceId", "required"));
        }
        let mode = match form.mode.as_deref() {
            None | Some("convert") => ChangeMode::Convert,
            Some("resynthesize" | "revoice") => ChangeMode::Resynthesize,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "mode",
                    "must be convert or resynthesize",
                ))
            }
        };
        let (format, sample_rate) = audio_output(form.format.as_deref(), form.sample_rate, RATE)?;
        Ok(Self {
            voice_id: form.voice_id,
            mode,
            format,
            sample_rate,
        })
    }

    /// A cloned voice re-speaks through its base voice, which must exist
    /// (else 422 naming `voiceId`).
    pub fn check(&self, cloned: Option<&ClonedVoice>) -> Result<(), ApiError> {
        match (self.mode, cloned) {
            (ChangeMode::Resynthesize, Some(c)) => c.base().map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The job's payload, on the input `file`.
    pub fn with(self, file: MediaFile, cloned: Option<ClonedVoice>) -> ChangeRequest {
        ChangeRequest {
            input: file.key,
            file_id: file.id,
            duration: file.duration,
            voice_id: self.voice_id,
            cloned,
            mode: self.mode,
            format: self.format,
            sample_rate: self.sample_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_validated() {
        let f = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let ok = ChangeOptions::parse(&f(&[("voiceId", "voice_1"), ("format", "wav")])).unwrap();
        assert_eq!((ok.format, ok.sample_rate), (AudioFormat::Wav, RATE));
        assert_eq!(ok.mode, ChangeMode::Convert);
        for name in ["resynthesize", "revoice"] {
            let re = ChangeOptions::parse(&f(&[("voiceId", "v"), ("mode", name)])).unwrap();
            assert_eq!(re.mode, ChangeMode::Resynthesize);
        }
        for (bad, param) in [
            (f(&[]), "voiceId"),
            (f(&[("voiceId", "v"), ("mode", "magic")]), "mode"),
            (f(&[("voiceId", "v"), ("format", "aiff")]), "format"),
            (f(&[("voiceId", "v"), ("pitch", "2")]), "pitch"),
        ] {
            assert_eq!(
                ChangeOptions::parse(&bad).unwrap_err().details["parameter"],
                param
            );
        }
    }
}
