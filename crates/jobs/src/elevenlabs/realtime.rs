//! ElevenLabs' realtime speech-to-text (`GET
//! /elevenlabs/v1/speech-to-text/realtime`, the `elevenlabs` SDK's
//! `speech_to_text.realtime.connect`) read as our live session: its query
//! as our session's settings, its `input_audio_chunk` messages (base64 PCM
//! or μ-law, `commit`) as our frames, our events as its
//! `session_started`, `partial_transcript`, `committed_transcript` (and
//! `committed_transcript_with_timestamps`), and our closes as its error
//! messages.

use std::collections::HashMap;

use base64::Engine as _;
use mediagen_core::ApiError;
use serde_json::{json, Value};

use crate::catalog::Recognisers;
use crate::openai::openai_names;
use crate::stt_realtime::{
    close, pcm_frames, ulaw_sample, Closing, Dialect, Frame, LiveSttRequest, Relay,
};

/// ElevenLabs' default silence that ends a turn under `vad`, in seconds.
const DEFAULT_SILENCE: f64 = 1.5;
/// Its bounds on `keyterms`: how many, and how long each.
const MAX_KEYTERMS: usize = 50;
const MAX_KEYTERM_CHARS: usize = 20;
/// The query parameters that are ours to use; the rest are ElevenLabs'
/// features, taken and ignored.
const USED: [&str; 8] = [
    "model_id",
    "audio_format",
    "commit_strategy",
    "vad_silence_threshold_secs",
    "language_code",
    "include_timestamps",
    "keyterms",
    "token",
];
/// Our query's names and ElevenLabs' for them.
const NAMES: [(&str, &str); 6] = [
    ("model", "model_id"),
    ("language", "language_code"),
    ("sampleRate", "audio_format"),
    ("commit", "commit_strategy"),
    ("silenceMs", "vad_silence_threshold_secs"),
    ("prompt", "keyterms"),
];

/// A session asked for in ElevenLabs' terms: ours, and how to speak to
/// its client.
pub struct ScribeSession {
    pub request: LiveSttRequest,
    pub dialect: Scribe,
    /// The query parameters taken and not used.
    pub ignored: Vec<String>,
}

impl ScribeSession {
    /// Reads the upgrade's query (`pairs`, repeated names kept) against
    /// what is installed; errors name ElevenLabs' parameters.
    pub fn parse(
        pairs: &[(String, String)],
        catalog: &dyn Recognisers,
        idle_seconds: f64,
    ) -> Result<Self, ApiError> {
        let one = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim());
        let model_id = one("model_id").unwrap_or("");
        let recognisers = catalog.recognisers();
        let ours = recognisers.iter().any(|r| r.name == model_id);
        if !ours && !model_id.starts_with("scribe") {
            return Err(ApiError::invalid_parameter(
                "model_id",
                "must be scribe_v2_realtime or a speech-to-text model of GET /v1/models",
            ));
        }
        let audio_format = one("audio_format").unwrap_or("pcm_16000");
        let (ulaw, rate) = match audio_format.split_once('_') {
            Some(("ulaw", "8000")) => (true, 8000),
            Some(("pcm", rate)) => (false, rate.parse::<u32>().unwrap_or(0)),
            _ => (false, 0),
        };
        let commit = one("commit_strategy").unwrap_or("manual");
        let silence = match one("vad_silence_threshold_secs") {
            None => DEFAULT_SILENCE,
            Some(s) => s
                .parse::<f64>()
                .ok()
                .filter(|s| (0.3..=3.0).contains(s))
                .ok_or_else(|| {
                    ApiError::invalid_parameter(
                        "vad_silence_threshold_secs",
                        "must be a number from 0.3 to 3.0",
                    )
                })?,
        };
        let timestamps = match one("include_timestamps") {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "include_timestamps",
                    "must be true or false",
                ))
            }
        };
        let keyterms: Vec<&str> = pairs
            .iter()
            .filter(|(n, _)| n == "keyterms")
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
            .collect();
        if keyterms.len() > MAX_KEYTERMS
            || keyterms
                .iter()
                .any(|k| k.chars().count() > MAX_KEYTERM_CHARS)
        {
            return Err(ApiError::invalid_parameter(
                "keyterms",
                format!("at most {MAX_KEYTERMS} terms of at most {MAX_KEYTERM_CHARS} characters"),
            ));
        }
        let mut fields = HashMap::from([
            ("sampleRate".to_owned(), rate.to_string()),
            ("commit".to_owned(), commit.to_owned()),
            (
                "silenceMs".to_owned(),
                ((silence * 1000.0).round() as u32).to_string(),
            ),
            ("words".to_owned(), timestamps.to_string()),
        ]);
        if ours {
            fields.insert("model".into(), model_id.to_owned());
        }
        if let Some(language) = one("language_code").filter(|l| !l.is_empty()) {
            fields.insert("language".into(), language.to_owned());
        }
        if !keyterms.is_empty() {
            fields.insert("prompt".into(), keyterms.join(", "));
        }
        let named = |e| openai_names(e, &NAMES);
        let query = LiveSttRequest::query(&fields).map_err(named)?;
        let request = LiveSttRequest::parse(query, catalog, idle_seconds).map_err(named)?;
        let mut ignored: Vec<String> = pairs
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !USED.contains(&n.as_str()))
            .collect();
        ignored.sort();
        ignored.dedup();
        Ok(Self {
            dialect: Scribe {
                ulaw,
                timestamps,
                config: json!({
                    "sample_rate": request.sample_rate,
                    "audio_format": audio_format,
                    "language_code": request.language,
                    "commit_strategy": commit,
                    "vad_silence_threshold_secs": silence,
                    "model_id": model_id,
                    "include_timestamps": timestamps,
                    "keyterms": keyterms,
                }),
            },
            request,
            ignored,
        })
    }
}

/// ElevenLabs' realtime messages on our session.
pub struct Scribe {
    /// Audio comes as 8-kHz μ-law, not 16-bit PCM.
    ulaw: bool,
    /// Committed text is followed by its word times.
    timestamps: bool,
    /// `session_started`'s `config`.
    config: Value,
}

impl Dialect for Scribe {
    fn client(&mut self, frame: Frame) -> Result<Relay, Closing> {
        let Frame::Text(text) = frame else {
            return Err(Closing::bad_message(
                "Audio comes in input_audio_chunk messages, base64 in audio_base_64.",
            ));
        };
        let message: Value = serde_json::from_str(&text)
            .map_err(|_| Closing::bad_message("A message is a JSON object."))?;
        if message.get("message_type").and_then(Value::as_str) != Some("input_audio_chunk") {
            return Err(Closing::bad_message(
                "The only message taken is input_audio_chunk.",
            ));
        }
        let rate = self.config["sample_rate"].as_u64();
        if let Some(r) = message.get("sample_rate").and_then(Value::as_u64) {
            if Some(r) != rate {
                return Err(Closing::bad_message(
                    "sample_rate differs from the session's audio_format.",
                ));
            }
        }
        let encoded = message
            .get("audio_base_64")
            .and_then(Value::as_str)
            .unwrap_or("");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| Closing::bad_message("audio_base_64 is not base64."))?;
        let pcm: Vec<u8> = if self.ulaw {
            bytes
                .iter()
                .flat_map(|&b| ulaw_sample(b).to_le_bytes())
                .collect()
        } else {
            bytes
        };
        let mut frames = pcm_frames(&pcm);
        if message.get("commit").and_then(Value::as_bool) == Some(true) {
            frames.push(Frame::Text(json!({"type": "commit"}).to_string()));
        }
        Ok(Relay::to_session(frames))
    }

    fn event(&mut self, event: &str) -> Vec<String> {
        let Ok(e) = serde_json::from_str::<Value>(event) else {
            return Vec::new();
        };
        let text = e["text"].as_str().unwrap_or("");
        let messages = match e["type"].as_str().unwrap_or("") {
            "session.started" => vec![json!({
                "message_type": "session_started",
                "session_id": e["sessionId"],
                "config": self.config,
            })],
            "transcript.partial" => {
                vec![json!({"message_type": "partial_transcript", "text": text})]
            }
            "transcript.committed" => {
                let mut out = vec![json!({"message_type": "committed_transcript", "text": text})];
                if self.timestamps {
                    out.push(json!({
                        "message_type": "committed_transcript_with_timestamps",
                        "text": text,
                        "language_code": e["language"],
                        "words": words(&e["words"]),
                    }));
                }
                out
            }
            _ => Vec::new(),
        };
        messages.iter().map(Value::to_string).collect()
    }

    fn closing(&mut self, end: &Closing) -> Option<String> {
        let kind = match end.code {
            close::NORMAL => return None,
            close::BAD_MESSAGE => "input_error",
            close::OVERLOADED => "queue_overflow",
            close::NO_CREDITS => "quota_exceeded",
            close::TIMED_OUT => "session_time_limit_exceeded",
            close::INTERNAL => "transcriber_error",
            _ => "error",
        };
        Some(json!({"message_type": kind, "error": end.reason}).to_string())
    }
}

/// Our word times as ElevenLabs' words: each word (`logprob` from its
/// probability) and the spacing between two.
fn words(ours: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut last_end: Option<f64> = None;
    for w in ours.as_array().into_iter().flatten() {
        let start = w["start"].as_f64().unwrap_or(0.0);
        let end = w["end"].as_f64().unwrap_or(start);
        if let Some(previous) = last_end {
            out.push(json!({"text": " ", "start": previous, "end": start.max(previous), "type": "spacing"}));
        }
        let p = w["probability"].as_f64().unwrap_or(1.0).clamp(1e-6, 1.0);
        out.push(json!({
            "text": w["word"].as_str().unwrap_or("").trim(),
            "start": start,
            "end": end,
            "type": "word",
            "logprob": p.ln(),
        }));
        last_end = Some(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scribe(ulaw: bool, timestamps: bool) -> Scribe {
        Scribe {
            ulaw,
            timestamps,
            config: json!({"sample_rate": if ulaw { 8000 } else { 16000 }}),
        }
    }

    #[test]
    fn ulaw_decodes_to_its_standard_levels() {
        assert_eq!(ulaw_sample(0xff), 0);
        assert_eq!(ulaw_sample(0x7f), 0);
        assert_eq!(ulaw_sample(0x00), -32124);
        assert_eq!(ulaw_sample(0x80), 32124);
    }

    #[test]
    fn audio_chunks_become_pcm_frames_and_commits() {
        let mut s = scribe(false, false);
        let chunk = base64::engine::general_purpose::STANDARD.encode([1u8, 0, 2, 0]);
        let frames = s
            .client(Frame::Text(
                json!({"message_type": "input_audio_chunk", "audio_base_64": chunk,
                       "commit": true, "sample_rate": 16000, "previous_text": null})
                .to_string(),
            ))
            .unwrap()
            .session;
        assert_eq!(
            frames,
            vec![
                Frame::Binary(vec![1, 0, 2, 0]),
                Frame::Text(r#"{"type":"commit"}"#.into())
            ]
        );
        let mut u = scribe(true, false);
        let chunk = base64::engine::general_purpose::STANDARD.encode([0x80u8]);
        let frames = u
            .client(Frame::Text(
                json!({"message_type": "input_audio_chunk", "audio_base_64": chunk}).to_string(),
            ))
            .unwrap()
            .session;
        assert_eq!(frames, vec![Frame::Binary(32124i16.to_le_bytes().to_vec())]);
    }

    #[test]
    fn other_messages_and_rates_are_refused() {
        let mut s = scribe(false, false);
        for bad in [
            Frame::Binary(vec![0, 0]),
            Frame::Text("not json".into()),
            Frame::Text(json!({"message_type": "other"}).to_string()),
            Frame::Text(
                json!({"message_type": "input_audio_chunk", "audio_base_64": "", "sample_rate": 8000})
                    .to_string(),
            ),
            Frame::Text(
                json!({"message_type": "input_audio_chunk", "audio_base_64": "%%%"}).to_string(),
            ),
        ] {
            assert_eq!(s.client(bad).unwrap_err().code, close::BAD_MESSAGE);
        }
        let refused = s.closing(&Closing::bad_message("why")).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&refused).unwrap(),
            json!({"message_type": "input_error", "error": "why"})
        );
        let credits = Closing {
            code: close::NO_CREDITS,
            reason: "out".into(),
        };
        assert!(s.closing(&credits).unwrap().contains("quota_exceeded"));
        let normal = Closing {
            code: close::NORMAL,
            reason: String::new(),
        };
        assert!(s.closing(&normal).is_none());
    }

    #[test]
    fn committed_text_comes_with_its_words_when_asked() {
        let event = json!({"type": "transcript.committed", "text": "Hello there", "language": "en",
            "words": [{"word": " Hello", "start": 1.0, "end": 1.4, "probability": 0.9},
                      {"word": " there", "start": 1.5, "end": 1.9, "probability": 1.0}]})
        .to_string();
        let plain = scribe(false, false).event(&event);
        assert_eq!(plain.len(), 1);
        assert!(plain[0].contains(r#""message_type":"committed_transcript""#));
        let timed = scribe(false, true).event(&event);
        let v: Value = serde_json::from_str(&timed[1]).unwrap();
        assert_eq!(v["message_type"], "committed_transcript_with_timestamps");
        assert_eq!(v["language_code"], "en");
        let words = v["words"].as_array().unwrap();
        assert_eq!(words.len(), 3);
        assert_eq!(words[0]["text"], "Hello");
        assert_eq!(words[1]["type"], "spacing");
        assert_eq!(words[1]["start"], 1.4);
        assert_eq!(words[2]["logprob"], 0.0);
        assert!(scribe(false, true)
            .event(r#"{"type":"session.ended","seconds":3}"#)
            .is_empty());
    }
}
