//! OpenAI's realtime transcription session (`GET
//! /v1/realtime?intent=transcription`, the `openai` SDK's
//! `client.realtime.connect(extra_query={"intent": "transcription"})`)
//! read as our live session: `session.update` (or the beta
//! `transcription_session.update`) as our `update`,
//! `input_audio_buffer.append`/`commit`/`clear` as our frames, our events
//! as `session.created`/`updated`, `input_audio_buffer.speech_started`/
//! `speech_stopped`/`committed`/`cleared` and
//! `conversation.item.input_audio_transcription.delta`/`completed`.
//!
//! A delta is only ever what the stable part of a partial adds (a delta
//! cannot be taken back); `completed` carries the turn's whole text.

use std::collections::HashMap;

use base64::Engine as _;
use mediagen_core::ApiError;
use serde_json::{json, Value};

use crate::catalog::Recognisers;
use crate::stt_realtime::{
    close, pcm_frames, ulaw_sample, Closing, Dialect, Frame, LiveSttRequest, Relay,
};

/// OpenAI's PCM rate, the only one `audio/pcm` takes.
const RATE: u32 = 24_000;
/// OpenAI's `server_vad` silence before a turn ends, by default.
const DEFAULT_SILENCE_MS: u32 = 500;

/// The query of `GET /v1/realtime`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RealtimeQuery {
    /// `transcription`: only transcription sessions are served.
    #[param(inline)]
    pub intent: Intent,
    /// Taken and not used (our recogniser decides).
    pub model: Option<String>,
    /// A single-use token (`POST /v1/tokens`) in place of the key.
    pub token: Option<String>,
}

/// The sessions served.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    Transcription,
}

/// A transcription session asked for in OpenAI's terms.
pub struct TranscriptionSession {
    pub request: LiveSttRequest,
    pub dialect: Realtime,
}

impl TranscriptionSession {
    /// Reads the upgrade's query: `intent=transcription` is required
    /// (conversations with a model are not served); `model` is taken and
    /// not used.
    pub fn parse(
        fields: &HashMap<String, String>,
        catalog: &dyn Recognisers,
        idle_seconds: f64,
    ) -> Result<Self, ApiError> {
        if fields.get("intent").map(String::as_str) != Some("transcription") {
            return Err(ApiError::invalid_parameter(
                "intent",
                "must be transcription: only transcription sessions are served",
            ));
        }
        let ours = HashMap::from([
            ("sampleRate".to_owned(), RATE.to_string()),
            ("commit".to_owned(), "vad".to_owned()),
            ("silenceMs".to_owned(), DEFAULT_SILENCE_MS.to_string()),
            ("words".to_owned(), "false".to_owned()),
        ]);
        let query = LiveSttRequest::query(&ours)?;
        let request = LiveSttRequest::parse(query, catalog, idle_seconds)?;
        Ok(Self {
            dialect: Realtime::new(&request),
            request,
        })
    }
}

/// OpenAI's realtime events on our session.
pub struct Realtime {
    /// Audio comes as 8-kHz μ-law (`audio/pcmu`), not 24-kHz PCM.
    ulaw: bool,
    /// The client spoke the beta protocol (`transcription_session.*`).
    beta: bool,
    /// The transcription model the client named (echoed).
    model: String,
    session_id: String,
    language: Option<String>,
    prompt: Option<String>,
    vad: bool,
    silence_ms: u64,
    events: u64,
    /// The turn whose speech start was announced, and the text its deltas
    /// have sent.
    announced: Option<u64>,
    sent: String,
    previous_item: Option<String>,
}

impl Realtime {
    fn new(request: &LiveSttRequest) -> Self {
        Self {
            ulaw: false,
            beta: false,
            model: "whisper-1".into(),
            session_id: String::new(),
            language: request.language.clone(),
            prompt: request.prompt.clone(),
            vad: true,
            silence_ms: u64::from(request.silence_ms),
            events: 0,
            announced: None,
            sent: String::new(),
            previous_item: None,
        }
    }

    fn emit(&mut self, kind: &str, mut body: Value) -> String {
        self.events += 1;
        body["type"] = json!(kind);
        body["event_id"] = json!(format!("event_{}", self.events));
        body.to_string()
    }

    fn error(
        &mut self,
        kind: &str,
        code: &str,
        message: &str,
        param: Option<&str>,
        event: Option<&Value>,
    ) -> String {
        let error = json!({
            "type": kind,
            "code": code,
            "message": message,
            "param": param,
            "event_id": event,
        });
        self.emit("error", json!({"error": error}))
    }

    fn item(&self, turn: u64) -> String {
        format!(
            "item_{}_{turn}",
            self.session_id.get(..8).unwrap_or(&self.session_id)
        )
    }

    /// The session as `session.created` and `session.updated` state it.
    fn session(&self) -> Value {
        let format = if self.ulaw {
            json!({"type": "audio/pcmu"})
        } else {
            json!({"type": "audio/pcm", "rate": RATE})
        };
        let turn_detection = self.vad.then(|| {
            json!({"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                   "silence_duration_ms": self.silence_ms})
        });
        if self.beta {
            return json!({
                "id": self.session_id,
                "object": "realtime.transcription_session",
                "input_audio_format": if self.ulaw { "g711_ulaw" } else { "pcm16" },
                "input_audio_transcription": {"model": self.model, "language": self.language, "prompt": self.prompt},
                "turn_detection": turn_detection,
            });
        }
        json!({
            "type": "transcription",
            "id": self.session_id,
            "object": "realtime.transcription_session",
            "audio": {"input": {
                "format": format,
                "transcription": {"model": self.model, "language": self.language, "prompt": self.prompt},
                "turn_detection": turn_detection,
                "noise_reduction": null,
            }},
            "include": null,
        })
    }

    /// A `session.update`'s session as our `update`, or the error event
    /// that refuses it (the session stays as it was).
    fn update(&mut self, session: &Value, event: Option<&Value>) -> Result<Value, String> {
        let (format, transcription, turn_detection) = if self.beta {
            (
                session.get("input_audio_format").map(|f| match f.as_str() {
                    Some("pcm16") => json!({"type": "audio/pcm", "rate": RATE}),
                    Some("g711_ulaw") => json!({"type": "audio/pcmu"}),
                    _ => json!({"type": f}),
                }),
                session.get("input_audio_transcription"),
                session.get("turn_detection"),
            )
        } else {
            let input = &session["audio"]["input"];
            (
                input.get("format").cloned(),
                input.get("transcription"),
                input.get("turn_detection"),
            )
        };
        let param = |name: &str| {
            if self.beta {
                format!("session.{name}")
            } else {
                format!("session.audio.input.{name}")
            }
        };
        let mut ulaw = self.ulaw;
        if let Some(format) = format {
            match (
                format["type"].as_str(),
                format.get("rate").and_then(Value::as_u64),
            ) {
                (Some("audio/pcm"), None | Some(24_000)) => ulaw = false,
                (Some("audio/pcmu"), _) => ulaw = true,
                _ => {
                    return Err(self.error(
                        "invalid_request_error",
                        "invalid_value",
                        "The formats taken are audio/pcm at 24000 Hz and audio/pcmu.",
                        Some(&param("format")),
                        event,
                    ))
                }
            }
        }
        let mut ours = json!({"type": "update"});
        if let Some(t) = transcription.filter(|t| t.is_object()) {
            if let Some(model) = t.get("model").and_then(Value::as_str) {
                self.model = model.to_owned();
            }
            if let Some(language) = t.get("language") {
                ours["language"] = language.clone();
            }
            if let Some(prompt) = t.get("prompt") {
                ours["prompt"] = prompt.clone();
            }
        }
        match turn_detection {
            None => {}
            Some(Value::Null) => ours["commit"] = json!("manual"),
            Some(t) => {
                ours["commit"] = json!("vad");
                if let Some(ms) = t.get("silence_duration_ms").and_then(Value::as_u64) {
                    ours["silenceMs"] = json!(ms.clamp(200, 5000));
                }
            }
        }
        self.ulaw = ulaw;
        Ok(ours)
    }

    /// Base64 audio as 24-kHz PCM (μ-law upsampled three times).
    fn pcm(&self, encoded: &str) -> Option<Vec<u8>> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        if !self.ulaw {
            return (bytes.len() % 2 == 0).then_some(bytes);
        }
        let samples: Vec<i16> = bytes.iter().map(|&b| ulaw_sample(b)).collect();
        let mut out = Vec::with_capacity(samples.len() * 6);
        for (i, &s) in samples.iter().enumerate() {
            let next = samples.get(i + 1).copied().unwrap_or(s);
            for k in 0..3 {
                let v = i32::from(s) + (i32::from(next) - i32::from(s)) * k / 3;
                out.extend_from_slice(&(v as i16).to_le_bytes());
            }
        }
        Some(out)
    }

    /// The events that announce turn `turn`'s speech, once.
    fn announce(&mut self, turn: u64, start: f64, out: &mut Vec<String>) {
        if self.announced == Some(turn) {
            return;
        }
        self.announced = Some(turn);
        self.sent.clear();
        let item = self.item(turn);
        out.push(self.emit(
            "input_audio_buffer.speech_started",
            json!({"audio_start_ms": (start * 1000.0).round() as u64, "item_id": item}),
        ));
    }

    /// The delta that takes the text sent so far to `text`, when `text`
    /// only adds to it.
    fn delta(&mut self, turn: u64, text: &str, out: &mut Vec<String>) {
        if text.len() <= self.sent.len() || !text.starts_with(self.sent.as_str()) {
            return;
        }
        let delta = text[self.sent.len()..].to_owned();
        self.sent = text.to_owned();
        let item = self.item(turn);
        out.push(self.emit(
            "conversation.item.input_audio_transcription.delta",
            json!({"item_id": item, "content_index": 0, "delta": delta}),
        ));
    }
}

impl Dialect for Realtime {
    fn client(&mut self, frame: Frame) -> Result<Relay, Closing> {
        let refuse = |me: &mut Self, code: &str, message: &str, event: Option<&Value>| {
            Ok(Relay {
                session: Vec::new(),
                client: vec![me.error("invalid_request_error", code, message, None, event)],
            })
        };
        let Frame::Text(text) = frame else {
            return refuse(
                self,
                "invalid_event",
                "Events are JSON text messages.",
                None,
            );
        };
        let Ok(message) = serde_json::from_str::<Value>(&text) else {
            return refuse(self, "invalid_json", "The message is not JSON.", None);
        };
        let event = message.get("event_id").cloned();
        let kind = message["type"].as_str().unwrap_or("");
        let native = |v: Value| Frame::Text(v.to_string());
        match kind {
            "session.update" | "transcription_session.update" => {
                self.beta = kind == "transcription_session.update";
                match self.update(&message["session"], event.as_ref()) {
                    Ok(update) => Ok(Relay::to_session(vec![native(update)])),
                    Err(error) => Ok(Relay {
                        session: Vec::new(),
                        client: vec![error],
                    }),
                }
            }
            "input_audio_buffer.append" => {
                match self.pcm(message["audio"].as_str().unwrap_or("")) {
                    Some(pcm) => Ok(Relay::to_session(pcm_frames(&pcm))),
                    None => refuse(
                        self,
                        "invalid_value",
                        "audio is base64 of the session's format.",
                        event.as_ref(),
                    ),
                }
            }
            "input_audio_buffer.commit" => Ok(Relay::to_session(vec![native(json!({"type": "commit"}))])),
            "input_audio_buffer.clear" => Ok(Relay::to_session(vec![native(json!({"type": "clear"}))])),
            _ => refuse(
                self,
                "unsupported_event",
                "A transcription session takes session.update and input_audio_buffer.append, commit and clear.",
                event.as_ref(),
            ),
        }
    }

    fn event(&mut self, event: &str) -> Vec<String> {
        let Ok(e) = serde_json::from_str::<Value>(event) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let turn = e["turn"].as_u64().unwrap_or(0);
        match e["type"].as_str().unwrap_or("") {
            "session.started" | "session.updated" => {
                if let Some(id) = e["sessionId"].as_str() {
                    self.session_id = id.to_owned();
                }
                self.language = e["language"].as_str().map(str::to_owned);
                self.prompt = e["prompt"].as_str().map(str::to_owned);
                self.vad = e["commit"] == "vad";
                self.silence_ms = e["silenceMs"].as_u64().unwrap_or(self.silence_ms);
                let kind = match (e["type"].as_str(), self.beta) {
                    (Some("session.started"), _) => "session.created",
                    (_, true) => "transcription_session.updated",
                    _ => "session.updated",
                };
                let session = self.session();
                out.push(self.emit(kind, json!({"session": session})));
            }
            "transcript.partial" => {
                self.announce(turn, e["start"].as_f64().unwrap_or(0.0), &mut out);
                self.delta(turn, e["stableText"].as_str().unwrap_or(""), &mut out);
            }
            "transcript.committed" => {
                self.announce(turn, e["start"].as_f64().unwrap_or(0.0), &mut out);
                let item = self.item(turn);
                let (start, end) = (
                    e["start"].as_f64().unwrap_or(0.0),
                    e["end"].as_f64().unwrap_or(0.0),
                );
                if self.vad {
                    out.push(self.emit(
                        "input_audio_buffer.speech_stopped",
                        json!({"audio_end_ms": (end * 1000.0).round() as u64, "item_id": item}),
                    ));
                }
                let previous = self.previous_item.replace(item.clone());
                out.push(self.emit(
                    "input_audio_buffer.committed",
                    json!({"item_id": item, "previous_item_id": previous}),
                ));
                let text = e["text"].as_str().unwrap_or("");
                self.delta(turn, text, &mut out);
                out.push(self.emit(
                    "conversation.item.input_audio_transcription.completed",
                    json!({"item_id": item, "content_index": 0, "transcript": text,
                           "usage": {"type": "duration", "seconds": (end - start).max(0.0)}}),
                ));
                self.announced = None;
                self.sent.clear();
            }
            "cleared" => {
                self.announced = None;
                self.sent.clear();
                out.push(self.emit("input_audio_buffer.cleared", json!({})));
            }
            "error" => {
                let param = e["param"].as_str().map(|p| match p {
                    "language" => "session.audio.input.transcription.language",
                    "prompt" => "session.audio.input.transcription.prompt",
                    "silenceMs" => "session.audio.input.turn_detection.silence_duration_ms",
                    _ => "session",
                });
                let message = e["message"].as_str().unwrap_or("").to_owned();
                out.push(self.error(
                    "invalid_request_error",
                    "invalid_value",
                    &message,
                    param,
                    None,
                ));
            }
            _ => {}
        }
        out
    }

    fn closing(&mut self, end: &Closing) -> Option<String> {
        let (kind, code) = match end.code {
            close::NORMAL => return None,
            close::BAD_MESSAGE => ("invalid_request_error", "invalid_event"),
            close::NO_CREDITS => ("insufficient_quota", "insufficient_quota"),
            close::TIMED_OUT => ("invalid_request_error", "session_expired"),
            close::OVERLOADED => ("server_error", "overloaded"),
            _ => ("server_error", "server_error"),
        };
        Some(self.error(kind, code, &end.reason, None, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn realtime() -> Realtime {
        let mut r = Realtime {
            ulaw: false,
            beta: false,
            model: "whisper-1".into(),
            session_id: "0123456789abcdef".into(),
            language: None,
            prompt: None,
            vad: true,
            silence_ms: 500,
            events: 0,
            announced: None,
            sent: String::new(),
            previous_item: None,
        };
        r.event(
            r#"{"type":"session.started","sessionId":"0123456789abcdef","commit":"vad","silenceMs":500}"#,
        );
        r
    }

    fn parsed(messages: &[String]) -> Vec<Value> {
        messages
            .iter()
            .map(|m| serde_json::from_str(m).unwrap())
            .collect()
    }

    #[test]
    fn updates_become_ours_and_bad_formats_are_errors_not_closes() {
        let mut r = realtime();
        let relay = r
            .client(Frame::Text(
                json!({"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
                    "format": {"type": "audio/pcm", "rate": 24000},
                    "transcription": {"model": "gpt-4o-transcribe", "language": "en"},
                    "turn_detection": null}}}})
                .to_string(),
            ))
            .unwrap();
        let Frame::Text(update) = &relay.session[0] else {
            panic!()
        };
        let update: Value = serde_json::from_str(update).unwrap();
        assert_eq!(
            update,
            json!({"type": "update", "language": "en", "commit": "manual"})
        );
        let relay = r
            .client(Frame::Text(
                json!({"type": "session.update", "event_id": "e1", "session": {"audio": {"input": {
                    "format": {"type": "audio/pcm", "rate": 16000}}}}})
                .to_string(),
            ))
            .unwrap();
        assert!(relay.session.is_empty());
        let error = &parsed(&relay.client)[0];
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["param"], "session.audio.input.format");
        assert_eq!(error["error"]["event_id"], "e1");
        let relay = r
            .client(Frame::Text(json!({"type": "response.create"}).to_string()))
            .unwrap();
        assert_eq!(
            parsed(&relay.client)[0]["error"]["code"],
            "unsupported_event"
        );
    }

    #[test]
    fn audio_is_appended_and_ulaw_is_upsampled() {
        let mut r = realtime();
        let b64 = base64::engine::general_purpose::STANDARD.encode([1u8, 0, 2, 0]);
        let relay = r
            .client(Frame::Text(
                json!({"type": "input_audio_buffer.append", "audio": b64}).to_string(),
            ))
            .unwrap();
        assert_eq!(relay.session, vec![Frame::Binary(vec![1, 0, 2, 0])]);
        r.ulaw = true;
        let b64 = base64::engine::general_purpose::STANDARD.encode([0xffu8, 0xff]);
        let relay = r
            .client(Frame::Text(
                json!({"type": "input_audio_buffer.append", "audio": b64}).to_string(),
            ))
            .unwrap();
        assert_eq!(relay.session, vec![Frame::Binary(vec![0; 12])]);
    }

    #[test]
    fn deltas_only_add_and_completed_carries_the_turn() {
        let mut r = realtime();
        let first = parsed(&r.event(
            &json!({"type": "transcript.partial", "turn": 0, "text": "Hello there", "stableText": "Hello", "start": 1.25})
                .to_string(),
        ));
        assert_eq!(first[0]["type"], "input_audio_buffer.speech_started");
        assert_eq!(first[0]["audio_start_ms"], 1250);
        assert_eq!(first[1]["delta"], "Hello");
        // A stable part that changed course sends nothing.
        let second = r.event(
            &json!({"type": "transcript.partial", "turn": 0, "text": "Yellow", "stableText": "Yellow"}).to_string(),
        );
        assert!(second.is_empty());
        let done = parsed(&r.event(
            &json!({"type": "transcript.committed", "turn": 0, "text": "Hello there friend", "start": 1.25, "end": 3.0})
                .to_string(),
        ));
        let kinds: Vec<&str> = done.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "input_audio_buffer.speech_stopped",
                "input_audio_buffer.committed",
                "conversation.item.input_audio_transcription.delta",
                "conversation.item.input_audio_transcription.completed"
            ]
        );
        assert_eq!(done[2]["delta"], " there friend");
        assert_eq!(done[3]["transcript"], "Hello there friend");
        assert_eq!(done[3]["item_id"], done[1]["item_id"]);
        // Event ids are unique.
        assert_ne!(done[0]["event_id"], done[1]["event_id"]);
    }
}
