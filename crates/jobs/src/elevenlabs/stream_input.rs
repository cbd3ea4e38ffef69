//! ElevenLabs' text-to-speech from streamed input (`GET
//! /elevenlabs/v1/text-to-speech/{voice_id}/stream-input`, the
//! `elevenlabs` SDK's `text_to_speech.convert_realtime`) read as our live
//! speech session: its query as our session's voice and output, its text
//! messages (`{"text": " "}` to begin, text pieces, `flush`, `{"text": ""}`
//! to end) as ours, and our sound as its `{audio, alignment, isFinal}`
//! messages.

use std::collections::HashMap;

use base64::Engine as _;
use mediagen_core::{ApiError, Capability};
use serde_json::{json, Value};

use super::{check_model, output_format, premade_voice};
use crate::stt_realtime::{close, Closing, Dialect, Frame, Relay};
use crate::tts_realtime::LiveTtsQuery;
use crate::Catalog;

/// The query parameters that are ours to use; the rest are ElevenLabs'
/// features, taken and ignored.
const USED: [&str; 5] = [
    "model_id",
    "output_format",
    "inactivity_timeout",
    "language_code",
    "token",
];

/// A session asked for in ElevenLabs' terms: our query, the idle timeout
/// (`inactivity_timeout`, 1–180 s, else the server's), and the names
/// taken and not used.
pub struct StreamInputQuery {
    pub query: LiveTtsQuery,
    pub idle_seconds: Option<f64>,
    pub ignored: Vec<String>,
}

impl StreamInputQuery {
    /// Reads the upgrade's query for `voice_id` (ours, or a premade id of
    /// ElevenLabs'); errors name ElevenLabs' parameters.
    pub fn parse(
        voice_id: &str,
        fields: &HashMap<String, String>,
        catalog: &Catalog,
    ) -> Result<Self, ApiError> {
        check_model(
            fields.get("model_id").map(String::as_str),
            Capability::TextToSpeech,
            catalog.models.as_ref(),
        )?;
        let (format, rate) = output_format(fields.get("output_format").map(String::as_str))?;
        if !matches!(format, "pcm" | "mp3" | "ogg") {
            return Err(ApiError::invalid_parameter(
                "output_format",
                "a stream is mp3_*, pcm_* or opus_*",
            ));
        }
        let idle_seconds = match fields.get("inactivity_timeout") {
            None => None,
            Some(t) => Some(
                t.parse::<f64>()
                    .ok()
                    .filter(|t| (1.0..=180.0).contains(t))
                    .ok_or_else(|| {
                        ApiError::invalid_parameter(
                            "inactivity_timeout",
                            "must be 1 to 180 seconds",
                        )
                    })?,
            ),
        };
        let voice_id = premade_voice(catalog.voices.as_ref(), voice_id)
            .map(|v| v.id.clone())
            .unwrap_or_else(|| voice_id.to_owned());
        let mut ignored: Vec<String> = fields
            .keys()
            .filter(|k| !USED.contains(&k.as_str()))
            .cloned()
            .collect();
        ignored.sort();
        Ok(Self {
            query: LiveTtsQuery {
                voice_id,
                format: Some(format.to_owned()),
                sample_rate: Some(rate),
                speed: None,
                language_code: fields.get("language_code").cloned(),
                token: None,
            },
            idle_seconds,
            ignored,
        })
    }
}

/// ElevenLabs' stream-input messages on our session.
#[derive(Default)]
pub struct StreamInput {
    /// The character times of the piece whose sound comes next (sent with
    /// its first audio).
    alignment: Option<Value>,
}

impl Dialect for StreamInput {
    fn client(&mut self, frame: Frame) -> Result<Relay, Closing> {
        let Frame::Text(text) = frame else {
            return Err(Closing::bad_message("Messages are JSON: {\"text\": …}."));
        };
        let message: Value = serde_json::from_str(&text)
            .map_err(|_| Closing::bad_message("A message is a JSON object with `text`."))?;
        let Some(text) = message.get("text").and_then(Value::as_str) else {
            return Err(Closing::bad_message("A message has `text`."));
        };
        let native = |v: Value| Frame::Text(v.to_string());
        if text.is_empty() {
            return Ok(Relay::to_session(vec![native(json!({"type": "finish"}))]));
        }
        let flush = message
            .get("flush")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Relay::to_session(vec![native(
            json!({"type": "text", "text": text, "flush": flush}),
        )]))
    }

    fn event(&mut self, event: &str) -> Vec<String> {
        let Ok(e) = serde_json::from_str::<Value>(event) else {
            return Vec::new();
        };
        match e["type"].as_str().unwrap_or("") {
            "audio" => {
                self.alignment = Some(e["alignment"].clone());
                Vec::new()
            }
            "session.ended" => vec![json!({"isFinal": true}).to_string()],
            _ => Vec::new(),
        }
    }

    fn audio(&mut self, bytes: Vec<u8>) -> Vec<Frame> {
        let alignment = self.alignment.take().unwrap_or(Value::Null);
        vec![Frame::Text(
            json!({
                "audio": base64::engine::general_purpose::STANDARD.encode(bytes),
                "isFinal": false,
                "normalizedAlignment": alignment,
                "alignment": alignment,
            })
            .to_string(),
        )]
    }

    fn closing(&mut self, end: &Closing) -> Option<String> {
        if end.code == close::NORMAL {
            return None;
        }
        let kind = match end.code {
            close::NO_CREDITS => "quota_exceeded",
            close::TIMED_OUT => "input_timeout_exceeded",
            close::BAD_MESSAGE => "invalid_message",
            _ => "internal_error",
        };
        Some(json!({"message": end.reason, "error": kind, "code": end.code}).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_messages_become_ours() {
        let mut s = StreamInput::default();
        let ours = |r: Relay| match &r.session[..] {
            [Frame::Text(t)] => serde_json::from_str::<Value>(t).unwrap(),
            other => panic!("{other:?}"),
        };
        let begin = s.client(Frame::Text(
            json!({"text": " ", "voice_settings": null}).to_string(),
        ));
        assert_eq!(
            ours(begin.unwrap()),
            json!({"type": "text", "text": " ", "flush": false})
        );
        let piece = s.client(Frame::Text(
            json!({"text": "Hello. ", "flush": true}).to_string(),
        ));
        assert_eq!(
            ours(piece.unwrap()),
            json!({"type": "text", "text": "Hello. ", "flush": true})
        );
        let end = s.client(Frame::Text(json!({"text": ""}).to_string()));
        assert_eq!(ours(end.unwrap()), json!({"type": "finish"}));
        assert!(s.client(Frame::Binary(vec![1])).is_err());
        assert!(s.client(Frame::Text("{}".into())).is_err());
    }

    #[test]
    fn sound_carries_its_piece_alignment_once() {
        let mut s = StreamInput::default();
        s.event(r#"{"type":"audio","alignment":{"chars":["H","i"],"charStartTimesMs":[0,100],"charDurationsMs":[100,100]}}"#);
        let first = match &s.audio(vec![1, 2])[..] {
            [Frame::Text(t)] => serde_json::from_str::<Value>(t).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(first["audio"], "AQI=");
        assert_eq!(first["alignment"]["chars"], json!(["H", "i"]));
        let second = match &s.audio(vec![3])[..] {
            [Frame::Text(t)] => serde_json::from_str::<Value>(t).unwrap(),
            other => panic!("{other:?}"),
        };
        assert!(second["alignment"].is_null());
        assert_eq!(
            s.event(r#"{"type":"session.ended"}"#),
            vec![r#"{"isFinal":true}"#]
        );
    }
}
