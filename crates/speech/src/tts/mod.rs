//! Text-to-speech: engines behind one trait, and the voice catalog that
//! routes a voice id to its engine.

mod catalog;
pub mod espeak;
pub mod g2p;
pub mod kokoro;
pub use mediagen_core::normalize;
pub mod piper;
pub use mediagen_core::ssml;
pub mod text;

pub use catalog::{EngineStatus, Likeness, TtsCatalog};

use mediagen_media::audio::Audio;

pub use mediagen_core::voice::VoiceInfo;

/// Why synthesis failed.
#[derive(Debug, thiserror::Error)]
pub enum TtsError {
    #[error("unknown voice `{0}`")]
    UnknownVoice(String),
    #[error("the {engine} engine is not available: {reason}")]
    EngineUnavailable {
        engine: &'static str,
        reason: String,
    },
    #[error("synthesis failed: {0}")]
    Failed(String),
    /// The text cannot be read aloud as it is (the phonemizer refused it):
    /// the input's fault, not worth another attempt.
    #[error("{0}")]
    Unreadable(String),
    #[error("cancelled")]
    Cancelled,
    #[error("this engine cannot speak phonemes")]
    PhonemesUnsupported,
    /// A sentence came out longer than its text can take at its rate.
    #[error("a sentence made {seconds:.1} s of speech, over its ceiling of {limit:.1} s")]
    OverLimit { seconds: f64, limit: f64 },
}

impl TtsError {
    /// An ONNX Runtime run that failed, or that its job's cancel stopped
    /// (`onnx::Stoppable`).
    pub(crate) fn of_run(e: ort::Error) -> Self {
        if mediagen_media::process::cancelled_here() {
            return Self::Cancelled;
        }
        Self::Failed(e.to_string())
    }
}

/// A style table spoken in place of a voice's own (a neural clone's), and
/// the pitch it is spoken at.
#[derive(Debug, Clone, Copy)]
pub struct Style<'a> {
    pub table: &'a [f32],
    /// The pitch the table predicts is multiplied by this (1: as
    /// predicted; bounded by the engine).
    pub pitch: f32,
    /// Every frequency of the voice but its pitch (its formants: the
    /// length of the vocal tract) is multiplied by this (1: as the table
    /// speaks; bounded by the engine).
    pub formant: f32,
    /// The voice's own pace: the speed asked for is multiplied by this (1:
    /// as the table speaks; a designed voice's "slowly" is below 1).
    pub pace: f32,
}

impl<'a> Style<'a> {
    /// `table` at the pitch it predicts.
    pub fn plain(table: &'a [f32]) -> Self {
        Self {
            table,
            pitch: 1.0,
            formant: 1.0,
            pace: 1.0,
        }
    }
}

/// Words of a text read in another language than the voice's: the words a
/// translator left as they were (a dub's *swarmed* in Spanish), said as
/// their own language says them rather than spelled out in the voice's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Foreign {
    /// ISO 639-1 code of the words' language.
    pub language: String,
    /// The words, as written in the text; each is read wherever it occurs.
    pub words: Vec<String>,
}

/// One speech engine. Synthesis is synchronous and CPU-bound: call it from
/// a blocking thread. The text is one normalised sentence.
pub trait TextToSpeech: Send + Sync {
    /// `kokoro`, `piper` or `espeak`.
    fn engine(&self) -> &'static str;

    /// The voices this engine offers.
    fn voices(&self) -> Vec<VoiceInfo>;

    /// Speaks one sentence with voice `key` at `speed` (1.0 = normal).
    fn synthesize(&self, key: &str, sentence: &str, speed: f32) -> Result<Audio, TtsError>;

    /// Speaks IPA phonemes as given (SSML `<phoneme>`). Engines that cannot
    /// take phonemes answer [`TtsError::PhonemesUnsupported`] and the text is
    /// spoken instead.
    fn synthesize_ipa(&self, _key: &str, _ipa: &str, _speed: f32) -> Result<Audio, TtsError> {
        Err(TtsError::PhonemesUnsupported)
    }

    /// Speaks one sentence with a style table of its own (a neural clone)
    /// in the language and phonemes of voice `key`. Only engines whose
    /// voices are style tables (Kokoro) can.
    fn synthesize_styles(
        &self,
        _style: Style,
        _key: &str,
        _sentence: &str,
        _speed: f32,
    ) -> Result<Audio, TtsError> {
        Err(TtsError::Failed(format!(
            "the {} engine has no style tables",
            self.engine()
        )))
    }

    /// Speaks one sentence as [`Self::synthesize`] (or, with `style`,
    /// [`Self::synthesize_styles`]) does, reading `foreign`'s words in their
    /// own language where the engine can (Kokoro: by that language's
    /// phonemizer); other engines read them as the voice's own words.
    fn synthesize_foreign(
        &self,
        style: Option<Style>,
        key: &str,
        sentence: &str,
        _foreign: &Foreign,
        speed: f32,
    ) -> Result<Audio, TtsError> {
        match style {
            Some(style) => self.synthesize_styles(style, key, sentence, speed),
            None => self.synthesize(key, sentence, speed),
        }
    }

    /// Voice `key`'s style table, for engines whose voices are style tables.
    fn style_table(&self, _key: &str) -> Option<Vec<f32>> {
        None
    }

    /// Loads the engine's models now (they load on first use otherwise);
    /// what failed, with why.
    fn warm(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A stable 20-character id for a voice.
pub fn voice_id(engine: &str, key: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{engine}:{key}").as_bytes());
    let n = u128::from_be_bytes(digest[..16].try_into().expect("16 bytes"));
    // Lowest digit first, as the ids were first made (they are stored by
    // clients: they must not change).
    mediagen_core::ids::base62_fixed(n, 20)
        .chars()
        .rev()
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn voice_ids_are_stable_and_distinct() {
        let a = super::voice_id("piper", "en_US-joe-medium");
        assert_eq!(a.len(), 20);
        assert_eq!(a, super::voice_id("piper", "en_US-joe-medium"));
        assert_ne!(a, super::voice_id("espeak", "en_US-joe-medium"));
        // The id Piper's Joe has always had.
        assert_eq!(a, "kGwl5DuEy55SuvaUxKNV");
    }
}
