//! A live transcription session (`GET /v1/speech-to-text/realtime`, a
//! WebSocket; also the `stt.realtime` job's payload): its settings, read
//! from the upgrade's query string.

use std::collections::HashMap;

use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::catalog::Recognisers;
use crate::stt::{recogniser, spoken_language, vocabulary};

/// Sample rates the session takes its 16-bit PCM at.
pub const SAMPLE_RATES: [u32; 6] = [8000, 16000, 22050, 24000, 44100, 48000];
/// Seconds of sound held at the upgrade, and how far ahead of the sound
/// received the hold is kept.
pub const HOLD_AHEAD: f64 = 30.0;

/// WebSocket close codes of a session (docs/api.md, Live transcription).
pub mod close {
    pub const NORMAL: u16 = 1000;
    pub const BAD_MESSAGE: u16 = 1008;
    pub const INTERNAL: u16 = 1011;
    /// The session's worker went away: reconnect.
    pub const WORKER_GONE: u16 = 1012;
    pub const OVERLOADED: u16 = 1013;
    pub const NO_CREDITS: u16 = 4402;
    pub const TIMED_OUT: u16 = 4408;
}

/// A frame of a live session as the relay carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// Audio: 16-bit little-endian mono PCM at the session's rate.
    Binary(Vec<u8>),
    /// A JSON message.
    Text(String),
}

/// The largest binary frame a session takes (bytes: 1 s of 48 kHz audio).
pub const MAX_FRAME_BYTES: usize = 96_000;

/// 16-bit PCM a dialect decoded, as the session's binary frames (each
/// within [`MAX_FRAME_BYTES`]).
pub fn pcm_frames(pcm: &[u8]) -> Vec<Frame> {
    pcm.chunks(MAX_FRAME_BYTES)
        .map(|c| Frame::Binary(c.to_vec()))
        .collect()
}

/// A session's end: its WebSocket close code and reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Closing {
    pub code: u16,
    pub reason: String,
}

impl Closing {
    pub fn bad_message(reason: impl Into<String>) -> Self {
        Self {
            code: close::BAD_MESSAGE,
            reason: reason.into(),
        }
    }
}

/// What one client frame comes to: native frames for the session, and
/// messages answered to the client at once (a dialect's acknowledgements
/// and refusals that do not end the session).
#[derive(Debug, Default, PartialEq)]
pub struct Relay {
    pub session: Vec<Frame>,
    pub client: Vec<String>,
}

impl Relay {
    pub fn to_session(frames: Vec<Frame>) -> Self {
        Self {
            session: frames,
            client: Vec::new(),
        }
    }
}

/// A session protocol (a dialect's, or the native one) read as the native
/// one. The relay passes every client frame through [`Dialect::client`]
/// on its way to the session, every native event through
/// [`Dialect::event`] on its way back, and the session's end through
/// [`Dialect::closing`].
pub trait Dialect: Send {
    /// What `frame` of the client comes to, or the close that refuses it.
    fn client(&mut self, frame: Frame) -> Result<Relay, Closing>;
    /// The client's messages for one native event (a JSON text).
    fn event(&mut self, event: &str) -> Vec<String>;
    /// The client's frames for sound the session sent (binary).
    fn audio(&mut self, bytes: Vec<u8>) -> Vec<Frame> {
        vec![Frame::Binary(bytes)]
    }
    /// The message that says why the session ends, sent before the close,
    /// where the dialect has one.
    fn closing(&mut self, _end: &Closing) -> Option<String> {
        None
    }
}

/// The native protocol: frames pass unchanged.
pub struct Native;

impl Dialect for Native {
    fn client(&mut self, frame: Frame) -> Result<Relay, Closing> {
        Ok(Relay::to_session(vec![frame]))
    }

    fn event(&mut self, event: &str) -> Vec<String> {
        vec![event.to_owned()]
    }
}

/// One G.711 μ-law byte as a 16-bit sample.
pub fn ulaw_sample(byte: u8) -> i16 {
    let u = !byte;
    let exponent = (u >> 4) & 0x07;
    let magnitude = ((i16::from(u & 0x0f) << 3) + 0x84) << exponent;
    let sample = magnitude - 0x84;
    if u & 0x80 != 0 {
        -sample
    } else {
        sample
    }
}

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
    /// A single-use token (`POST /v1/tokens`) in place of the key, for
    /// browsers.
    pub token: Option<String>,
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
        catalog: &dyn Recognisers,
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

/// A change to a running session (`{"type":"update", ...}`): only the
/// members sent change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionUpdate {
    pub commit: Option<CommitMode>,
    pub silence_ms: Option<u32>,
    /// `Some(None)`: detect each turn's language from now on.
    pub language: Option<Option<String>>,
    /// `Some(None)`: no words to expect from now on.
    pub prompt: Option<Option<String>>,
}

impl SessionUpdate {
    /// Reads an `update` message for a session on a recogniser that knows
    /// `languages` (`multilingual`, or English only); errors name the
    /// member.
    pub fn parse(
        message: &serde_json::Value,
        languages: &[&str],
        multilingual: bool,
    ) -> Result<Self, ApiError> {
        let mut update = Self::default();
        let Some(members) = message.as_object() else {
            return Err(ApiError::invalid_parameter(
                "type",
                "an update is a JSON object",
            ));
        };
        for (name, value) in members {
            match name.as_str() {
                "type" => {}
                "commit" => {
                    update.commit = Some(match value.as_str() {
                        Some("vad") => CommitMode::Vad,
                        Some("manual") => CommitMode::Manual,
                        _ => {
                            return Err(ApiError::invalid_parameter(
                                "commit",
                                "must be vad or manual",
                            ))
                        }
                    })
                }
                "silenceMs" => {
                    let ms = value
                        .as_u64()
                        .filter(|ms| (200..=5000).contains(ms))
                        .ok_or_else(|| {
                            ApiError::invalid_parameter("silenceMs", "must be from 200 to 5000")
                        })?;
                    update.silence_ms = Some(ms as u32);
                }
                "language" => {
                    let language = match value.as_str().map(|l| l.trim().to_ascii_lowercase()) {
                        None if value.is_null() => None,
                        Some(l) if l.is_empty() || l == "auto" => None,
                        Some(l)
                            if languages.contains(&l.as_str()) && (multilingual || l == "en") =>
                        {
                            Some(l)
                        }
                        _ => return Err(ApiError::invalid_parameter(
                            "language",
                            "must be a language of the session's recogniser (ISO 639-1), or auto",
                        )),
                    };
                    update.language = Some(language);
                }
                "prompt" => {
                    let prompt = match value {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(p) => vocabulary(Some(p.clone()))?,
                        _ => return Err(ApiError::invalid_parameter("prompt", "must be a string")),
                    };
                    update.prompt = Some(prompt);
                }
                other => {
                    return Err(ApiError::invalid_parameter(
                        other,
                        "is not a setting of a session (commit, silenceMs, language, prompt)",
                    ))
                }
            }
        }
        Ok(update)
    }

    /// `request` with the update applied.
    pub fn apply(&self, request: &mut LiveSttRequest) {
        if let Some(c) = self.commit {
            request.commit = c;
        }
        if let Some(ms) = self.silence_ms {
            request.silence_ms = ms;
        }
        if let Some(l) = &self.language {
            request.language = l.clone();
        }
        if let Some(p) = &self.prompt {
            request.prompt = p.clone();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_change_only_what_they_name() {
        let langs = ["en", "fr"];
        let u = SessionUpdate::parse(
            &json!({"type": "update", "commit": "manual", "language": "FR"}),
            &langs,
            true,
        )
        .unwrap();
        assert_eq!(u.commit, Some(CommitMode::Manual));
        assert_eq!(u.language, Some(Some("fr".into())));
        assert_eq!(u.silence_ms, None);
        let auto = SessionUpdate::parse(&json!({"language": null}), &langs, true).unwrap();
        assert_eq!(auto.language, Some(None));
        for (bad, param) in [
            (json!({"commit": "often"}), "commit"),
            (json!({"silenceMs": 100}), "silenceMs"),
            (json!({"language": "xx"}), "language"),
            (json!({"prompt": 3}), "prompt"),
            (json!({"prompt": "a".repeat(1001)}), "prompt"),
            (json!({"speed": 2}), "speed"),
        ] {
            let e = SessionUpdate::parse(&bad, &langs, true).unwrap_err();
            assert_eq!(e.details["parameter"], param, "{bad}");
        }
        // An English-only recogniser takes English only.
        assert!(SessionUpdate::parse(&json!({"language": "fr"}), &langs, false).is_err());
    }
}
