//! Speech-to-text: what a recogniser is (the `SpeechToText` and
//! `SttSession` traits and the transcript's types, here), two whisper
//! engines behind them (CTranslate2 int8, the default where its runtime is
//! installed, in `ct2`; whisper.cpp for any ggml file, in `whisper`), long
//! audio planned and decoded in sections (`long`), and the recognisers
//! installed (`catalog`).

mod catalog;
pub mod chunk;
mod counts;
mod ct2;
mod gate;
mod lazy;
mod long;
mod mel;
pub mod speakers;
pub mod wer;
mod whisper;
mod word_times;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use lazy::LazyStt;

pub use catalog::{language_name, languages, SttCatalog};
pub use counts::{counts, DecodeCounts};
pub use ct2::Ct2Engine;
pub use gate::DecodeGate;
pub use long::{detect_language, transcribe, transcribe_stream, AudioSource};
pub use whisper::WhisperEngine;

use chunk::{plan, Plan, MAX_CHUNK, RATE};
use mediagen_speakers::diarize::{diarize, Diarization, DiarizeOptions, Samples};
use mediagen_speakers::encoder::SpeakerEncoder;
use mediagen_speakers::sliding::{ge2e_voices, Networks, SlidingOptions};
use mediagen_speakers::vad::{Vad, FRAME};

use crate::tts::EngineStatus;

/// A recognised segment, seconds from the start of the audio.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    pub id: usize,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub end: f64,
    pub text: String,
    pub avg_logprob: f64,
    pub no_speech_prob: f64,
    /// The text's length over its zlib-compressed length (whisper's test
    /// for a decoder repeating itself; OpenAI's verbose_json reports it).
    #[serde(default)]
    pub compression_ratio: f64,
    /// Who says it (`speaker_0`, …), when the audio was diarized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

/// A recognised word with its time span.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Word {
    pub word: String,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub end: f64,
    pub probability: f64,
    /// Who says it, when the audio was diarized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

/// A speaker of a diarized transcript and how long they speak.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpeakerTime {
    /// `speaker_0`, `speaker_1`, … in order of first speaking.
    pub id: String,
    /// Seconds of speech.
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub seconds: f64,
}

/// A stretch where two or more speakers speak at once.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overlap {
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub end: f64,
    /// Who (`speaker_0`, …), in the order of their labels.
    pub speakers: Vec<String>,
}

/// What the recogniser heard.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    pub text: String,
    /// ISO 639-1 code.
    pub language: String,
    /// Probability of the detected language (1.0 when it was given).
    pub language_probability: f64,
    /// Seconds of audio.
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub duration: f64,
    pub segments: Vec<Segment>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<Word>,
    /// The speakers, when the audio was diarized.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub speakers: Vec<SpeakerTime>,
    /// Where two or more speakers speak at once, when the audio was
    /// diarized (segments and words keep the main voice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<Overlap>,
}

/// How many speakers a diarization may find (each bound when given).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpeakerCount {
    pub exactly: Option<usize>,
    pub at_least: Option<usize>,
    pub at_most: Option<usize>,
}

/// How to transcribe.
#[derive(Debug, Clone, Default)]
pub struct SttOptions {
    /// ISO 639-1 code, or `None` to detect.
    pub language: Option<String>,
    /// Translate into English.
    pub translate: bool,
    /// Text that biases the vocabulary.
    pub prompt: Option<String>,
    /// Word timestamps.
    pub words: bool,
    /// How hard to search.
    pub decoding: Decoding,
}

/// How much decoding a window gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Decoding {
    /// Beam search of 5, then whisper's temperature fallback while the text
    /// is too repetitive or too unlikely (files: up to six decodings).
    #[default]
    Full,
    /// Beam search of 5, and one more only where the text loops (too
    /// repetitive) after previous text: without that text. Never for low
    /// likelihood alone: a live turn's commit where its greedy decoding
    /// loops, whose time someone waits for (a sampled round of five costs
    /// three to six times the first).
    Bounded,
    /// Beam search of 5 alone: where a loop is better refused than
    /// decoded again (a live turn's cut, which waits for the next chance).
    Beam,
    /// One greedy decoding, no fallback: a live turn's drafts, and the
    /// commit that is not decoded ahead (someone waits for it).
    Draft,
}

#[derive(Debug, thiserror::Error)]
pub enum SttError {
    #[error("recognition failed: {0}")]
    Failed(String),
    #[error("cancelled")]
    Cancelled,
    /// The audio could not be read.
    #[error("{0}")]
    Input(String),
}

/// A speech recogniser. Synchronous and CPU-bound: call from a blocking
/// thread. Audio is 16 kHz mono.
pub trait SpeechToText: Send + Sync {
    /// Model name, e.g. `base`.
    fn name(&self) -> &str;
    /// True when the model knows other languages than English.
    fn multilingual(&self) -> bool;
    /// A decoder for one request (its buffers are reused chunk after chunk).
    fn session(&self, opts: &SttOptions) -> Result<Box<dyn SttSession + '_>, SttError>;
    /// How many sessions can decode at once without slowing each other
    /// (long files are split into that many parts decoded side by side).
    fn lanes(&self) -> usize {
        1
    }
}

/// One request's decoder. Times are seconds from the start of `audio`.
pub trait SttSession {
    /// The spoken language of `audio` (ISO 639-1) and its probability.
    fn detect_language(&mut self, audio: &[f32]) -> Result<(String, f64), SttError>;
    /// Transcribes at most one window (30 s) of audio.
    fn transcribe(&mut self, audio: &[f32], language: &str) -> Result<Window, SttError>;
    /// [`Self::transcribe`], told the audio the next window will likely
    /// hold: a session may prepare it (encode it) while it decodes this one,
    /// and use that work if the next window is that audio.
    fn transcribe_before(
        &mut self,
        audio: &[f32],
        language: &str,
        _next: &[f32],
    ) -> Result<Window, SttError> {
        self.transcribe(audio, language)
    }
    /// This session decodes beside others (sections of one file side by
    /// side), each on a core of its own: a session may then make its
    /// encodings on its own decoding thread rather than on threads all
    /// sessions share.
    fn beside_others(&mut self) {}
    /// Whether the session takes a lead-in ([`Self::lead_in`]); its caller
    /// otherwise starts at the section.
    fn takes_lead_in(&self) -> bool {
        false
    }
    /// The next window begins with the end of the section before this
    /// one (decoded side by side): its words up to `seconds` in are
    /// context, decoded so that the section's first words have text before
    /// them, and left out of what the window returns.
    fn lead_in(&mut self, _seconds: f64) {}
}

/// What one window's decoding gave.
#[derive(Debug, Default)]
pub struct Window {
    pub segments: Vec<Segment>,
    pub words: Vec<Word>,
    /// Samples of the audio this covers: all of it, or less when the
    /// decoder stopped early while speech followed; the rest is decoded
    /// again at the start of the next window (as whisper's own loop seeks
    /// to the last timestamp), without a window of its own.
    pub consumed: usize,
}

/// How compressible text is: its length over its zlib-compressed length
/// (whisper's test for a decoder stuck repeating itself).
pub fn compression_ratio(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = z.write_all(text.as_bytes());
    let packed = z.finish().map(|v| v.len()).unwrap_or(1).max(1);
    text.len() as f64 / packed as f64
}
