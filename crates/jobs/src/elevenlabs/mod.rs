//! ElevenLabs' API read as ours, for clients written for it (the
//! `elevenlabs` package with `base_url` at `/elevenlabs`;
//! docs/compatibility.md): its bodies and query parameters mapped to our
//! requests, its premade voice ids to catalog voices of matching
//! character.

pub mod realtime;
pub mod stream_input;
pub mod timing;

use std::collections::HashMap;

use mediagen_core::voice::VoiceInfo;
use mediagen_core::{ApiError, Capability};
use serde::Deserialize;

use crate::catalog::{Catalog, ModelList, Recognisers, Voices};
use crate::openai::openai_names;
use crate::sound::SoundBody;
use crate::stt::{SttOptionsParsed, SttRequest};
use crate::tts::TtsBody;

/// The `output_format` asked for when none is: MP3 at 44.1 kHz.
pub const DEFAULT_FORMAT: &str = "mp3_44100_128";

/// ElevenLabs' codecs (`output_format` is `codec_rate[_bitrate]`) and ours.
const CODECS: [(&str, &str); 4] = [
    ("mp3", "mp3"),
    ("pcm", "pcm"),
    ("wav", "wav"),
    ("opus", "ogg"),
];

/// Our parameters and ElevenLabs' names for them.
const NAMES: [(&str, &str); 8] = [
    ("format", "output_format"),
    ("sampleRate", "output_format"),
    ("voiceId", "voice_id"),
    ("prompt", "text"),
    ("duration", "duration_seconds"),
    ("language", "language_code"),
    ("languageCode", "language_code"),
    ("maxSpeakers", "num_speakers"),
];

/// ElevenLabs' best-known premade voices (their ids, found in most code
/// written for it), each with the Kokoro voice of matching character and
/// its gender for a fallback where Kokoro is not installed.
const PREMADE: [(&str, &str, &str); 10] = [
    ("21m00Tcm4TlvDq8ikWAM", "af_sarah", "female"), // Rachel
    ("AZnzlk1XvdvUeBnXmlld", "af_nicole", "female"), // Domi
    ("EXAVITQu4vr4xnSDxMaL", "af_bella", "female"), // Bella / Sarah
    ("MF3mGyEYCl7XYWbV9V6O", "af_sky", "female"),   // Elli
    ("ErXwobaYiN019PkySvjV", "am_michael", "male"), // Antoni
    ("TxGEqnHWrfWFTfGW9XjX", "am_eric", "male"),    // Josh
    ("VR6AewLTigWG4xSOukaG", "am_onyx", "male"),    // Arnold
    ("pNInz6obpgDQGcFmaJgB", "am_adam", "male"),    // Adam
    ("yoZ06aMxZJJ28mfd3POQ", "am_liam", "male"),    // Sam
    ("JBFqnCBsd6RMkjVDRZzb", "bm_george", "male"),  // George
];

/// An error of our checks with ElevenLabs' parameter names.
pub fn elevenlabs_names(error: ApiError) -> ApiError {
    openai_names(error, &NAMES)
}

/// ElevenLabs' `output_format` as our format and sample rate
/// (`mp3_22050_32` → mp3 at 22050 Hz; the bit rate is ours). μ-law and
/// A-law: 422.
pub fn output_format(raw: Option<&str>) -> Result<(&'static str, u32), ApiError> {
    let raw = raw.unwrap_or(DEFAULT_FORMAT);
    let bad = || {
        ApiError::invalid_parameter(
            "output_format",
            "must be codec_rate[_bitrate] with codec mp3, pcm, wav or opus (e.g. mp3_44100_128)",
        )
    };
    let mut parts = raw.split('_');
    let codec = parts.next().unwrap_or("");
    let rate: u32 = parts.next().and_then(|r| r.parse().ok()).ok_or_else(bad)?;
    if matches!(codec, "ulaw" | "alaw") {
        return Err(ApiError::unprocessable(
            "output_format",
            "μ-law and A-law are not made here",
        ));
    }
    let ours = CODECS
        .iter()
        .find(|(theirs, _)| *theirs == codec)
        .map(|(_, ours)| *ours)
        .ok_or_else(bad)?;
    Ok((ours, rate))
}

/// The catalog voice an ElevenLabs premade voice id stands for, `None` for
/// another id.
pub fn premade_voice<'a>(catalog: &'a dyn Voices, id: &str) -> Option<&'a VoiceInfo> {
    let (_, key, gender) = PREMADE.iter().find(|(i, _, _)| *i == id)?;
    crate::catalog::stand_in(catalog, key, gender)
}

/// The body of `POST /v1/text-to-speech/{voice_id}` (all its variants).
/// What is not ours is taken and ignored (named in a header).
#[derive(Debug, Deserialize)]
pub struct SpeechBody {
    pub text: String,
    #[serde(default)]
    pub model_id: Option<String>,
    /// ISO 639-1: the language the text is read in.
    #[serde(default)]
    pub language_code: Option<String>,
    #[serde(flatten)]
    pub rest: HashMap<String, serde_json::Value>,
}

impl SpeechBody {
    /// Our text-to-speech body for `voice_id` (a voice of ours or a premade
    /// id), the format `output_format` names, and the names of what was
    /// taken and ignored.
    pub fn parse(
        self,
        voice_id: &str,
        asked_format: Option<&str>,
        timestamps: bool,
        catalog: &Catalog,
    ) -> Result<(TtsBody, Vec<String>), ApiError> {
        check_model(
            self.model_id.as_deref(),
            Capability::TextToSpeech,
            catalog.models.as_ref(),
        )?;
        let (format, rate) = output_format(asked_format)?;
        let voice_id = premade_voice(catalog.voices.as_ref(), voice_id)
            .map(|v| v.id.clone())
            .unwrap_or_else(|| voice_id.to_owned());
        let body = TtsBody {
            text: self.text,
            voice_id,
            format: Some(format.to_owned()),
            sample_rate: Some(rate),
            speed: None,
            timestamps,
            language_code: self.language_code,
            job: Default::default(),
        };
        Ok((body, ignored(&self.rest)))
    }
}

/// The body of `POST /v1/sound-generation`.
#[derive(Debug, Deserialize)]
pub struct SoundEffectBody {
    pub text: String,
    #[serde(default)]
    pub duration_seconds: Option<f64>,
    #[serde(default, rename = "loop")]
    pub looped: Option<bool>,
    #[serde(default)]
    pub model_id: Option<String>,
    #[serde(flatten)]
    pub rest: HashMap<String, serde_json::Value>,
}

impl SoundEffectBody {
    /// Our sound body in the format `output_format` names, and what was
    /// taken and ignored (`prompt_influence`…).
    pub fn parse(
        self,
        asked_format: Option<&str>,
        catalog: &dyn ModelList,
    ) -> Result<(SoundBody, Vec<String>), ApiError> {
        check_model(
            self.model_id.as_deref(),
            Capability::SoundGeneration,
            catalog,
        )?;
        let (format, rate) = output_format(asked_format)?;
        let body = SoundBody {
            prompt: self.text,
            duration: self.duration_seconds,
            looped: self.looped.unwrap_or(false),
            seed: None,
            format: Some(format.to_owned()),
            sample_rate: Some(rate),
            model: None,
            steps: None,
            guidance_scale: None,
            negative_prompt: None,
            job: Default::default(),
        };
        Ok((body, ignored(&self.rest)))
    }
}

/// Timestamps a transcript asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    None,
    Word,
    Character,
}

/// A validated `POST /v1/speech-to-text` form.
#[derive(Debug, Clone)]
pub struct Transcription {
    pub options: SttOptionsParsed,
    pub granularity: Granularity,
    pub ignored: Vec<String>,
}

/// The form fields of speech-to-text that are ours to use; the rest are
/// ElevenLabs' features taken and ignored.
const STT_USED: [&str; 6] = [
    "model_id",
    "language_code",
    "timestamps_granularity",
    "file_format",
    "diarize",
    "num_speakers",
];

impl Transcription {
    /// Validates the text fields of the form.
    pub fn parse(
        fields: &HashMap<String, String>,
        catalog: &dyn Recognisers,
    ) -> Result<Self, ApiError> {
        let model = fields.get("model_id").map(|m| m.trim()).unwrap_or("");
        if model.is_empty() {
            return Err(ApiError::invalid_parameter(
                "model_id",
                "is required (scribe_v1)",
            ));
        }
        let recognisers = catalog.recognisers();
        let ours = recognisers.iter().any(|r| r.name == model);
        if !ours && !model.starts_with("scribe") {
            return Err(ApiError::invalid_parameter(
                "model_id",
                "must be scribe_v1, scribe_v2 or a speech-to-text model of GET /v1/models",
            ));
        }
        let granularity = match fields.get("timestamps_granularity").map(String::as_str) {
            None | Some("word") => Granularity::Word,
            Some("none") => Granularity::None,
            Some("character") => Granularity::Character,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "timestamps_granularity",
                    "must be none, word or character",
                ))
            }
        };
        if fields.get("file_format").is_some_and(|f| f != "other") {
            return Err(ApiError::unprocessable(
                "file_format",
                "only `other` (encoded audio, probed) is read here",
            ));
        }
        let mut ours_fields = HashMap::from([
            ("responseFormat".to_owned(), "verbose_json".to_owned()),
            (
                "timestampGranularities".to_owned(),
                "segment,word".to_owned(),
            ),
        ]);
        if ours {
            ours_fields.insert("model".into(), model.to_owned());
        }
        if let Some(language) = fields.get("language_code") {
            // ElevenLabs takes ISO 639-1 or -3; ours are 639-1.
            ours_fields.insert("language".into(), language.clone());
        }
        // `diarize`: words get `speaker_id`; `num_speakers` is ElevenLabs'
        // most speakers, ours `maxSpeakers`.
        if let Some(diarize) = fields.get("diarize") {
            ours_fields.insert("diarize".into(), diarize.clone());
        }
        if let Some(n) = fields.get("num_speakers") {
            ours_fields.insert("maxSpeakers".into(), n.clone());
        }
        let options = SttRequest::parse(&ours_fields, catalog).map_err(elevenlabs_names)?;
        let mut ignored: Vec<String> = fields
            .keys()
            .filter(|k| !STT_USED.contains(&k.as_str()))
            .cloned()
            .collect();
        ignored.sort();
        Ok(Self {
            options,
            granularity,
            ignored,
        })
    }
}

/// `model_id`: ElevenLabs' names (`eleven_…`) are taken, the voice or
/// prompt decides; so are our engines and models of `kind`.
pub(crate) fn check_model(
    model: Option<&str>,
    kind: Capability,
    catalog: &dyn ModelList,
) -> Result<(), ApiError> {
    let Some(model) = model else {
        return Ok(());
    };
    let ours = catalog
        .models()
        .iter()
        .any(|m| m.kind == kind && (m.engine == model || m.name.as_deref() == Some(model)));
    if ours || model.starts_with("eleven_") {
        return Ok(());
    }
    Err(ApiError::invalid_parameter(
        "model_id",
        "must be an ElevenLabs model (eleven_…) or one of GET /v1/models",
    ))
}

/// The names of the parameters sent with a value that this server does
/// not use, sorted.
fn ignored(rest: &HashMap<String, serde_json::Value>) -> Vec<String> {
    let mut names: Vec<String> = rest
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_formats_read_as_ours() {
        assert_eq!(output_format(None).unwrap(), ("mp3", 44_100));
        assert_eq!(output_format(Some("pcm_16000")).unwrap(), ("pcm", 16_000));
        assert_eq!(
            output_format(Some("opus_48000_64")).unwrap(),
            ("ogg", 48_000)
        );
        assert_eq!(output_format(Some("ulaw_8000")).unwrap_err().status(), 422);
        for bad in ["mp3", "flac_44100", "mp3_fast", ""] {
            assert_eq!(output_format(Some(bad)).unwrap_err().status(), 400, "{bad}");
        }
    }

    #[test]
    fn premade_voices_are_distinct_kokoro_voices_of_their_gender() {
        let mut keys: Vec<&str> = PREMADE.iter().map(|(_, k, _)| *k).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), PREMADE.len());
        for (_, key, gender) in PREMADE {
            assert_eq!(&key[1..2], if gender == "female" { "f" } else { "m" });
        }
    }
}

/// The body of `POST /v1/text-to-voice/design`.
#[derive(Debug, Deserialize)]
pub struct VoiceDesignBody {
    pub voice_description: String,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub model_id: Option<String>,
    #[serde(flatten)]
    pub rest: HashMap<String, serde_json::Value>,
}

impl VoiceDesignBody {
    /// Our design body, and what was taken and ignored (`loudness`,
    /// `guidance_scale`, `auto_generate_text`…).
    pub fn parse(self) -> (crate::voice_design::DesignBody, Vec<String>) {
        let mut ignored = ignored(&self.rest);
        if self.model_id.is_some() {
            ignored.push("model_id".to_owned());
        }
        let body = crate::voice_design::DesignBody {
            description: self.voice_description,
            text: self.text,
            seed: self.seed,
            job: Default::default(),
        };
        (body, ignored)
    }
}

/// The body of `POST /v1/text-to-voice`: a preview kept as a voice.
#[derive(Debug, Deserialize)]
pub struct VoiceFromPreview {
    pub voice_name: String,
    #[serde(default)]
    pub voice_description: Option<String>,
    pub generated_voice_id: String,
    /// ElevenLabs' labels are a map: its values are kept as labels.
    #[serde(default)]
    pub labels: Option<HashMap<String, Option<String>>>,
    #[serde(flatten)]
    pub rest: HashMap<String, serde_json::Value>,
}

impl VoiceFromPreview {
    /// Our keep body, and what was taken and ignored.
    pub fn parse(self) -> (crate::voice_design::KeepBody, Vec<String>) {
        let labels = self
            .labels
            .map(|l| l.into_values().flatten().collect::<Vec<_>>());
        let body = crate::voice_design::KeepBody {
            design_id: self.generated_voice_id,
            name: self.voice_name,
            description: self.voice_description,
            labels,
        };
        (body, ignored(&self.rest))
    }
}
