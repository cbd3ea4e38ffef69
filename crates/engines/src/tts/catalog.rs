use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::audio::Audio;
use crate::tts::espeak::{self, EspeakEngine};
use crate::tts::kokoro::KokoroEngine;
use crate::tts::normalize::normalize;
use crate::tts::piper::PiperEngine;
use crate::tts::ssml::{self, Segment};
use crate::tts::{text, TextToSpeech, TtsError, VoiceInfo};

/// Pause between sentences, seconds.
const SENTENCE_GAP: f64 = 0.12;

/// What start-up found of one engine.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineStatus {
    pub engine: &'static str,
    pub kind: &'static str,
    pub available: bool,
    pub voices: usize,
    /// Where it loaded from, or why it is missing.
    pub detail: String,
}

/// Every voice of every engine found at start-up, by id.
#[derive(Default)]
pub struct TtsCatalog {
    engines: Vec<Arc<dyn TextToSpeech>>,
    voices: Vec<VoiceInfo>,
    engine_of: HashMap<String, usize>,
    status: Vec<EngineStatus>,
}

impl TtsCatalog {
    /// Loads the engines whose programs and models are present. A missing
    /// engine is reported (log line and [`TtsCatalog::status`]), never fatal.
    pub fn discover(models_dir: &Path, threads: usize) -> Self {
        let mut catalog = Self::default();
        match KokoroEngine::load(models_dir, threads) {
            Ok(engine) => catalog.add(Arc::new(engine), format!("{}/kokoro", models_dir.display())),
            Err(e) => catalog.missing("kokoro", e),
        }
        match PiperEngine::load(models_dir, threads) {
            Ok((engine, problems)) => {
                for p in problems {
                    tracing::warn!("piper voice skipped: {p}");
                }
                catalog.add(Arc::new(engine), format!("{}/piper", models_dir.display()));
            }
            Err(e) => catalog.missing("piper", e),
        }
        match espeak::available().and_then(|_| EspeakEngine::load()) {
            Ok(engine) => catalog.add(Arc::new(engine), "espeak-ng program".into()),
            Err(e) => catalog.missing("espeak", format!("espeak-ng is not installed ({e})")),
        }
        catalog
    }

    /// A catalog of the given engines (tests, custom builds).
    pub fn from_engines(engines: Vec<Arc<dyn TextToSpeech>>) -> Self {
        let mut catalog = Self::default();
        for e in engines {
            catalog.add(e, "in-process".into());
        }
        catalog
    }

    fn add(&mut self, engine: Arc<dyn TextToSpeech>, detail: String) {
        let index = self.engines.len();
        let voices = engine.voices();
        tracing::info!(
            engine = engine.engine(),
            voices = voices.len(),
            "text-to-speech engine ready"
        );
        self.status.push(EngineStatus {
            engine: engine.engine(),
            kind: "text-to-speech",
            available: true,
            voices: voices.len(),
            detail,
        });
        for v in voices {
            self.engine_of.insert(v.id.clone(), index);
            self.voices.push(v);
        }
        self.engines.push(engine);
    }

    fn missing(&mut self, engine: &'static str, reason: String) {
        tracing::warn!(engine, "text-to-speech engine unavailable: {reason}");
        self.status.push(EngineStatus {
            engine,
            kind: "text-to-speech",
            available: false,
            voices: 0,
            detail: reason,
        });
    }

    pub fn voices(&self) -> &[VoiceInfo] {
        &self.voices
    }

    pub fn voice(&self, id: &str) -> Option<&VoiceInfo> {
        self.voices.iter().find(|v| v.id == id)
    }

    pub fn status(&self) -> &[EngineStatus] {
        &self.status
    }

    /// Speaks `text` (plain text, or SSML when it starts with `<speak`),
    /// normalised for the voice's language, sentence by sentence. `each`
    /// sees every piece of audio as it is made (sentences and breaks), with
    /// its index and the piece count, and returns false to stop (cancel).
    pub fn speak(
        &self,
        voice_id: &str,
        text: &str,
        speed: f32,
        mut each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError> {
        let voice = self
            .voice(voice_id)
            .ok_or_else(|| TtsError::UnknownVoice(voice_id.into()))?;
        let engine = &self.engines[self.engine_of[voice_id]];
        let segments = if ssml::is_ssml(text) {
            ssml::parse(text).map_err(|e| TtsError::Failed(e.to_string()))?
        } else {
            ssml::plain(text)
        };
        // Expand into the units that are synthesized one by one.
        enum Unit<'a> {
            Sentence(String, f32),
            Silence(f64),
            Ipa(&'a str, &'a str, f32),
        }
        let mut units = Vec::new();
        for seg in &segments {
            match seg {
                Segment::Text { text, rate } => {
                    for s in text::sentences(&normalize(text, &voice.language)) {
                        units.push(Unit::Sentence(s, *rate));
                    }
                }
                Segment::Break(secs) => units.push(Unit::Silence(*secs)),
                Segment::Phonemes { ipa, text, rate } => units.push(Unit::Ipa(ipa, text, *rate)),
            }
        }
        let mut out = Audio::new(Vec::new(), voice.sample_rate);
        let n = units.len();
        for (i, unit) in units.iter().enumerate() {
            let mut audio = match unit {
                Unit::Silence(secs) => Audio::silence(*secs, voice.sample_rate),
                Unit::Sentence(sentence, rate) => {
                    engine.synthesize(&voice.key, sentence, speed * rate)?
                }
                Unit::Ipa(ipa, text, rate) => {
                    match engine.synthesize_ipa(&voice.key, ipa, speed * rate) {
                        Err(TtsError::PhonemesUnsupported) => {
                            engine.synthesize(&voice.key, text, speed * rate)?
                        }
                        other => other?,
                    }
                }
            };
            if !matches!(unit, Unit::Silence(_)) {
                // Engines pad sentences with different amounts of silence;
                // the pause between sentences is ours to choose.
                audio.trim_silence(-45.0, 0.04);
                let next_is_speech = units
                    .get(i + 1)
                    .is_some_and(|u| !matches!(u, Unit::Silence(_)));
                if next_is_speech {
                    audio.append(&Audio::silence(SENTENCE_GAP, audio.sample_rate));
                }
            }
            if !each(i, n, &audio) {
                return Err(TtsError::Cancelled);
            }
            out.append(&audio);
        }
        Ok(out)
    }
}
