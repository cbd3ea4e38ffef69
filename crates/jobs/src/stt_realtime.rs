//! A live transcription session (`GET /v1/speech-to-text/realtime`, a
//! WebSocket; also the `stt.realtime` job's payload): its settings, read
//! from the upgrade's query string.

use std::collections::HashMap;

use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::stt::{recogniser, spoken_language, vocabulary};
use crate::Catalog;

/// Sample rates the session takes its 16-bit PCM at.
pub const SAMPLE_RATES: [u32; 6] = [8000, 16000, 22050, 24000, 44100, 48000];
/// Seconds of sound held at the upgrade, and how far ahead of the sound
/// received the hold is kept.
pub const HOLD_AHEAD: f64 = 30.0;

/// The query of `GET /v1/speech-to-text/realtime`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LiveSttQuery {
    /// A recogniser of `GET /v1/models`; default: the server's first.
    pub model: Option<String>,
    /// ISO 639-1, or `auto` (each turn's language detected).
    pub language: Option<String>,
    /// The rate of the 16-bit little-endian mono PCM in the binary frames:
    /// 8000, 16000 (default), 22050, 24000, 44100 or 48000.
    #[param(schema_with = rates)]
    pub sample_rate: Option<u32>,
    /// `vad` (default): a turn is committed after `silenceMs` of silence;
    /// `manual`: only when the client sends `{"type":"commit"}`.
    #[param(schema_with = commits)]
    pub commit: Option<String>,
    /// Silence that ends a turn under `vad`, 200–5000 ms (default 700).
    #[param(minimum = 200, maximum = 5000)]
    pub silence_ms: Option<u32>,
    /// Words to expect (names, terms), at most 1000 characters.
    #[param(max_length = 1000)]
    pub prompt: Option<String>,
    /// `true` (default): word times on committed text.
    pub words: Option<bool>,
}

fn rates() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .enum_values(Some(SAMPLE_RATES))
        .build()
}

fn commits() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["vad", "manual"])
}

/// How a turn ends.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CommitMode {
    Vad,
    Manual,
}

/// A validated session (also its job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LiveSttRequest {
    pub model: String,
    /// ISO 639-1, or `None` to detect each turn's.
    pub language: Option<String>,
    pub sample_rate: u32,
    pub commit: CommitMode,
    pub silence_ms: u32,
    pub prompt: Option<String>,
    pub words: bool,
    /// Seconds without a frame after which the session closes.
    pub idle_seconds: f64,
}

impl LiveSttRequest {
    /// Reads the query's fields (as strings) into their types and checks
    /// what the published schema states of each (the rates, the modes,
    /// the silence's range, the prompt's length); errors name the
    /// parameter.
    pub fn query(fields: &HashMap<String, String>) -> Result<LiveSttQuery, ApiError> {
        let mut q: LiveSttQuery = mediagen_core::form::from_fields(fields)?;
        if q.sample_rate.is_some_and(|r| !SAMPLE_RATES.contains(&r)) {
            let rates: Vec<String> = SAMPLE_RATES.iter().map(u32::to_string).collect();
            return Err(ApiError::invalid_parameter(
                "sampleRate",
                format!("must be one of {}", rates.join(", ")),
            ));
        }
        if q.commit
            .as_deref()
            .is_some_and(|c| c != "vad" && c != "manual")
        {
            return Err(ApiError::invalid_parameter(
                "commit",
                "must be vad or manual",
            ));
        }
        if q.silence_ms.is_some_and(|ms| !(200..=5000).contains(&ms)) {
            return Err(ApiError::invalid_parameter(
                "silenceMs",
                "must be from 200 to 5000",
            ));
        }
        q.prompt = vocabulary(q.prompt)?;
        Ok(q)
    }

    /// The session `q` asks for, checked against what is installed (the
    /// recogniser, its languages); errors name the parameter.
    pub fn parse(
        q: LiveSttQuery,
        catalog: &dyn Catalog,
        idle_seconds: f64,
    ) -> Result<Self, ApiError> {
        let model = recogniser(catalog, q.model.as_deref())?;
        let language = spoken_language(catalog, &model, q.language)?;
        let commit = match q.commit.as_deref() {
            Some("manual") => CommitMode::Manual,
            _ => CommitMode::Vad,
        };
        Ok(Self {
            model: model.name,
            language,
            sample_rate: q.sample_rate.unwrap_or(16_000),
            commit,
            silence_ms: q.silence_ms.unwrap_or(700),
            prompt: q.prompt,
            words: q.words.unwrap_or(true),
            idle_seconds,
        })
    }
}

impl mediagen_core::JobRequest for LiveSttRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::SttRealtime;

    /// The first hold: [`HOLD_AHEAD`] seconds (raised as sound arrives,
    /// settled on what arrived).
    fn units(&self) -> f64 {
        HOLD_AHEAD
    }

    fn media_seconds(&self) -> f64 {
        0.0
    }
}
