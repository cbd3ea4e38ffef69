//! `POST /v1/audio/speech`: OpenAI's body becomes a text-to-speech body
//! ([`TtsBody`]), with OpenAI's voice names mapped to catalog voices of
//! matching character and OpenAI's parameter names in every error.

use mediagen_core::voice::VoiceInfo;
use mediagen_core::{ApiError, Capability};
use serde::Deserialize;

use crate::bounds::Bound;
use crate::catalog::{Catalog, Voices};
use crate::tts::TtsBody;

/// The model names OpenAI's clients send for speech. The voice the request
/// names decides who speaks; these pick nothing more.
pub const OPENAI_SPEECH_MODELS: [&str; 3] = ["tts-1", "tts-1-hd", "gpt-4o-mini-tts"];

/// Our text-to-speech engines, also taken as `model` (422 when the engine
/// is not installed).
pub const SPEECH_ENGINES: [&str; 3] = ["kokoro", "piper", "espeak"];

/// Every `model` a speech request may name.
pub fn speech_models() -> impl Iterator<Item = &'static str> {
    OPENAI_SPEECH_MODELS.into_iter().chain(SPEECH_ENGINES)
}

/// OpenAI's voices, each with the Kokoro voice of matching character
/// (several share OpenAI's names) and its gender, for a fallback where
/// Kokoro is not installed.
const VOICES: [(&str, &str, &str); 13] = [
    ("alloy", "af_alloy", "female"),
    ("ash", "am_michael", "male"),
    ("ballad", "bm_george", "male"),
    ("coral", "af_heart", "female"),
    ("echo", "am_echo", "male"),
    ("fable", "bm_fable", "male"),
    ("nova", "af_nova", "female"),
    ("onyx", "am_onyx", "male"),
    ("sage", "af_sarah", "female"),
    ("shimmer", "af_bella", "female"),
    ("verse", "am_puck", "male"),
    ("marin", "af_river", "female"),
    ("cedar", "am_adam", "male"),
];

/// The formats OpenAI's `response_format` takes and ours for each.
pub const FORMATS: [(&str, &str); 6] = [
    ("mp3", "mp3"),
    ("opus", "ogg"),
    ("aac", "aac"),
    ("flac", "flac"),
    ("wav", "wav"),
    ("pcm", "pcm"),
];

/// OpenAI's `pcm`: 24 kHz, 16-bit little-endian, mono.
const PCM_RATE: u32 = 24_000;

/// The body of `POST /v1/audio/speech`, as OpenAI documents it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OpenAiSpeechRequest)]
pub struct SpeechBody {
    /// `tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`, or one of our text-to-speech
    /// engines (`kokoro`, `piper`, `espeak`; 422 when not installed). The
    /// voice decides who speaks; the model picks nothing more.
    #[schema(schema_with = model_schema)]
    pub model: String,
    /// Not only white space; trimmed, at most 4096 characters, with
    /// something to say (as `text` of `POST /v1/text-to-speech`: 422
    /// otherwise).
    #[schema(min_length = 1, max_length = 4096, pattern = "\\S")]
    pub input: String,
    /// An OpenAI voice (`alloy`, `ash`, `ballad`, `coral`, `echo`, `fable`,
    /// `nova`, `onyx`, `sage`, `shimmer`, `verse`, `marin`, `cedar`: each
    /// a catalog voice of matching character), or any voice id of
    /// `GET /v1/voices`, the account's cloned voices included (404
    /// `voice_not_found` otherwise).
    // Read as sent: a name, an id, or `{"id": …}`.
    #[schema(value_type = String, min_length = 1)]
    pub voice: serde_json::Value,
    /// `mp3` (default), `opus` (Ogg), `aac` (ADTS), `flac`, `wav`, `pcm`
    /// (24 kHz 16-bit little-endian mono).
    #[serde(default)]
    #[schema(schema_with = response_format_schema)]
    pub response_format: Option<String>,
    /// 0.5–2.0 (OpenAI takes 0.25–4.0; outside ours: 400), default 1.0.
    #[serde(default)]
    #[schema(minimum = 0.5, maximum = 2.0)]
    pub speed: Option<f32>,
    /// Accepted and ignored: the response then carries
    /// `X-Mediagen-Ignored: instructions`.
    #[serde(default)]
    pub instructions: Option<String>,
    /// `audio` (default): the audio's bytes. `sse`: server-sent events,
    /// `speech.audio.delta` with base64 audio as it is made, then
    /// `speech.audio.done` with the usage (characters as input tokens).
    #[serde(default)]
    #[schema(schema_with = stream_format_schema)]
    pub stream_format: Option<String>,
}

/// The models `model` takes, for the document.
fn model_schema() -> utoipa::openapi::schema::Object {
    let models: Vec<&str> = speech_models().collect();
    mediagen_core::schema::one_of_strings(&models)
}

/// OpenAI's formats, for the document.
fn response_format_schema() -> utoipa::openapi::schema::Object {
    let formats: Vec<&str> = FORMATS.iter().map(|(theirs, _)| *theirs).collect();
    mediagen_core::schema::one_of_strings(&formats)
}

/// The stream formats, for the document.
fn stream_format_schema() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["audio", "sse"])
}

/// A speech body read as ours, and what of it was accepted but not used.
#[derive(Debug)]
pub struct Speech {
    pub body: TtsBody,
    /// Parameters taken and ignored (`instructions`), for a header.
    pub ignored: Vec<&'static str>,
    /// Send the audio as server-sent events (`stream_format: "sse"`).
    pub sse: bool,
}

impl SpeechBody {
    /// Validates what is OpenAI's own (model, input length, voice, format,
    /// stream format) and maps it to our body; the rest is checked as for
    /// `POST /v1/text-to-speech`, whose errors [`super::openai_names`] renames
    /// with [`NAMES`].
    pub fn parse(self, catalog: &Catalog) -> Result<Speech, ApiError> {
        let tts_engine = |m: &str| {
            catalog
                .models
                .models()
                .iter()
                .any(|s| s.kind == Capability::TextToSpeech && s.available && s.engine == m)
        };
        let model = self.model.as_str();
        if SPEECH_ENGINES.contains(&model) {
            if !tts_engine(model) {
                return Err(ApiError::unprocessable(
                    "model",
                    "this engine is not installed here (GET /v1/models)",
                ));
            }
        } else if !OPENAI_SPEECH_MODELS.contains(&model) {
            let names: Vec<&str> = speech_models().collect();
            return Err(ApiError::invalid_parameter(
                "model",
                format!("must be one of {}", names.join(", ")),
            ));
        }
        let chars = mediagen_core::params::trim_spaces(&self.input)
            .chars()
            .count();
        // OpenAI's limit, as `input`'s schema states it.
        let most = Bound::of::<SpeechBody>("input").max_length();
        if chars > most {
            return Err(ApiError::invalid_parameter(
                "input",
                format!("must be at most {most} characters (got {chars})"),
            ));
        }
        let voice = match &self.voice {
            serde_json::Value::String(v) => v.as_str(),
            serde_json::Value::Object(o) => o.get("id").and_then(|v| v.as_str()).unwrap_or(""),
            _ => "",
        };
        if voice.is_empty() {
            return Err(ApiError::invalid_parameter(
                "voice",
                "must be a voice name or id",
            ));
        }
        let voice_id = openai_voice(catalog.voices.as_ref(), voice)
            .map(|v| v.id.clone())
            .unwrap_or_else(|| voice.to_owned());
        let format = match self.response_format.as_deref() {
            None => "mp3",
            Some(f) => FORMATS
                .iter()
                .find(|(theirs, _)| *theirs == f)
                .map(|(_, ours)| *ours)
                .ok_or_else(|| {
                    let names: Vec<&str> = FORMATS.iter().map(|(theirs, _)| *theirs).collect();
                    ApiError::invalid_parameter(
                        "response_format",
                        format!("must be one of {}", names.join(", ")),
                    )
                })?,
        };
        let sse = match self.stream_format.as_deref() {
            None | Some("audio") => false,
            Some("sse") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "stream_format",
                    "must be audio or sse",
                ))
            }
        };
        let mut ignored = Vec::new();
        if self.instructions.is_some() {
            ignored.push("instructions");
        }
        Ok(Speech {
            body: TtsBody {
                text: self.input,
                voice_id,
                format: Some(format.to_owned()),
                sample_rate: (format == "pcm").then_some(PCM_RATE),
                speed: self.speed,
                timestamps: false,
                language_code: None,
                job: Default::default(),
            },
            ignored,
            sse,
        })
    }
}

/// The catalog voice an OpenAI voice name stands for: its Kokoro voice, or
/// where Kokoro is not installed the first English voice of its gender.
/// `None` for a name that is not OpenAI's.
pub fn openai_voice<'a>(catalog: &'a dyn Voices, name: &str) -> Option<&'a VoiceInfo> {
    let (_, key, gender) = VOICES.iter().find(|(n, _, _)| *n == name)?;
    crate::catalog::stand_in(catalog, key, gender).or_else(|| {
        catalog
            .voices()
            .iter()
            .find(|v| v.language.starts_with("en"))
    })
}

/// Our text-to-speech parameters and OpenAI's names for them: an error of
/// our checks names OpenAI's (an unknown voice stays our 404
/// `voice_not_found`, which OpenAI's SDKs raise as `NotFoundError`).
pub const NAMES: [(&str, &str); 4] = [
    ("text", "input"),
    ("voiceId", "voice"),
    ("format", "response_format"),
    ("sampleRate", "response_format"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::openai_names;

    #[test]
    fn errors_name_openais_parameters() {
        let e = openai_names(
            ApiError::invalid_parameter("text", "must not be empty"),
            &NAMES,
        );
        assert_eq!(e.details["parameter"], "input");
        assert_eq!(e.message, "Invalid parameter `input`: must not be empty");
        let e = openai_names(
            ApiError::invalid_parameter("speed", "must be from 0.5 to 2.0"),
            &NAMES,
        );
        assert_eq!(e.details["parameter"], "speed");
        let e = openai_names(ApiError::voice_not_found("nobody"), &NAMES);
        assert_eq!(
            (e.status(), e.details["parameter"].as_str()),
            (404, Some("voice"))
        );
    }

    #[test]
    fn every_openai_voice_has_a_distinct_kokoro_voice() {
        let mut keys: Vec<&str> = VOICES.iter().map(|(_, k, _)| *k).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), VOICES.len());
        for (_, key, gender) in VOICES {
            // Kokoro's keys start with the accent and the gender: `af_`, `bm_`.
            assert_eq!(
                &key[1..2],
                if gender == "female" { "f" } else { "m" },
                "{key}"
            );
        }
    }
}
