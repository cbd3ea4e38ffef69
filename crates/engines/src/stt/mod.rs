//! Speech-to-text: the `SpeechToText` trait and the whisper.cpp engine.

mod whisper;

use std::path::Path;
use std::sync::Arc;

pub use whisper::WhisperEngine;

use crate::tts::EngineStatus;

/// A recognised segment, seconds from the start of the audio.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    pub id: usize,
    pub start: f64,
    pub end: f64,
    pub text: String,
    pub avg_logprob: f64,
    pub no_speech_prob: f64,
}

/// A recognised word with its time span.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Word {
    pub word: String,
    pub start: f64,
    pub end: f64,
    pub probability: f64,
}

/// What the recogniser heard.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    pub text: String,
    /// ISO 639-1 code.
    pub language: String,
    /// Probability of the detected language (1.0 when it was given).
    pub language_probability: f64,
    /// Seconds of audio.
    pub duration: f64,
    pub segments: Vec<Segment>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<Word>,
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
}

#[derive(Debug, thiserror::Error)]
pub enum SttError {
    #[error("recognition failed: {0}")]
    Failed(String),
    #[error("cancelled")]
    Cancelled,
}

/// A speech recogniser. Synchronous and CPU-bound: call from a blocking
/// thread. Audio is 16 kHz mono.
pub trait SpeechToText: Send + Sync {
    /// Model name, e.g. `base`.
    fn name(&self) -> &str;
    /// True when the model knows other languages than English.
    fn multilingual(&self) -> bool;
    /// Transcribes; `progress` gets 0–100 and returns false to cancel.
    fn transcribe(
        &self,
        audio: &[f32],
        opts: &SttOptions,
        progress: &mut dyn FnMut(i32) -> bool,
    ) -> Result<Transcript, SttError>;
}

/// The recognisers found in `<models>/whisper/`.
#[derive(Default)]
pub struct SttCatalog {
    models: Vec<Arc<dyn SpeechToText>>,
    status: Vec<EngineStatus>,
}

impl SttCatalog {
    /// Loads every `ggml-*.bin` under `<models>/whisper/` (the default model
    /// is `base` when present).
    pub fn discover(models_dir: &Path, threads: usize) -> Self {
        let mut catalog = Self::default();
        let dir = models_dir.join("whisper");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|p: &std::path::PathBuf| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ggml-") && n.ends_with(".bin"))
        });
        files.sort();
        for file in files {
            match WhisperEngine::load(&file, threads) {
                Ok(engine) => {
                    tracing::info!(model = engine.name(), "speech-to-text model ready");
                    catalog.status.push(EngineStatus {
                        engine: "whisper",
                        kind: "speech-to-text",
                        available: true,
                        voices: 0,
                        detail: format!("{} ({})", engine.name(), file.display()),
                    });
                    catalog.models.push(Arc::new(engine));
                }
                Err(e) => {
                    tracing::warn!(file = %file.display(), "speech-to-text model skipped: {e}")
                }
            }
        }
        if catalog.models.is_empty() {
            let detail = format!(
                "no ggml whisper models in {} (run scripts/models.sh)",
                dir.display()
            );
            tracing::warn!("speech-to-text unavailable: {detail}");
            catalog.status.push(EngineStatus {
                engine: "whisper",
                kind: "speech-to-text",
                available: false,
                voices: 0,
                detail,
            });
        }
        // The default first: base, then the rest by name.
        catalog
            .models
            .sort_by_key(|m| (m.name() != "base", m.name().to_owned()));
        catalog
    }

    pub fn status(&self) -> &[EngineStatus] {
        &self.status
    }

    /// Model names, the default first.
    pub fn names(&self) -> Vec<String> {
        self.models.iter().map(|m| m.name().to_owned()).collect()
    }

    /// A model by name, or the default.
    pub fn model(&self, name: Option<&str>) -> Option<Arc<dyn SpeechToText>> {
        match name {
            None => self.models.first().cloned(),
            Some(n) => self.models.iter().find(|m| m.name() == n).cloned(),
        }
    }
}

/// The ISO 639-1 codes whisper recognises.
pub fn languages() -> Vec<&'static str> {
    (0..=whisper_rs::get_lang_max_id())
        .filter_map(whisper_rs::get_lang_str)
        .collect()
}
