//! Neural voice clones: a new Kokoro style table found for a speaker from
//! their samples.
//!
//! Kokoro has no style encoder (nothing turns audio into a style), so the
//! table is searched for. What is measured is how alike a candidate's
//! speech and the samples are on the speaker encoder (GE2E, cosine of the
//! embeddings). The search ([`search`]) starts from the stock voices of the
//! language, then steps through blends of everything it has heard, guided
//! by a local linear model of how a blend's embedding follows its weights
//! ([`blend`]), then walks at random around the best, and last finds the
//! pitch and the formants the best is spoken at. Every candidate is heard
//! on the same few sentences of different lengths, joined into one
//! utterance for the encoder; the result is judged afterwards on sample
//! audio the search never used.

pub mod blend;
pub mod colour;
pub mod search;
pub mod sentences;

use mediagen_speakers::encoder::Embedding;

use crate::tts::Style;

pub use search::{hear_stock, join, search, Found, Options, Progress};

/// What the search needs of the engines: speech in a style table, and a
/// speaker embedding of speech.
pub trait Studio: Sync {
    /// 16-kHz mono speech of `sentence` spoken with `style`.
    fn speak(&self, style: Style, sentence: &str) -> Result<Vec<f32>, String>;
    /// The speaker embedding of 16-kHz mono speech.
    fn embed(&self, audio: &[f32]) -> Result<Embedding, String>;
}

/// A stock voice the search may start from, and what it sounds like on the
/// search's sentences (the same for every target, so kept between clones:
/// see [`search::hear_stock`]).
#[derive(Debug, Clone)]
pub struct StockVoice {
    pub key: String,
    pub styles: Vec<f32>,
    /// Its speaker embedding on the search's sentences, joined.
    pub heard: Embedding,
}

/// Why a search stopped without a voice.
#[derive(Debug, thiserror::Error)]
pub enum CloneError {
    #[error("no stock voice to start from")]
    NoStock,
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Engine(String),
}
