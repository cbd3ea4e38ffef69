//! `POST /v1/audio/transcriptions` and `POST /v1/audio/translations`:
//! OpenAI's form validated by OpenAI's rules and mapped to a speech-to-text
//! request ([`SttOptionsParsed`]), and the finished job's transcript
//! rendered in the `response_format` OpenAI's clients expect.

use std::collections::HashMap;

use mediagen_core::ApiError;
use serde_json::{json, Value};

use super::openai_names;
use crate::catalog::Recognisers;
use crate::stt::{SttOptionsParsed, SttRequest};
use mediagen_core::form::{from_fields, FilePart};
use serde::Deserialize;

/// OpenAI's recogniser: our default one.
pub const WHISPER: &str = "whisper-1";

/// OpenAI's newer recognisers, taken for transcriptions with their rules
/// (json or text only, no timestamps); our default recogniser runs them.
pub const GPT_TRANSCRIBE: [&str; 2] = ["gpt-4o-transcribe", "gpt-4o-mini-transcribe"];

/// OpenAI's diarizing recogniser: ours, diarizing (json, text or
/// `diarized_json`, whose segments carry speakers `A`, `B`, …).
pub const DIARIZE: &str = "gpt-4o-transcribe-diarize";

/// OpenAI's `response_format` values (`diarized_json` for transcriptions
/// by [`DIARIZE`] only).
pub const FORMATS: [&str; 6] = [
    "json",
    "text",
    "srt",
    "verbose_json",
    "vtt",
    "diarized_json",
];

/// Those of translations.
const TRANSLATION_FORMATS: [&str; 5] = ["json", "text", "srt", "verbose_json", "vtt"];

/// The list parameter of timestamp granularities, as OpenAI's SDKs name
/// its form fields.
const GRANULARITIES: &str = "timestamp_granularities[]";

/// Our speech-to-text parameters and OpenAI's names for them.
const NAMES: [(&str, &str); 2] = [
    ("responseFormat", "response_format"),
    ("timestampGranularities", GRANULARITIES),
];

/// Which of the two routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// In the language spoken.
    Transcribe,
    /// Into English.
    Translate,
}

impl Task {
    fn as_str(self) -> &'static str {
        match self {
            Self::Transcribe => "transcribe",
            Self::Translate => "translate",
        }
    }

    /// The route's form read from its text fields (a field the route does
    /// not take: 400); a translation's as a transcription's without the
    /// fields it lacks.
    fn form(self, fields: &HashMap<String, String>) -> Result<TranscriptionForm, ApiError> {
        Ok(match self {
            Self::Transcribe => from_fields(fields)?,
            Self::Translate => {
                let t: TranslationForm = from_fields(fields)?;
                TranscriptionForm {
                    file: t.file,
                    model: t.model,
                    language: None,
                    prompt: t.prompt,
                    response_format: t.response_format,
                    temperature: t.temperature,
                    timestamp_granularities: None,
                    stream: None,
                    chunking_strategy: None,
                    known_speaker_names: None,
                    known_speaker_references: None,
                }
            }
        })
    }
}

/// `POST /v1/audio/transcriptions` (OpenAI's form).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OpenAiTranscriptionForm)]
pub struct TranscriptionForm {
    /// Speech in any accepted audio or video container.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// `whisper-1` (our default recogniser), `gpt-4o-transcribe` or
    /// `gpt-4o-mini-transcribe` (the same, with OpenAI's rules for them:
    /// json or text only), `gpt-4o-transcribe-diarize` (the same,
    /// diarizing: json, text or `diarized_json`), or a speech-to-text
    /// model of `GET /v1/models`.
    #[schema(min_length = 1)]
    pub model: String,
    /// ISO 639-1; omitted: detected.
    #[schema(pattern = "^[A-Za-z]{2}$")]
    pub language: Option<String>,
    /// Words to expect (names, terms), at most 1000 characters.
    #[schema(max_length = 1000)]
    pub prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json`, `vtt`, and
    /// `diarized_json` with `gpt-4o-transcribe-diarize`: `{task, duration,
    /// text, segments: [{type: "transcript.text.segment", id, start, end,
    /// text, speaker}], usage}`, speakers `A`, `B`, … by first speaking.
    #[schema(schema_with = formats)]
    pub response_format: Option<String>,
    /// 0–1; taken, not used (decoding is greedy): a value other than 0 is
    /// named in `X-Mediagen-Ignored`.
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub temperature: Option<f64>,
    /// `segment` (default) and/or `word`, one part each; needs
    /// `verbose_json` and `whisper-1` (or our model names).
    #[serde(rename = "timestamp_granularities[]")]
    #[schema(schema_with = granularities)]
    pub timestamp_granularities: Option<String>,
    /// `false` only: streamed transcriptions are not supported (400).
    pub stream: Option<bool>,
    /// Taken, not needed: long audio is always cut at pauses here.
    pub chunking_strategy: Option<String>,
    /// Taken, not used (named in `X-Mediagen-Ignored`): speakers are
    /// labelled `A`, `B`, … by first speaking.
    #[serde(rename = "known_speaker_names[]")]
    pub known_speaker_names: Option<String>,
    #[serde(rename = "known_speaker_references[]")]
    pub known_speaker_references: Option<String>,
}

/// `POST /v1/audio/translations` (OpenAI's form).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OpenAiTranslationForm)]
pub struct TranslationForm {
    /// Speech in any accepted audio or video container.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// `whisper-1` (our default recogniser) or a multilingual
    /// speech-to-text model of `GET /v1/models`.
    #[schema(min_length = 1)]
    pub model: String,
    /// Words to expect, in English, at most 1000 characters.
    #[schema(max_length = 1000)]
    pub prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json`, `vtt`.
    #[schema(schema_with = translation_formats)]
    pub response_format: Option<String>,
    /// 0–1; taken, not used (see transcriptions).
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub temperature: Option<f64>,
}

fn formats() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&FORMATS)
}

fn translation_formats() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&TRANSLATION_FORMATS)
}

fn granularities() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(mediagen_core::schema::one_of_strings(&["segment", "word"]))
        .max_items(Some(2))
        .build()
}

/// A validated request: our options, and how to answer.
#[derive(Debug, Clone)]
pub struct Transcription {
    pub options: SttOptionsParsed,
    pub task: Task,
    /// OpenAI's `response_format`.
    pub format: &'static str,
    /// `verbose_json` lists segments (unless only words were asked for).
    pub segments: bool,
    /// `verbose_json` lists words.
    pub words: bool,
    /// Parameters taken and ignored, for a header.
    pub ignored: Vec<&'static str>,
}

/// The answer: JSON, or text (`text`, `srt`, `vtt`).
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    Json(Value),
    Text(String),
}

impl Transcription {
    /// Validates a form (its text fields) as OpenAI does, then as
    /// `POST /v1/speech-to-text` does; errors name OpenAI's parameters. A
    /// rule joining two fields (timestamps need `verbose_json`; the gpt-4o
    /// models take json or text only) answers 422, as on every route here
    /// (OpenAI answers 400).
    pub fn parse(
        task: Task,
        fields: &HashMap<String, String>,
        catalog: &dyn Recognisers,
    ) -> Result<Self, ApiError> {
        let form = task.form(fields)?;
        let recognisers = catalog.recognisers();
        let model = form.model.trim();
        let diarizer = task == Task::Transcribe && model == DIARIZE;
        let newer = task == Task::Transcribe && (GPT_TRANSCRIBE.contains(&model) || diarizer);
        let ours = if model == WHISPER || newer {
            None
        } else if recognisers.iter().any(|r| r.name == model) {
            Some(model)
        } else {
            let mut names = vec![WHISPER];
            if task == Task::Transcribe {
                names.extend(GPT_TRANSCRIBE);
                names.push(DIARIZE);
            }
            names.extend(recognisers.iter().map(|r| r.name.as_str()));
            return Err(ApiError::invalid_parameter(
                "model",
                format!("must be one of {}", names.join(", ")),
            ));
        };
        let allowed: &[&str] = match task {
            Task::Transcribe => &FORMATS,
            Task::Translate => &TRANSLATION_FORMATS,
        };
        let format = match form.response_format.as_deref() {
            None => "json",
            Some(f) => allowed.iter().copied().find(|k| *k == f).ok_or_else(|| {
                ApiError::invalid_parameter(
                    "response_format",
                    format!("must be one of {}", allowed.join(", ")),
                )
            })?,
        };
        let diarized = format == "diarized_json";
        if diarized && !diarizer {
            return Err(ApiError::unprocessable(
                "response_format",
                format!("`diarized_json` needs model {DIARIZE}"),
            ));
        }
        if newer && !matches!(format, "json" | "text") && !diarized {
            let also = if diarizer {
                ", text or diarized_json"
            } else {
                " or text"
            };
            return Err(ApiError::unprocessable(
                "response_format",
                format!("`{format}` is not compatible with model `{model}`: use json{also}"),
            ));
        }
        let granularities: Vec<&str> = form
            .timestamp_granularities
            .as_deref()
            .map(|g| g.split(',').map(str::trim).collect())
            .unwrap_or_default();
        if let Some(bad) = granularities
            .iter()
            .find(|g| !matches!(**g, "word" | "segment"))
        {
            return Err(ApiError::invalid_parameter(
                GRANULARITIES,
                format!("`{bad}` is not word or segment"),
            ));
        }
        if !granularities.is_empty() && (newer || format != "verbose_json") {
            return Err(ApiError::unprocessable(
                GRANULARITIES,
                "needs response_format verbose_json and model whisper-1",
            ));
        }
        let words = granularities.contains(&"word");
        let segments = granularities.is_empty() || granularities.contains(&"segment");
        let mut ignored = Vec::new();
        match form.temperature {
            None => {}
            Some(t) if !(0.0..=1.0).contains(&t) => {
                return Err(ApiError::invalid_parameter(
                    "temperature",
                    "must be a number from 0 to 1",
                ))
            }
            Some(t) if t != 0.0 => ignored.push("temperature"),
            Some(_) => {}
        }
        if form.stream == Some(true) {
            return Err(ApiError::invalid_parameter(
                "stream",
                "streamed transcriptions are not supported",
            ));
        }
        if form.known_speaker_names.is_some() {
            ignored.push("known_speaker_names[]");
        }
        if form.known_speaker_references.is_some() {
            ignored.push("known_speaker_references[]");
        }
        let mut ours_fields = HashMap::from([
            ("task".to_owned(), task.as_str().to_owned()),
            (
                "responseFormat".to_owned(),
                match format {
                    _ if words || diarized => "verbose_json",
                    "srt" | "vtt" => format,
                    _ => "json",
                }
                .to_owned(),
            ),
        ]);
        if words {
            ours_fields.insert("timestampGranularities".into(), "segment,word".into());
        }
        if diarized {
            ours_fields.insert("diarize".into(), "true".into());
        }
        if let Some(model) = ours {
            ours_fields.insert("model".into(), model.to_owned());
        }
        for (name, value) in [("language", form.language), ("prompt", form.prompt)] {
            if let Some(v) = value {
                ours_fields.insert(name.to_owned(), v);
            }
        }
        let options =
            SttRequest::parse(&ours_fields, catalog).map_err(|e| openai_names(e, &NAMES))?;
        Ok(Self {
            options,
            task,
            format,
            segments,
            words,
            ignored,
        })
    }

    /// The finished job's `result` (our transcript) as OpenAI answers.
    pub fn render(&self, result: &Value, catalog: &dyn Recognisers) -> Rendered {
        let text = result["text"].as_str().unwrap_or("").to_owned();
        let duration = result["duration"].as_f64().unwrap_or(0.0);
        let usage = json!({"type": "duration", "seconds": duration.ceil() as u64});
        match self.format {
            "text" => Rendered::Text(text + "\n"),
            "srt" | "vtt" => Rendered::Text(result["subtitles"].as_str().unwrap_or("").to_owned()),
            "verbose_json" => {
                let language = match self.task {
                    Task::Translate => "english",
                    Task::Transcribe => result["language"]
                        .as_str()
                        .and_then(|code| catalog.language_name(code))
                        .unwrap_or(""),
                };
                let mut body = json!({
                    "task": self.task.as_str(),
                    "language": language,
                    "duration": duration,
                    "text": text,
                    "usage": usage,
                });
                if self.segments {
                    body["segments"] = segments(&result["segments"]);
                }
                if self.words {
                    body["words"] = words(&result["words"]);
                }
                Rendered::Json(body)
            }
            "diarized_json" => Rendered::Json(json!({
                "task": "transcribe",
                "duration": duration,
                "text": text,
                "segments": diarized_segments(&result["segments"]),
                "usage": usage,
            })),
            _ => Rendered::Json(json!({"text": text, "usage": usage})),
        }
    }
}

/// Our diarized segments as OpenAI's `diarized_json` lists them: speakers
/// `A`, `B`, … (ours `speaker_0`, `speaker_1`, …; past `Z`, `AA`, `AB`, …).
fn diarized_segments(ours: &Value) -> Value {
    let letters = |n: usize| {
        let mut out = Vec::new();
        let mut n = n + 1;
        while n > 0 {
            out.push(b'A' + ((n - 1) % 26) as u8);
            n = (n - 1) / 26;
        }
        out.reverse();
        String::from_utf8(out).unwrap_or_default()
    };
    let list = ours.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .map(|s| {
            let speaker = s["speaker"]
                .as_str()
                .and_then(|w| w.strip_prefix("speaker_"))
                .and_then(|k| k.parse().ok())
                .map_or_else(|| "A".to_owned(), letters);
            json!({
                "type": "transcript.text.segment",
                "id": format!("seg_{}", s["id"].as_u64().unwrap_or(0)),
                "start": s["start"],
                "end": s["end"],
                "text": s["text"],
                "speaker": speaker,
            })
        })
        .collect()
}

/// Our segments as OpenAI's: `seek` is the start in 10 ms frames, and the
/// token ids are not kept (an empty list).
fn segments(ours: &Value) -> Value {
    let list = ours.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .map(|s| {
            let start = s["start"].as_f64().unwrap_or(0.0);
            json!({
                "id": s["id"],
                "seek": (start * 100.0).floor() as u64,
                "start": start,
                "end": s["end"],
                "text": s["text"],
                "tokens": [],
                "temperature": 0.0,
                "avg_logprob": s["avgLogprob"],
                "compression_ratio": s["compressionRatio"],
                "no_speech_prob": s["noSpeechProb"],
            })
        })
        .collect()
}

/// Our words as OpenAI's: word, start and end.
fn words(ours: &Value) -> Value {
    let list = ours.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .map(|w| json!({"word": w["word"], "start": w["start"], "end": w["end"]}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript() -> Value {
        json!({
            "text": "Hello there.", "language": "en", "duration": 1.25,
            "segments": [{"id": 0, "start": 0.31, "end": 1.2, "text": "Hello there.",
                          "avgLogprob": -0.2, "noSpeechProb": 0.01, "compressionRatio": 0.8}],
            "words": [{"word": "Hello", "start": 0.31, "end": 0.6, "probability": 0.9}],
            "subtitles": "1\n00:00:00,310 --> 00:00:01,200\nHello there.\n",
        })
    }

    #[test]
    fn diarized_segments_name_speakers_by_letters() {
        let ours = json!([
            {"id": 0, "start": 0.5, "end": 1.0, "text": "Hi.", "speaker": "speaker_0"},
            {"id": 1, "start": 1.2, "end": 2.0, "text": "Hello.", "speaker": "speaker_1"},
            {"id": 2, "start": 2.1, "end": 2.5, "text": "Yes.", "speaker": "speaker_27"},
        ]);
        let s = diarized_segments(&ours);
        let who: Vec<&str> = s
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["speaker"].as_str().unwrap())
            .collect();
        assert_eq!(who, ["A", "B", "AB"]);
        assert_eq!(s[1]["type"], "transcript.text.segment");
        assert_eq!(s[1]["id"], "seg_1");
        assert_eq!(s[1]["start"], 1.2);
    }

    #[test]
    fn segments_and_words_take_openais_names() {
        let s = segments(&transcript()["segments"]);
        assert_eq!(s[0]["seek"], 31);
        assert_eq!(s[0]["avg_logprob"], -0.2);
        assert_eq!(s[0]["compression_ratio"], 0.8);
        assert_eq!(s[0]["tokens"], json!([]));
        let w = words(&transcript()["words"]);
        assert_eq!(w, json!([{"word": "Hello", "start": 0.31, "end": 0.6}]));
    }
}
