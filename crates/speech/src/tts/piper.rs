//! Piper (VITS) voices through ONNX Runtime: espeak-ng IPA phonemes →
//! the voice's phoneme ids → audio. Every `<name>.onnx` with its
//! `<name>.onnx.json` under `<models>/piper/` is a voice.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ort::session::SessionInputValue;

use mediagen_onnx::LazySession;
use ort::value::Tensor;
use serde::Deserialize;

use crate::tts::espeak::{bcp47, sentence_phonemes};
use crate::tts::{voice_id, TextToSpeech, TtsError, VoiceInfo};
use mediagen_media::audio::Audio;

#[derive(Debug, Deserialize)]
pub struct PiperConfig {
    pub audio: AudioConfig,
    pub espeak: EspeakConfig,
    #[serde(default)]
    pub inference: InferenceConfig,
    pub phoneme_id_map: HashMap<String, Vec<i64>>,
    #[serde(default)]
    pub num_speakers: u32,
    #[serde(default)]
    pub language: Option<LanguageConfig>,
    #[serde(default)]
    pub dataset: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct AudioConfig {
    pub sample_rate: u32,
    #[serde(default)]
    pub quality: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct EspeakConfig {
    pub voice: String,
}

#[derive(Debug, Deserialize)]
pub struct InferenceConfig {
    pub noise_scale: f32,
    pub length_scale: f32,
    pub noise_w: f32,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        Self {
            noise_scale: 0.667,
            length_scale: 1.0,
            noise_w: 0.8,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct LanguageConfig {
    pub code: String,
    #[serde(default)]
    pub name_english: Option<String>,
    #[serde(default)]
    pub country_english: Option<String>,
}

struct PiperVoice {
    info: VoiceInfo,
    config: PiperConfig,
    session: LazySession,
}

/// The Piper voices found in the models directory.
pub struct PiperEngine {
    voices: Vec<PiperVoice>,
}

/// Genders of the voices we ship or know; others are listed as neutral.
fn known_gender(dataset: &str) -> &'static str {
    match dataset {
        "joe" | "ryan" | "lessac_male" | "john" | "bryce" | "danny" | "kusal" | "norman"
        | "alan" => "male",
        "amy" | "lessac" | "kathleen" | "kristin" | "ljspeech" | "hfc_female" | "jenny_dioco"
        | "alba" => "female",
        _ => "neutral",
    }
}

/// `<models>/piper/*.onnx` that have a `.onnx.json` beside them.
pub fn find_models(models_dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(models_dir.join("piper"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|e| e == "onnx") && config_path(p).exists());
    found.sort();
    found
}

fn config_path(model: &Path) -> PathBuf {
    let mut s = model.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

impl PiperEngine {
    /// Loads every Piper voice under `models_dir`; a voice that fails to
    /// load is reported and skipped.
    pub fn load(models_dir: &Path, threads: usize) -> Result<(Self, Vec<String>), String> {
        let models = find_models(models_dir);
        if models.is_empty() {
            return Err(format!(
                "no Piper voices in {}/piper (run scripts/models.sh)",
                models_dir.display()
            ));
        }
        let mut voices = Vec::new();
        let mut problems = Vec::new();
        for model in models {
            match load_voice(models_dir, &model, threads) {
                Ok(v) => voices.push(v),
                Err(e) => problems.push(format!("{}: {e}", model.display())),
            }
        }
        if voices.is_empty() {
            return Err(problems.join("; "));
        }
        Ok((Self { voices }, problems))
    }
}

fn load_voice(models_dir: &Path, model: &Path, threads: usize) -> Result<PiperVoice, String> {
    let text = std::fs::read_to_string(config_path(model)).map_err(|e| e.to_string())?;
    let config: PiperConfig =
        serde_json::from_str(&text).map_err(|e| format!("bad config: {e}"))?;
    let session = LazySession::new(models_dir, model, threads)?;
    let key = model
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("piper")
        .to_owned();
    let dataset = config
        .dataset
        .clone()
        .unwrap_or_else(|| key.split('-').nth(1).unwrap_or(&key).to_owned());
    let language = config
        .language
        .as_ref()
        .map(|l| bcp47(&l.code.replace('_', "-")))
        .unwrap_or_else(|| bcp47(&config.espeak.voice));
    let quality = config
        .audio
        .quality
        .clone()
        .unwrap_or_else(|| "medium".into());
    let lang_name = config
        .language
        .as_ref()
        .and_then(|l| l.name_english.clone())
        .unwrap_or_else(|| language.clone());
    let country = config
        .language
        .as_ref()
        .and_then(|l| l.country_english.clone());
    let mut name = dataset.clone();
    if let Some(first) = name.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    let info = VoiceInfo {
        id: voice_id("piper", &key),
        key,
        name: name.replace('_', " "),
        language: language.clone(),
        languages: vec![language],
        gender: known_gender(&dataset).to_owned(),
        accent: country.clone(),
        engine: "piper",
        quality: "medium",
        sample_rate: config.audio.sample_rate,
        description: format!(
            "Piper neural voice ({quality} quality), {lang_name}{}: natural and very fast.",
            country.map(|c| format!(" ({c})")).unwrap_or_default()
        ),
        espeak_voice: config.espeak.voice.clone(),
    };
    Ok(PiperVoice {
        info,
        config,
        session,
    })
}

/// Phoneme ids as Piper's training used them: `^`, then each phoneme
/// followed by the pad `_`, then `$`. Phonemes the voice does not know are
/// dropped.
pub fn phoneme_ids(map: &HashMap<String, Vec<i64>>, phonemes: &str) -> Vec<i64> {
    let id = |s: &str| map.get(s).cloned().unwrap_or_default();
    let pad = id("_");
    let mut ids = id("^");
    ids.extend(&pad);
    for ch in phonemes.chars() {
        if let Some(v) = map.get(ch.encode_utf8(&mut [0; 4]) as &str) {
            ids.extend(v);
            ids.extend(&pad);
        }
    }
    ids.extend(id("$"));
    ids
}

impl TextToSpeech for PiperEngine {
    fn engine(&self) -> &'static str {
        "piper"
    }

    fn warm(&self) -> Vec<String> {
        self.voices
            .iter()
            .filter_map(|v| v.session.load().err())
            .collect()
    }

    fn voices(&self) -> Vec<VoiceInfo> {
        self.voices.iter().map(|v| v.info.clone()).collect()
    }

    fn synthesize(&self, key: &str, sentence: &str, speed: f32) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        let phonemes = sentence_phonemes(&voice.config.espeak.voice, sentence, false)?;
        self.speak_phonemes(voice, &phonemes, speed)
    }

    fn synthesize_ipa(&self, key: &str, ipa: &str, speed: f32) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        self.speak_phonemes(voice, &format!("{ipa}."), speed)
    }
}

impl PiperEngine {
    fn voice(&self, key: &str) -> Result<&PiperVoice, TtsError> {
        self.voices
            .iter()
            .find(|v| v.info.key == key)
            .ok_or_else(|| TtsError::UnknownVoice(key.into()))
    }

    fn speak_phonemes(
        &self,
        voice: &PiperVoice,
        phonemes: &str,
        speed: f32,
    ) -> Result<Audio, TtsError> {
        let ids = phoneme_ids(&voice.config.phoneme_id_map, phonemes);
        let n = ids.len() as i64;
        let inf = &voice.config.inference;
        // The session first: it loads the runtime that tensors are made by.
        let mut session = voice.session.get().map_err(TtsError::Failed)?;
        let scales = vec![
            inf.noise_scale,
            inf.length_scale / speed.max(0.1),
            inf.noise_w,
        ];
        let mut inputs: Vec<(Cow<str>, SessionInputValue)> = vec![
            (
                "input".into(),
                Tensor::from_array((vec![1i64, n], ids))
                    .map_err(TtsError::of_run)?
                    .into(),
            ),
            (
                "input_lengths".into(),
                Tensor::from_array((vec![1i64], vec![n]))
                    .map_err(TtsError::of_run)?
                    .into(),
            ),
            (
                "scales".into(),
                Tensor::from_array((vec![3i64], scales))
                    .map_err(TtsError::of_run)?
                    .into(),
            ),
        ];
        if voice.config.num_speakers > 1 {
            inputs.push((
                "sid".into(),
                Tensor::from_array((vec![1i64], vec![0i64]))
                    .map_err(TtsError::of_run)?
                    .into(),
            ));
        }
        let stop = mediagen_onnx::Stoppable::here().map_err(TtsError::Failed)?;
        let outputs = session
            .run_with_options(inputs, stop.options())
            .map_err(TtsError::of_run)?;
        let (_, samples) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(TtsError::of_run)?;
        let mut audio = Audio::new(samples.to_vec(), voice.config.audio.sample_rate);
        // VITS output peaks vary by sentence; even them out.
        audio.normalize_peak(0.9);
        Ok(audio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_interleave_the_pad() {
        let map: HashMap<String, Vec<i64>> = [("_", 0), ("^", 1), ("$", 2), ("a", 5), ("b", 6)]
            .iter()
            .map(|(k, v)| (k.to_string(), vec![*v]))
            .collect();
        assert_eq!(phoneme_ids(&map, "ab?"), vec![1, 0, 5, 0, 6, 0, 2]);
    }
}
