//! A speech-to-text request (`POST /v1/speech-to-text`, also the `stt`
//! job's payload).

use std::collections::HashMap;

use mediagen_core::form::FilePart;
use mediagen_core::ApiError;
use mediagen_core::FileId;
use serde::{Deserialize, Serialize};

use crate::bounds::Bound;
use crate::catalog::Recognisers;
use crate::MediaFile;

/// Output formats.
pub const FORMATS: [&str; 5] = ["json", "text", "srt", "vtt", "verbose_json"];

// The form of `POST /v1/speech-to-text` (multipart text parts beside the
// `file` part, or JSON naming a `fileId`), read by `SttRequest::parse`.
/// `POST /v1/speech-to-text`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechToTextForm {
    /// Speech in any accepted audio or video container.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// A model listed by `GET /v1/models` (kind `stt`); default: the
    /// server's. One it lacks: 422.
    #[schema(min_length = 1)]
    pub model: Option<String>,
    /// ISO 639-1, or `auto` (detected). A code the model does not know: 422.
    #[schema(pattern = "^([A-Za-z]{2}|auto)$")]
    pub language: Option<String>,
    /// `transcribe` (default) or `translate` (into English).
    #[schema(schema_with = tasks)]
    pub task: Option<String>,
    /// Words to expect (names, terms), at most 1000 characters.
    #[schema(max_length = 1000)]
    pub prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `vtt`, `verbose_json`.
    #[schema(schema_with = transcript_formats)]
    pub response_format: Option<String>,
    /// `segment` (default), `word`, or both comma-separated; `word` needs
    /// `verbose_json` (422 otherwise).
    #[schema(schema_with = granularities)]
    pub timestamp_granularities: Option<String>,
    /// `true`: who speaks when. Every segment and word gets `speaker`
    /// (`speaker_0`, `speaker_1`, … by first speaking), segments are cut
    /// where the speaker changes, `speakers` lists each with their
    /// speaking time, and srt/vtt show them (`[speaker_0]`, `<v speaker_0>`).
    pub diarize: Option<bool>,
    /// How many speakers there are, when known (1–32); needs `diarize`
    /// (400 otherwise). Without it the number is found from the audio.
    #[schema(minimum = 1, maximum = 32)]
    pub num_speakers: Option<u32>,
    /// The fewest speakers to find (1–32; needs `diarize`, not with
    /// `numSpeakers`).
    #[schema(minimum = 1, maximum = 32)]
    pub min_speakers: Option<u32>,
    /// The most speakers to find (1–32, at least `minSpeakers`; needs
    /// `diarize`, not with `numSpeakers`).
    #[schema(minimum = 1, maximum = 32)]
    pub max_speakers: Option<u32>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

fn tasks() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["transcribe", "translate"])
}

fn transcript_formats() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&FORMATS)
}

fn granularities() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["segment", "word", "segment,word", "word,segment"])
}

/// A validated speech-to-text request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SttRequest {
    /// Blob key of the input file.
    pub input: String,
    pub file_id: FileId,
    /// Seconds, from probing.
    pub duration: f64,
    /// ISO 639-1, or `None` to detect.
    pub language: Option<String>,
    pub translate: bool,
    pub prompt: Option<String>,
    pub response_format: String,
    pub words: bool,
    pub model: String,
    /// Label speakers.
    #[serde(default)]
    pub diarize: bool,
    /// How many speakers there are, when the caller knows.
    #[serde(default)]
    pub num_speakers: Option<u32>,
    /// The fewest and the most speakers to find, when bounded.
    #[serde(default)]
    pub min_speakers: Option<u32>,
    #[serde(default)]
    pub max_speakers: Option<u32>,
    /// The demuxer the API's probe of a fresh upload found (the worker
    /// probes files stored before itself); checked against the allowlist
    /// again where it is used.
    #[serde(default)]
    pub demuxer: Option<String>,
}

impl crate::MediaRequest for SttRequest {
    const LIMITS: crate::limits::MediaLimits = crate::limits::SPEECH_TO_TEXT;
}

impl mediagen_core::JobRequest for SttRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::Stt;

    /// Seconds of audio, rounded up.
    fn units(&self) -> f64 {
        self.duration.ceil()
    }

    fn media_seconds(&self) -> f64 {
        self.duration
    }
}

/// The recogniser `model` names (the server's first when `None`); 422
/// naming `model` listing those installed otherwise.
pub(crate) fn recogniser(
    catalog: &dyn Recognisers,
    model: Option<&str>,
) -> Result<crate::catalog::Recogniser, ApiError> {
    let recognisers = catalog.recognisers();
    let names: Vec<String> = recognisers.iter().map(|r| r.name.clone()).collect();
    recognisers
        .into_iter()
        .find(|r| model.is_none_or(|name| r.name == name))
        .ok_or_else(|| {
            ApiError::invalid_parameter("model", format!("must be one of: {}", names.join(", ")))
        })
}

/// The language asked for (`None`, empty or `auto`: detected), checked
/// against what the recogniser knows; 422 naming `language` otherwise.
pub(crate) fn spoken_language(
    catalog: &dyn Recognisers,
    model: &crate::catalog::Recogniser,
    language: Option<String>,
) -> Result<Option<String>, ApiError> {
    match language.map(|l| l.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(l) if l.is_empty() || l == "auto" => Ok(None),
        Some(l) => {
            if !catalog.recognised_languages().contains(&l.as_str()) {
                return Err(ApiError::invalid_parameter(
                    "language",
                    format!("`{l}` is not a supported ISO 639-1 code (or send `auto`)"),
                ));
            }
            if !model.multilingual && l != "en" {
                return Err(ApiError::invalid_parameter(
                    "language",
                    format!("model `{}` knows English only", model.name),
                ));
            }
            Ok(Some(l))
        }
    }
}

/// The `prompt` (words to expect): none when blank, 400 naming it past
/// 1000 characters.
pub(crate) fn vocabulary(prompt: Option<String>) -> Result<Option<String>, ApiError> {
    let prompt = prompt.filter(|p| !p.trim().is_empty());
    if prompt.as_ref().is_some_and(|p| p.chars().count() > 1000) {
        return Err(ApiError::invalid_parameter(
            "prompt",
            "must be at most 1000 characters",
        ));
    }
    Ok(prompt)
}

impl SttRequest {
    /// Validates the request's options (from JSON fields or multipart text
    /// parts, as strings). Errors name the parameter.
    pub fn parse(
        fields: &HashMap<String, String>,
        catalog: &dyn Recognisers,
    ) -> Result<SttOptionsParsed, ApiError> {
        let form: SpeechToTextForm = mediagen_core::form::from_fields(fields)?;
        let model = recogniser(catalog, form.model.as_deref())?;
        let language = spoken_language(catalog, &model, form.language)?;
        let translate = match form.task.as_deref() {
            None | Some("transcribe") => false,
            Some("translate") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "task",
                    "must be transcribe or translate",
                ))
            }
        };
        let response_format = form.response_format.unwrap_or_else(|| "json".into());
        if !FORMATS.contains(&response_format.as_str()) {
            return Err(ApiError::invalid_parameter(
                "responseFormat",
                format!("must be one of {}", FORMATS.join(", ")),
            ));
        }
        let granularities = form.timestamp_granularities.as_deref().unwrap_or("segment");
        let words = granularities.split(',').map(str::trim).any(|g| g == "word");
        if granularities
            .split(',')
            .map(str::trim)
            .any(|g| g != "word" && g != "segment")
        {
            return Err(ApiError::invalid_parameter(
                "timestampGranularities",
                "must be segment, word or both",
            ));
        }
        if words && response_format != "verbose_json" {
            return Err(ApiError::invalid_parameter(
                "timestampGranularities",
                "word timestamps need responseFormat verbose_json",
            ));
        }
        let prompt = vocabulary(form.prompt)?;
        let diarize = form.diarize.unwrap_or(false);
        // Each count's bounds are its schema's (at most 32, as ElevenLabs
        // allows).
        let count = |name: &'static str, n: Option<u32>| {
            let b = Bound::of::<SpeechToTextForm>(name);
            match n {
                None => Ok(None),
                Some(n) if !b.counts(n) => Err(ApiError::invalid_parameter(
                    name,
                    format!(
                        "must be an integer from {} to {}",
                        b.min_count(),
                        b.max_count()
                    ),
                )),
                Some(_) if !diarize => {
                    Err(ApiError::invalid_parameter(name, "needs diarize: true"))
                }
                n => Ok(n),
            }
        };
        let num_speakers = count("numSpeakers", form.num_speakers)?;
        let min_speakers = count("minSpeakers", form.min_speakers)?;
        let max_speakers = count("maxSpeakers", form.max_speakers)?;
        if num_speakers.is_some() {
            for (name, n) in [("minSpeakers", min_speakers), ("maxSpeakers", max_speakers)] {
                if n.is_some() {
                    return Err(ApiError::invalid_parameter(
                        name,
                        "cannot be sent with numSpeakers",
                    ));
                }
            }
        }
        if let (Some(lo), Some(hi)) = (min_speakers, max_speakers) {
            if lo > hi {
                return Err(ApiError::invalid_parameter(
                    "maxSpeakers",
                    "must be at least minSpeakers",
                ));
            }
        }
        Ok(SttOptionsParsed {
            language,
            translate,
            prompt,
            response_format,
            words,
            model: model.name,
            diarize,
            num_speakers,
            min_speakers,
            max_speakers,
        })
    }
}

/// The options part of a request, before the file is known.
#[derive(Debug, Clone)]
pub struct SttOptionsParsed {
    pub language: Option<String>,
    pub translate: bool,
    pub prompt: Option<String>,
    pub response_format: String,
    pub words: bool,
    pub model: String,
    pub diarize: bool,
    pub num_speakers: Option<u32>,
    pub min_speakers: Option<u32>,
    pub max_speakers: Option<u32>,
}

impl SttOptionsParsed {
    /// The job's payload, on the input `file`.
    pub fn with_file(self, file: MediaFile) -> SttRequest {
        SttRequest {
            demuxer: file.demuxer,
            input: file.key,
            file_id: file.id,
            duration: file.duration,
            language: self.language,
            translate: self.translate,
            prompt: self.prompt,
            response_format: self.response_format,
            words: self.words,
            model: self.model,
            diarize: self.diarize,
            num_speakers: self.num_speakers,
            min_speakers: self.min_speakers,
            max_speakers: self.max_speakers,
        }
    }
}
