//! Speech from streamed text (`GET /v1/text-to-speech/realtime`, a
//! WebSocket; also the `tts.realtime` job's payload): the voice and the
//! output, read from the upgrade's query, and how the text that arrives is
//! cut into the pieces spoken one after another.

use std::collections::HashMap;

use mediagen_core::format::AudioFormat;
use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::catalog::Voices;
use crate::tts::{ClonedVoice, TtsBody, TtsRequest, MAX_TEXT};

/// Characters held at the upgrade, and how far ahead of the text received
/// the hold is kept.
pub const HOLD_AHEAD: f64 = 1000.0;
/// The formats a session streams.
pub const FORMATS: [AudioFormat; 3] = [AudioFormat::Pcm, AudioFormat::Mp3, AudioFormat::Ogg];
/// A piece longer than this without a sentence's end is cut at a clause
/// (or a word) so that speech starts before the sentence is whole.
pub const LONGEST_PIECE: usize = 250;

/// The query of `GET /v1/text-to-speech/realtime`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LiveTtsQuery {
    /// A voice of `GET /v1/voices`: a catalog voice or one of the
    /// account's cloned voices.
    pub voice_id: String,
    /// `pcm` (default: raw s16le mono), `mp3` or `ogg` (Opus).
    #[param(schema_with = formats)]
    pub format: Option<String>,
    /// Hz, as `POST /v1/text-to-speech` takes for the format; default the
    /// voice's native rate.
    #[param(schema_with = mediagen_core::schema::sample_rate_schema)]
    pub sample_rate: Option<u32>,
    /// 0.5–2.0, default 1.0.
    #[param(minimum = 0.5, maximum = 2.0)]
    pub speed: Option<f64>,
    /// ISO 639-1: the language the text is read in (a neural clone speaks
    /// every Kokoro language); default the voice's.
    pub language_code: Option<String>,
    /// A single-use token (`POST /v1/tokens`) in place of the key, for
    /// browsers.
    pub token: Option<String>,
}

fn formats() -> utoipa::openapi::schema::Object {
    let names: Vec<&str> = FORMATS.iter().map(|f| f.as_str()).collect();
    mediagen_core::schema::one_of_strings(&names)
}

/// A validated session (also its job's payload): the voice and output as
/// a text-to-speech request whose text comes piece by piece.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LiveTtsRequest {
    /// Every piece is spoken as this request with the piece as its text.
    pub voice: TtsRequest,
    /// Seconds without a message after which the session closes.
    pub idle_seconds: f64,
}

impl LiveTtsRequest {
    /// Reads the query's fields into their types and checks what the
    /// published schema states of each (the formats, the rates, the speed's range);
    /// errors name the parameter.
    pub fn query(fields: &HashMap<String, String>) -> Result<LiveTtsQuery, ApiError> {
        let q: LiveTtsQuery = mediagen_core::form::from_fields(fields)?;
        let streamed = |f: &str| FORMATS.iter().any(|ours| ours.as_str() == f);
        if q.format.as_deref().is_some_and(|f| !streamed(f)) {
            let names: Vec<&str> = FORMATS.iter().map(|f| f.as_str()).collect();
            return Err(ApiError::invalid_parameter(
                "format",
                format!("a session streams {}", names.join(", ")),
            ));
        }
        let offered = |r: u32| {
            mediagen_core::format::AudioFormat::ALL
                .iter()
                .any(|f| f.sample_rates().contains(&r))
        };
        if q.sample_rate.is_some_and(|r| !offered(r)) {
            return Err(ApiError::invalid_parameter(
                "sampleRate",
                "must be a rate POST /v1/text-to-speech offers",
            ));
        }
        if q.speed.is_some_and(|s| !(0.5..=2.0).contains(&s)) {
            return Err(ApiError::invalid_parameter(
                "speed",
                "must be from 0.5 to 2.0",
            ));
        }
        Ok(q)
    }

    /// The session `q` asks for, checked against what is installed and the
    /// account's voice (`cloned`, when `voiceId` names one) as
    /// `POST /v1/text-to-speech` checks its body.
    pub fn parse(
        q: LiveTtsQuery,
        catalog: &dyn Voices,
        cloned: Option<ClonedVoice>,
        idle_seconds: f64,
    ) -> Result<Self, ApiError> {
        let body = TtsBody {
            text: "Hello.".into(),
            voice_id: q.voice_id,
            format: Some(q.format.unwrap_or_else(|| "pcm".into())),
            sample_rate: q.sample_rate,
            speed: q.speed.map(|s| s as f32),
            timestamps: false,
            language_code: q.language_code,
            job: Default::default(),
        };
        let mut voice = TtsRequest::parse(body, catalog, cloned)?;
        if !FORMATS.contains(&voice.format) {
            let names: Vec<&str> = FORMATS.iter().map(|f| f.as_str()).collect();
            return Err(ApiError::invalid_parameter(
                "format",
                format!("a session streams {}", names.join(", ")),
            ));
        }
        voice.text.clear();
        voice.priced = 0;
        voice.stream = true;
        Ok(Self {
            voice,
            idle_seconds,
        })
    }
}

impl mediagen_core::JobRequest for LiveTtsRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::TtsRealtime;

    /// The first hold: [`HOLD_AHEAD`] characters (raised as text
    /// arrives, settled on what was spoken).
    fn units(&self) -> f64 {
        HOLD_AHEAD
    }

    fn media_seconds(&self) -> f64 {
        0.0
    }
}

/// The text of a session waiting to be spoken: pieces come off it as they
/// are whole.
#[derive(Debug, Default)]
pub struct Pending {
    text: String,
}

impl Pending {
    /// Adds text as it came; `Err` when more than [`MAX_TEXT`] characters
    /// would wait unspoken.
    pub fn push(&mut self, text: &str) -> Result<(), ApiError> {
        if self.text.chars().count() + text.chars().count() > *MAX_TEXT {
            return Err(ApiError::invalid_parameter(
                "text",
                format!(
                    "at most {} characters wait to be spoken; flush first",
                    *MAX_TEXT
                ),
            ));
        }
        self.text.push_str(text);
        Ok(())
    }

    /// The pieces ready to be spoken: each whole sentence (its end, `.`,
    /// `!`, `?`, `…` or a line break, followed by white space), and of a
    /// run longer than [`LONGEST_PIECE`] characters without one, its part
    /// up to the last clause mark (or word) before that length. With
    /// `flush`, everything waiting.
    pub fn take(&mut self, flush: bool) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let cut = sentence_end(&self.text).or_else(|| long_cut(&self.text));
            let Some(at) = cut else { break };
            let rest = self.text.split_off(at);
            let piece = std::mem::replace(&mut self.text, rest);
            if piece.chars().any(char::is_alphanumeric) {
                out.push(piece.trim().to_owned());
            }
        }
        if flush {
            let piece = std::mem::take(&mut self.text);
            if piece.chars().any(char::is_alphanumeric) {
                out.push(piece.trim().to_owned());
            }
        }
        out
    }
}

/// Where the first whole sentence ends (after its white space).
fn sentence_end(text: &str) -> Option<usize> {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\n' {
            return Some(i + 1);
        }
        if matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？') {
            // Closing quotes and brackets stay with their sentence.
            let mut end = i + c.len_utf8();
            while let Some(&(j, q)) = chars.peek() {
                if matches!(q, '"' | '\'' | ')' | ']' | '”' | '’' | '」') {
                    end = j + q.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            match chars.peek() {
                Some(&(j, w)) if w.is_whitespace() => return Some(j + w.len_utf8()),
                // CJK sentences need no space after them.
                _ if matches!(c, '。' | '！' | '？') => return Some(end),
                _ => {}
            }
        }
    }
    None
}

/// Where a run past [`LONGEST_PIECE`] characters is cut: after the last
/// clause mark and its space within that length, else after the last
/// space.
fn long_cut(text: &str) -> Option<usize> {
    let head: Vec<(usize, char)> = text.char_indices().collect();
    if head.len() <= LONGEST_PIECE {
        return None;
    }
    let within = &head[..LONGEST_PIECE];
    let after = |k: usize| within.get(k + 1).map_or(text.len(), |(j, _)| *j);
    let clause = within.windows(2).rposition(|w| {
        matches!(w[0].1, ',' | ';' | ':' | '—' | '–' | '，' | '、') && w[1].1.is_whitespace()
    });
    if let Some(k) = clause {
        return Some(after(k + 1));
    }
    within
        .iter()
        .rposition(|(_, c)| c.is_whitespace())
        .filter(|&k| k > 0)
        .map(after)
}

/// When each character of `text` is heard in `duration` seconds of its
/// speech: the engines report no durations, so the span is shared by the
/// characters, a letter or digit weighing 1 and anything else a half.
/// Times in milliseconds from the piece's start.
pub fn char_times(text: &str, duration: f64) -> (Vec<String>, Vec<u64>, Vec<u64>) {
    let chars: Vec<char> = text.chars().collect();
    let weight = |c: &char| if c.is_alphanumeric() { 1.0 } else { 0.5 };
    let total: f64 = chars.iter().map(weight).sum::<f64>().max(1e-9);
    let ms = duration * 1000.0;
    let (mut starts, mut lengths) = (Vec::new(), Vec::new());
    let mut at = 0.0f64;
    for c in &chars {
        let span = ms * weight(c) / total;
        starts.push(at.round() as u64);
        lengths.push(span.round() as u64);
        at += span;
    }
    (chars.iter().map(char::to_string).collect(), starts, lengths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(text: &str, flush: bool) -> Vec<String> {
        let mut p = Pending::default();
        p.push(text).unwrap();
        p.take(flush)
    }

    #[test]
    fn whole_sentences_come_off_as_they_end() {
        assert_eq!(take("Hello there. How are", false), vec!["Hello there."]);
        assert_eq!(take("Hello there.", false), Vec::<String>::new());
        assert_eq!(take("Hello there.", true), vec!["Hello there."]);
        assert_eq!(
            take("\"Stop!\" she said. Then", false),
            vec!["\"Stop!\"", "she said."]
        );
        assert_eq!(take("3.5 litres of", false), Vec::<String>::new());
        assert_eq!(take("你好。再见", false), vec!["你好。"]);
        assert_eq!(take("... ", true), Vec::<String>::new());
    }

    #[test]
    fn a_long_run_is_cut_at_a_clause() {
        let run = format!(
            "{}, and then {}",
            "word ".repeat(30).trim(),
            "more ".repeat(40)
        );
        let pieces = take(&run, false);
        assert_eq!(pieces.len(), 1, "{pieces:?}");
        assert!(pieces[0].ends_with(','), "{pieces:?}");
    }

    #[test]
    fn waiting_text_is_bounded() {
        let mut p = Pending::default();
        p.push(&"a".repeat(*MAX_TEXT)).unwrap();
        assert!(p.push("b").is_err());
    }

    #[test]
    fn characters_share_the_span() {
        let (chars, starts, lengths) = char_times("Hi, yo", 1.1);
        assert_eq!(chars.concat(), "Hi, yo");
        assert_eq!(starts[0], 0);
        // Letters weigh twice a comma or a space.
        assert_eq!(lengths[0], 2 * lengths[2]);
        let end = starts[5] + lengths[5];
        assert!((1099..=1101).contains(&end), "{end}");
    }
}
