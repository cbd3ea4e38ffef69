//! Kokoro-82M (int8 ONNX): the highest-quality voices. Phonemes come from
//! espeak-ng; for English they are mapped onto Kokoro's own phoneme set
//! (diphthongs and affricates as single symbols, American flaps and
//! r-colouring), for the other languages espeak-ng's IPA is used as is.
//! Each voice is a table of style vectors, one per input length.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use ort::session::SessionInputValue;

use mediagen_onnx::LazySession;
use ort::value::Tensor;

use crate::tts::espeak::sentence_phonemes;
use crate::tts::{voice_id, TextToSpeech, TtsError, VoiceInfo};
use mediagen_media::audio::Audio;

/// Kokoro's output rate.
pub const SAMPLE_RATE: u32 = 24_000;
const STYLE_DIM: usize = 256;
/// The longest token sequence the model takes (without the two pads).
const MAX_TOKENS: usize = 510;

/// What a voice-name prefix says: BCP-47 tag, espeak-ng voice, description.
fn language_of(prefix: char) -> Option<(&'static str, &'static str, &'static str)> {
    Some(match prefix {
        'a' => ("en-US", "en-us", "American English"),
        'b' => ("en-GB", "en-gb", "British English"),
        'e' => ("es-ES", "es", "Spanish"),
        'f' => ("fr-FR", "fr-fr", "French"),
        'h' => ("hi-IN", "hi", "Hindi"),
        'i' => ("it-IT", "it", "Italian"),
        'p' => ("pt-BR", "pt-br", "Brazilian Portuguese"),
        _ => return None,
    })
}

struct KokoroVoice {
    info: VoiceInfo,
    /// `MAX_TOKENS` rows of `STYLE_DIM` floats.
    styles: Vec<f32>,
}

pub struct KokoroEngine {
    session: LazySession,
    vocab: HashMap<char, i64>,
    voices: Vec<KokoroVoice>,
}

impl KokoroEngine {
    /// Loads `<models>/kokoro/kokoro-v1.0.int8.onnx`, its `config.json`
    /// (the phoneme vocabulary) and every voice in `<models>/kokoro/voices/`.
    pub fn load(models_dir: &Path, threads: usize) -> Result<Self, String> {
        let dir = models_dir.join("kokoro");
        let model = dir.join("kokoro-v1.0.int8.onnx");
        if !model.exists() {
            return Err(format!(
                "{} not found (run scripts/models.sh)",
                model.display()
            ));
        }
        let config: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("config.json"))
                .map_err(|e| format!("config.json: {e}"))?,
        )
        .map_err(|e| format!("config.json: {e}"))?;
        let vocab = config["vocab"]
            .as_object()
            .ok_or("config.json has no vocab")?
            .iter()
            .filter_map(|(k, v)| Some((k.chars().next()?, v.as_i64()?)))
            .collect();
        let mut voices = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(dir.join("voices"))
            .map_err(|e| format!("voices: {e}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "bin"))
            .collect();
        files.sort();
        for file in files {
            let key = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned();
            let mut chars = key.chars();
            let (Some(lang), Some(sex)) = (chars.next(), chars.next()) else {
                continue;
            };
            let Some((language, espeak_voice, language_name)) = language_of(lang) else {
                continue;
            };
            let bytes = std::fs::read(&file).map_err(|e| e.to_string())?;
            if bytes.len() != MAX_TOKENS * STYLE_DIM * 4 {
                tracing::warn!(file = %file.display(), "kokoro voice has an unexpected size; skipped");
                continue;
            }
            let styles = bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let gender = if sex == 'f' { "female" } else { "male" };
            let mut name = key
                .split_once('_')
                .map(|(_, n)| n.to_owned())
                .unwrap_or_else(|| key.clone());
            if let Some(first) = name.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            voices.push(KokoroVoice {
                info: VoiceInfo {
                    id: voice_id("kokoro", &key),
                    key,
                    name,
                    language: language.to_owned(),
                    languages: vec![language.to_owned()],
                    gender: gender.to_owned(),
                    accent: Some(language_name.to_owned()),
                    engine: "kokoro",
                    quality: "high",
                    sample_rate: SAMPLE_RATE,
                    description: format!("Kokoro neural voice, {language_name}, {gender}: the most natural voices here."),
                    espeak_voice: espeak_voice.to_owned(),
                },
                styles,
            });
        }
        if voices.is_empty() {
            return Err(format!("no Kokoro voices in {}/voices", dir.display()));
        }
        let session = LazySession::new(models_dir, &model, threads)?;
        Ok(Self {
            session,
            vocab,
            voices,
        })
    }
}

/// espeak-ng → Kokoro phoneme replacements for English, longest first.
/// `^` is espeak-ng's tie between the letters of one phoneme.
const EN_MAP: &[(&str, &str)] = &[
    ("ʔˌn\u{329}", "tᵊn"),
    ("ʔn\u{329}", "tᵊn"),
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("e^ɪ", "A"),
    ("ɔ^ɪ", "Y"),
    ("d^ʒ", "ʤ"),
    ("t^ʃ", "ʧ"),
    ("ə^l", "ᵊl"),
    ("ʔn", "tᵊn"),
    ("ɚ", "əɹ"),
    ("ʔ", "t"),
    ("e", "A"),
    ("r", "ɹ"),
    ("x", "k"),
    ("ç", "k"),
    ("ɐ", "ə"),
    ("ɬ", "l"),
    ("ʲ", ""),
];

/// Maps espeak-ng's English IPA (with ties) onto Kokoro's phoneme set.
pub fn english_phonemes(ipa: &str, british: bool) -> String {
    let mut s = ipa.to_owned();
    if british {
        s = s.replace("e^ə", "ɛː").replace("ə^ʊ", "Q");
    } else {
        s = s
            .replace("o^ʊ", "O")
            .replace("ɜːɹ", "ɜɹ")
            .replace("ɜː", "ɜɹ")
            .replace("ɪ^ə", "iə")
            .replace('ɾ', "T");
    }
    for (from, to) in EN_MAP {
        s = s.replace(from, to);
    }
    if !british {
        s = s.replace('ː', "");
    }
    // A syllabic consonant (C + U+0329) is spoken with a schwa before it.
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if *c == '\u{329}' {
            continue;
        }
        if chars.get(i + 1) == Some(&'\u{329}') {
            out.push('ᵊ');
        }
        out.push(*c);
    }
    out.replace('^', "")
}

impl KokoroEngine {
    fn tokens(&self, voice: &VoiceInfo, sentence: &str) -> Result<Vec<i64>, TtsError> {
        let english = voice.language.starts_with("en");
        let ipa = sentence_phonemes(&voice.espeak_voice, sentence, english)?;
        let phonemes = if english {
            english_phonemes(&ipa, voice.language == "en-GB")
        } else {
            ipa
        };
        Ok(self.ids(&phonemes))
    }
}

impl TextToSpeech for KokoroEngine {
    fn engine(&self) -> &'static str {
        "kokoro"
    }

    fn warm(&self) -> Vec<String> {
        self.session.load().err().into_iter().collect()
    }

    fn voices(&self) -> Vec<VoiceInfo> {
        self.voices.iter().map(|v| v.info.clone()).collect()
    }

    fn synthesize(&self, key: &str, sentence: &str, speed: f32) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        let ids = self.tokens(&voice.info, sentence)?;
        self.run(voice, ids, speed)
    }

    fn synthesize_ipa(&self, key: &str, ipa: &str, speed: f32) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        let phonemes = if voice.info.language.starts_with("en") {
            english_phonemes(&tie(ipa), voice.info.language == "en-GB")
        } else {
            ipa.to_owned()
        };
        let ids = self.ids(&format!("{phonemes}."));
        self.run(voice, ids, speed)
    }
}

/// Ties the two letters of English diphthongs and affricates in IPA written
/// without tie marks (as people write it in `<phoneme ph>`).
fn tie(ipa: &str) -> String {
    let mut s = ipa.to_owned();
    for pair in ["aɪ", "aʊ", "eɪ", "ɔɪ", "oʊ", "əʊ", "eə", "dʒ", "tʃ", "ɪə"] {
        let mut chars = pair.chars();
        let (a, b) = (
            chars.next().unwrap_or_default(),
            chars.next().unwrap_or_default(),
        );
        s = s.replace(pair, &format!("{a}^{b}"));
    }
    s
}

impl KokoroEngine {
    fn voice(&self, key: &str) -> Result<&KokoroVoice, TtsError> {
        self.voices
            .iter()
            .find(|v| v.info.key == key)
            .ok_or_else(|| TtsError::UnknownVoice(key.into()))
    }

    fn ids(&self, phonemes: &str) -> Vec<i64> {
        let mut ids: Vec<i64> = phonemes
            .chars()
            .filter_map(|c| self.vocab.get(&c).copied())
            .collect();
        ids.truncate(MAX_TOKENS - 2);
        ids
    }

    fn run(&self, voice: &KokoroVoice, ids: Vec<i64>, speed: f32) -> Result<Audio, TtsError> {
        // The style is chosen by the number of phoneme tokens.
        let row = ids.len().min(MAX_TOKENS - 1);
        let style = voice.styles[row * STYLE_DIM..(row + 1) * STYLE_DIM].to_vec();
        let mut tokens = Vec::with_capacity(ids.len() + 2);
        tokens.push(0);
        tokens.extend(ids);
        tokens.push(0);
        let n = tokens.len() as i64;
        let fail = |e: ort::Error| TtsError::Failed(e.to_string());
        // The session first: it loads the runtime that tensors are made by.
        let mut session = self.session.get().map_err(TtsError::Failed)?;
        let inputs: Vec<(Cow<str>, SessionInputValue)> = vec![
            (
                "tokens".into(),
                Tensor::from_array((vec![1i64, n], tokens))
                    .map_err(fail)?
                    .into(),
            ),
            (
                "style".into(),
                Tensor::from_array((vec![1i64, STYLE_DIM as i64], style))
                    .map_err(fail)?
                    .into(),
            ),
            (
                "speed".into(),
                Tensor::from_array((vec![1i64], vec![speed]))
                    .map_err(fail)?
                    .into(),
            ),
        ];
        let outputs = session.run(inputs).map_err(fail)?;
        let (_, samples) = outputs[0].try_extract_tensor::<f32>().map_err(fail)?;
        Ok(Audio::new(samples.to_vec(), SAMPLE_RATE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_ipa_maps_to_kokoro_symbols() {
        assert_eq!(english_phonemes("nˈa^ɪs dˈe^ɪ", false), "nˈIs dˈA");
        assert_eq!(english_phonemes("həlˈo^ʊ", false), "həlˈO");
        assert_eq!(english_phonemes("bˈʌɾɚ d^ʒˈʌd^ʒ", false), "bˈʌTəɹ ʤˈʌʤ");
        assert_eq!(
            english_phonemes("ɡˌə^ʊ hˈə^ʊm nˈɜːs", true),
            "ɡˌQ hˈQm nˈɜːs"
        );
        assert_eq!(english_phonemes("bˈʌʔn\u{329}", false), "bˈʌtᵊn");
    }
}
