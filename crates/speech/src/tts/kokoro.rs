//! Kokoro-82M (int8 ONNX): the highest-quality voices. Each voice's
//! language is read by a [`G2p`]: espeak-ng, whose English phonemes are
//! mapped onto Kokoro's own set (diphthongs and affricates as single
//! symbols, American flaps and r-colouring) and whose IPA is used as is for
//! the other languages; Japanese and Mandarin by the phonemizers their
//! voices were trained with ([`crate::tts::g2p`]).
//! Each voice is a table of style vectors, one per input length.
//!
//! The model runs in two halves (cut as it loads, [`mediagen_onnx::split`]):
//! the front predicts, for the whole sentence, everything the vocoder reads
//! (text features aligned to frames, pitch and energy curves, the harmonic
//! source's phase) and the phonemes' durations; the back, the vocoder,
//! turns frames into sound. Nine tenths of the time is the vocoder's, and
//! the leading pause the model predicts (0.35–0.45 s, trimmed off after)
//! is most of a short sentence: the vocoder runs from just before the
//! speech.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use ort::session::SessionInputValue;

use mediagen_onnx::split::Halves;
use mediagen_onnx::LazySession;
use ort::value::Tensor;

use crate::tts::espeak::sentence_phonemes;
use crate::tts::g2p::{with_foreign, G2p, G2pLanguage, Phonemizer, WithLatin};
use crate::tts::{voice_id, Foreign, Style, TextToSpeech, TtsError, VoiceInfo};
use mediagen_media::audio::{resample, Audio};

/// Kokoro's output rate.
pub const SAMPLE_RATE: u32 = 24_000;
/// Numbers in one style vector: the first half drives the vocoder (timbre),
/// the second the duration and pitch predictor (prosody).
pub const STYLE_DIM: usize = 256;
/// The longest token sequence the model takes (without the two pads).
const MAX_TOKENS: usize = 510;
/// Rows of a voice's style table: one per input length in tokens.
pub const STYLE_ROWS: usize = MAX_TOKENS;

/// Where the model is cut (names in `kokoro-v1.0.int8.onnx`): the text
/// features aligned to frames `[1, 512, T]`, the pitch and energy curves
/// `[1, 2T]`, the harmonic source's phase `[1, 9, 2T]`.
const ASR: &str = "/encoder/MatMul_1_output_0";
const PITCH: &str = "/encoder/Reshape_output_0";
const ENERGY: &str = "/encoder/Reshape_1_output_0";
const PHASE: &str = "/decoder/decoder/generator/m_source/l_sin_gen/Mul_4_output_0";
/// The predicted duration of each token, in frames (`[1, tokens]`).
const DURATIONS: &str = "/encoder/Cast_output_0";
/// Samples of speech per point of the pitch curve (two a frame).
const PITCH_HOP: f64 = 300.0;
/// The range a clone's pitch factor is kept in.
pub const PITCH_RANGE: (f32, f32) = (0.5, 2.0);
/// The range a clone's formant factor is kept in.
pub const FORMANT_RANGE: (f32, f32) = (0.8, 1.25);
/// Formant factors are rounded to steps of this many hertz of the rate the
/// speech is played at (the resampler's ratios stay small).
const FORMANT_STEP: f32 = 200.0;

/// The rate speech made for formant factor `factor` is played at: `factor`
/// times the engine's, bounded by [`FORMANT_RANGE`], rounded to
/// [`FORMANT_STEP`].
fn formant_rate(factor: f32) -> u32 {
    let factor = factor.clamp(FORMANT_RANGE.0, FORMANT_RANGE.1);
    ((SAMPLE_RATE as f32 * factor / FORMANT_STEP).round() * FORMANT_STEP) as u32
}
/// Frames of the predicted leading pause (the first pad's duration,
/// 14–18 frames) vocoded before the speech. The vocoder normalises over
/// the frames it is given, so fewer make the sentence a little quieter:
/// with 6 frames 0.4–1.3 dB (3 frames: 0.6–1.9 dB) on five sentences
/// (docs/voice.md).
const MARGIN: usize = 6;

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
        // Read by their own phonemizers (`g2p_language`).
        'j' => ("ja-JP", "ja", "Japanese"),
        'z' => ("zh-CN", "cmn", "Mandarin Chinese"),
        _ => return None,
    })
}

/// The phonemizer a voice-name prefix's language is read by, where it is
/// not espeak-ng (which reads no kanji, and Mandarin without Kokoro's
/// tone marks).
fn g2p_language(prefix: char) -> Option<G2pLanguage> {
    match prefix {
        'j' => Some(G2pLanguage::Japanese),
        'z' => Some(G2pLanguage::Mandarin),
        _ => None,
    }
}

struct KokoroVoice {
    info: VoiceInfo,
    /// How its language is read.
    g2p: Arc<dyn G2p>,
    /// `STYLE_ROWS` rows of `STYLE_DIM` floats.
    styles: Vec<f32>,
}

pub struct KokoroEngine {
    /// Phonemes to frames (everything but the vocoder).
    front: LazySession,
    /// Frames to sound (the vocoder).
    back: LazySession,
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
        // One phonemizer (one process) per language, shared by its voices.
        let mut readers: HashMap<G2pLanguage, Option<Arc<dyn G2p>>> = HashMap::new();
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
            let g2p = match g2p_language(lang) {
                None => Arc::new(Espeak::of(language, espeak_voice)),
                Some(g2p) => {
                    let reader = readers
                        .entry(g2p)
                        .or_insert_with(|| phonemizer_reader(models_dir, g2p));
                    let Some(reader) = reader.clone() else {
                        tracing::warn!(voice = %key, "no {language_name} phonemizer (scripts/g2p.sh {}): the voice is left out", g2p.code());
                        continue;
                    };
                    reader
                }
            };
            let bytes = std::fs::read(&file).map_err(|e| e.to_string())?;
            if bytes.len() != STYLE_ROWS * STYLE_DIM * 4 {
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
                g2p,
                styles,
            });
        }
        if voices.is_empty() {
            return Err(format!("no Kokoro voices in {}/voices", dir.display()));
        }
        // The file is read and cut once: each half is kept until its own
        // session is built.
        let cut: std::sync::Arc<std::sync::Mutex<Option<Halves>>> = Default::default();
        let half = |front: bool| {
            let (model, cut) = (model.clone(), cut.clone());
            move || {
                let mut kept = cut.lock().unwrap_or_else(|e| e.into_inner());
                if kept.as_mut().is_none_or(|h| half_of(h, front).is_empty()) {
                    let bytes = std::fs::read(&model).map_err(|e| e.to_string())?;
                    let parts = [ASR, PITCH, ENERGY, PHASE];
                    *kept = Some(mediagen_onnx::split::split(&bytes, &parts, &[DURATIONS])?);
                }
                let halves = kept.as_mut().expect("cut above");
                let mine = std::mem::take(half_of(halves, front));
                if halves.front.is_empty() && halves.back.is_empty() {
                    *kept = None;
                }
                Ok(mine)
            }
        };
        Ok(Self {
            front: LazySession::derived(models_dir, &model, threads, half(true))?,
            back: LazySession::derived(models_dir, &model, threads, half(false))?,
            vocab,
            voices,
        })
    }
}

/// The front or the back of a model cut in two.
fn half_of(halves: &mut Halves, front: bool) -> &mut Vec<u8> {
    if front {
        &mut halves.front
    } else {
        &mut halves.back
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

/// How a language with a phonemizer of its own is read, if `scripts/g2p.sh`
/// installed it: Latin-script words inside Chinese by the English reader.
fn phonemizer_reader(models_dir: &Path, language: G2pLanguage) -> Option<Arc<dyn G2p>> {
    let phonemizer = Arc::new(Phonemizer::find(models_dir, language)?);
    Some(match language {
        G2pLanguage::Japanese => phonemizer,
        G2pLanguage::Mandarin => Arc::new(WithLatin {
            latin: Arc::new(Espeak::of("en-US", "en-us")),
            rest: phonemizer,
        }),
    })
}

/// espeak-ng's phonemes of a language, mapped onto Kokoro's own set for
/// English ([`english_phonemes`]) and used as they are for the others.
struct Espeak {
    voice: &'static str,
    /// `Some(british)` for English.
    english: Option<bool>,
}

impl Espeak {
    fn of(language: &str, voice: &'static str) -> Self {
        Self {
            voice,
            english: language.starts_with("en").then_some(language == "en-GB"),
        }
    }
}

impl G2p for Espeak {
    fn phonemes(&self, sentence: &str) -> Result<String, TtsError> {
        let ipa = sentence_phonemes(self.voice, sentence, self.english.is_some())?;
        Ok(match self.english {
            Some(british) => english_phonemes(&ipa, british),
            None => ipa,
        })
    }
}

impl TextToSpeech for KokoroEngine {
    fn engine(&self) -> &'static str {
        "kokoro"
    }

    fn warm(&self) -> Vec<String> {
        [self.front.load(), self.back.load()]
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }

    fn voices(&self) -> Vec<VoiceInfo> {
        self.voices.iter().map(|v| v.info.clone()).collect()
    }

    fn synthesize(&self, key: &str, sentence: &str, speed: f32) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        let ids = self.ids(&voice.g2p.phonemes(sentence)?);
        self.speak_ids(Style::plain(&voice.styles), ids, speed)
    }

    fn synthesize_ipa(&self, key: &str, ipa: &str, speed: f32) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        let phonemes = if voice.info.language.starts_with("en") {
            english_phonemes(&tie(ipa), voice.info.language == "en-GB")
        } else {
            ipa.to_owned()
        };
        let ids = self.ids(&format!("{phonemes}."));
        self.speak_ids(Style::plain(&voice.styles), ids, speed)
    }

    fn style_table(&self, key: &str) -> Option<Vec<f32>> {
        self.voice(key).ok().map(|v| v.styles.clone())
    }

    fn synthesize_styles(
        &self,
        style: Style,
        key: &str,
        sentence: &str,
        speed: f32,
    ) -> Result<Audio, TtsError> {
        full_table(&style)?;
        let ids = self.ids(&self.voice(key)?.g2p.phonemes(sentence)?);
        self.speak_ids(style, ids, speed)
    }

    /// The foreign words read by espeak-ng in their language (Kokoro's
    /// symbols are espeak-ng's IPA), inside the sentence's own phonemes: one
    /// utterance, no pause around them. Words of a language no Kokoro voice
    /// reads by espeak-ng, or of the voice's own, are read as its own.
    fn synthesize_foreign(
        &self,
        style: Option<Style>,
        key: &str,
        sentence: &str,
        foreign: &Foreign,
        speed: f32,
    ) -> Result<Audio, TtsError> {
        let voice = self.voice(key)?;
        let style = style.unwrap_or(Style::plain(&voice.styles));
        let own = voice.info.language.split('-').next() == Some(foreign.language.as_str());
        let Some(reader) = espeak_reader(&foreign.language).filter(|_| !own) else {
            return self.synthesize_styles(style, key, sentence, speed);
        };
        full_table(&style)?;
        let phonemes = with_foreign(voice.g2p.as_ref(), &reader, sentence, &foreign.words)?;
        self.speak_ids(style, self.ids(&phonemes), speed)
    }
}

/// A style table must be a whole one ([`STYLE_ROWS`] × [`STYLE_DIM`]).
fn full_table(style: &Style) -> Result<(), TtsError> {
    if style.table.len() != STYLE_ROWS * STYLE_DIM {
        return Err(TtsError::Failed("a style table of the wrong size".into()));
    }
    Ok(())
}

/// The espeak-ng reader of ISO 639-1 `language` as Kokoro's voices of it
/// are read (American for English), if one of them is read by espeak-ng.
fn espeak_reader(language: &str) -> Option<Espeak> {
    "abefhip".chars().find_map(|prefix| {
        let (tag, voice, _) = language_of(prefix)?;
        (tag.split('-').next() == Some(language)).then(|| Espeak::of(tag, voice))
    })
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
    /// The style table of stock voice `key`: [`STYLE_ROWS`] rows of
    /// [`STYLE_DIM`] floats.
    pub fn styles(&self, key: &str) -> Result<&[f32], TtsError> {
        Ok(&self.voice(key)?.styles)
    }

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

    /// One sentence's tokens spoken: the front half on all of them, the
    /// vocoder from just before the speech.
    ///
    /// A formant factor `k` other than 1 is the speech made `k` times
    /// longer at `1/k` the pitch and played `k` times faster (resampled
    /// from `k` times the rate): its timing and pitch come back, every
    /// other frequency (the formants) is `k` times what it was.
    fn speak_ids(&self, style: Style, ids: Vec<i64>, speed: f32) -> Result<Audio, TtsError> {
        let warp = formant_rate(style.formant);
        let k = warp as f32 / SAMPLE_RATE as f32;
        let mut frames = self.predict(style.table, ids, speed * style.pace / k)?;
        frames.repitch(style.pitch / k);
        let mut samples = self.vocode(&frames, frames.speech())?;
        // Every voice speaks here: ×1 (every stock voice) is not copied.
        if warp != SAMPLE_RATE {
            samples = resample(&samples, warp, SAMPLE_RATE);
        }
        Ok(Audio::new(samples, SAMPLE_RATE))
    }

    /// The front half on one sentence's tokens: its frames.
    fn predict(&self, styles: &[f32], ids: Vec<i64>, speed: f32) -> Result<Frames, TtsError> {
        // The style is chosen by the number of phoneme tokens.
        let row = ids.len().min(MAX_TOKENS - 1);
        let style = styles[row * STYLE_DIM..(row + 1) * STYLE_DIM].to_vec();
        let mut tokens = Vec::with_capacity(ids.len() + 2);
        tokens.push(0);
        tokens.extend(ids);
        tokens.push(0);
        let n = tokens.len() as i64;
        // The session first: it loads the runtime that tensors are made by.
        let mut session = self.front.get().map_err(TtsError::Failed)?;
        let inputs: Vec<(Cow<str>, SessionInputValue)> = vec![
            ("tokens".into(), tensor(vec![1, n], tokens)?),
            (
                "style".into(),
                tensor(vec![1, STYLE_DIM as i64], style.clone())?,
            ),
            ("speed".into(), tensor(vec![1], vec![speed])?),
        ];
        let stop = mediagen_onnx::Stoppable::here().map_err(TtsError::Failed)?;
        let outputs = session
            .run_with_options(inputs, stop.options())
            .map_err(TtsError::of_run)?;
        let floats = |name: &str| -> Result<(Vec<i64>, Vec<f32>), TtsError> {
            let (shape, v) = outputs[name]
                .try_extract_tensor::<f32>()
                .map_err(TtsError::of_run)?;
            Ok((shape.to_vec(), v.to_vec()))
        };
        let (asr_shape, asr) = floats(ASR)?;
        let (_, pitch) = floats(PITCH)?;
        let (_, energy) = floats(ENERGY)?;
        let (phase_shape, phase) = floats(PHASE)?;
        let (_, durations) = outputs[DURATIONS]
            .try_extract_tensor::<i64>()
            .map_err(TtsError::of_run)?;
        let count = asr_shape.last().copied().unwrap_or(0).max(0) as usize;
        let frames = Frames {
            channels: asr.len() / count.max(1),
            harmonics: phase_shape.get(1).copied().unwrap_or(1).max(1) as usize,
            count,
            asr,
            pitch,
            energy,
            phase,
            lead: durations.first().map_or(0, |d| (*d).max(0) as usize),
            style,
        };
        if frames.pitch.len() != 2 * count
            || frames.energy.len() != 2 * count
            || frames.phase.len() != 2 * count * frames.harmonics
            || frames.asr.len() != frames.channels * count
        {
            return Err(TtsError::Failed("the model's frames do not line up".into()));
        }
        Ok(frames)
    }

    /// The back half on the frames of `window`: their sound.
    fn vocode(&self, f: &Frames, window: Range<usize>) -> Result<Vec<f32>, TtsError> {
        let t = window.len();
        let rows = |v: &[f32], rows: usize, per: usize| -> Vec<f32> {
            let len = v.len() / rows;
            (0..rows)
                .flat_map(|r| &v[r * len + per * window.start..r * len + per * window.end])
                .copied()
                .collect()
        };
        let mut session = self.back.get().map_err(TtsError::Failed)?;
        let (c, h) = (f.channels as i64, f.harmonics as i64);
        let inputs: Vec<(Cow<str>, SessionInputValue)> = vec![
            (
                "style".into(),
                tensor(vec![1, STYLE_DIM as i64], f.style.clone())?,
            ),
            (
                ASR.into(),
                tensor(vec![1, c, t as i64], rows(&f.asr, f.channels, 1))?,
            ),
            (
                PITCH.into(),
                tensor(vec![1, 2 * t as i64], rows(&f.pitch, 1, 2))?,
            ),
            (
                ENERGY.into(),
                tensor(vec![1, 2 * t as i64], rows(&f.energy, 1, 2))?,
            ),
            (
                PHASE.into(),
                tensor(vec![1, h, 2 * t as i64], rows(&f.phase, f.harmonics, 2))?,
            ),
        ];
        let stop = mediagen_onnx::Stoppable::here().map_err(TtsError::Failed)?;
        let outputs = session
            .run_with_options(inputs, stop.options())
            .map_err(TtsError::of_run)?;
        let (_, samples) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(TtsError::of_run)?;
        Ok(samples.to_vec())
    }
}

/// What the front half predicts for one sentence.
struct Frames {
    /// Frames.
    count: usize,
    channels: usize,
    harmonics: usize,
    /// `[channels, count]`.
    asr: Vec<f32>,
    /// `2 × count` each.
    pitch: Vec<f32>,
    energy: Vec<f32>,
    /// `[harmonics, 2 × count]`.
    phase: Vec<f32>,
    /// Frames of the leading pause (the first pad's duration).
    lead: usize,
    style: Vec<f32>,
}

impl Frames {
    /// The pitch curve times `factor` (bounded by [`PITCH_RANGE`]), and the
    /// harmonic source's phase made again from it: harmonic `h` (from 1)
    /// advances `2π·h·f0/rate` a sample, summed over the curve's points
    /// ([`PITCH_HOP`] samples each), as the model makes it.
    fn repitch(&mut self, factor: f32) {
        let factor = factor.clamp(PITCH_RANGE.0, PITCH_RANGE.1);
        if factor == 1.0 {
            return;
        }
        self.pitch.iter_mut().for_each(|f0| *f0 *= factor);
        let n = self.pitch.len();
        let per_hz = std::f64::consts::TAU * PITCH_HOP / f64::from(SAMPLE_RATE);
        for (h, phase) in self.phase.chunks_exact_mut(n.max(1)).enumerate() {
            let mut sum = 0.0f64;
            for (p, f0) in phase.iter_mut().zip(&self.pitch) {
                sum += per_hz * (h + 1) as f64 * f64::from(*f0);
                *p = sum as f32;
            }
        }
    }

    /// The frames from just before the speech to the end.
    fn speech(&self) -> Range<usize> {
        self.lead
            .saturating_sub(MARGIN)
            .min(self.count.saturating_sub(1))..self.count
    }
}

fn tensor<T: ort::value::PrimitiveTensorElementType + std::fmt::Debug + Clone + 'static>(
    shape: Vec<i64>,
    data: Vec<T>,
) -> Result<SessionInputValue<'static>, TtsError> {
    Ok(Tensor::from_array((shape, data))
        .map_err(TtsError::of_run)?
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(lead: usize, count: usize) -> Frames {
        Frames {
            count,
            channels: 0,
            harmonics: 1,
            asr: Vec::new(),
            pitch: Vec::new(),
            energy: Vec::new(),
            phase: Vec::new(),
            lead,
            style: Vec::new(),
        }
    }

    #[test]
    fn the_vocoder_starts_just_before_the_speech() {
        assert_eq!(frames(17, 60).speech(), 11..60);
        assert_eq!(frames(4, 60).speech(), 0..60);
        // A pause predicted longer than the sentence leaves a frame.
        assert_eq!(frames(90, 60).speech(), 59..60);
    }

    #[test]
    fn a_formant_factor_is_a_rate_the_resampler_pairs() {
        // ×1 is the engine's own rate: nothing is resampled.
        assert_eq!(formant_rate(1.0), SAMPLE_RATE);
        assert_eq!(formant_rate(1.0004), SAMPLE_RATE);
        assert_eq!(formant_rate(0.85), 20_400);
        // Bounded.
        assert_eq!(formant_rate(0.5), 19_200);
        assert_eq!(formant_rate(3.0), 30_000);
    }

    #[test]
    fn a_pitch_factor_scales_the_curve_and_the_harmonics_phase() {
        let mut f = frames(0, 2);
        (f.harmonics, f.pitch) = (2, vec![100.0, 100.0, 5.0, 200.0]);
        f.phase = vec![9.0; 8];
        f.repitch(1.0);
        assert_eq!(f.phase, vec![9.0; 8], "as predicted");
        f.repitch(2.0);
        assert_eq!(f.pitch, vec![200.0, 200.0, 10.0, 400.0]);
        // 2π·300·f0/24000 a point for the first harmonic, twice that for
        // the second.
        let step = std::f32::consts::TAU * 300.0 / 24_000.0;
        let want = [200.0, 400.0, 410.0, 810.0].map(|cycles| step * cycles);
        for (h, phase) in f.phase.chunks(4).enumerate() {
            for (got, want) in phase.iter().zip(want) {
                assert!((got - want * (h + 1) as f32).abs() < 1e-3, "{phase:?}");
            }
        }
        // Bounded: a factor of 5 is taken as 2.
        f.repitch(5.0);
        assert_eq!(f.pitch, vec![400.0, 400.0, 20.0, 800.0]);
    }

    /// Needs espeak-ng (`scripts/setup.sh` installs it).
    #[test]
    fn a_foreign_word_is_read_by_its_own_language() {
        let spanish = espeak_reader("es").unwrap();
        let english = espeak_reader("en").unwrap();
        assert!(
            espeak_reader("de").is_none(),
            "no Kokoro voice reads German"
        );
        let words = ["creepy".to_owned()];
        let plain = spanish.phonemes("Era terrible y creepy.").unwrap();
        let read = with_foreign(&spanish, &english, "Era terrible y creepy.", &words).unwrap();
        // The Spanish reading is kept around the word, which is English
        // (its r the English approximant, not the Spanish tap; a long i).
        let word = english.phonemes("creepy").unwrap();
        assert!(read.ends_with(&format!(" {word}.")), "{read} / {word}");
        assert!(word.contains('ɹ') && !word.contains('ɾ'), "{word}");
        assert!(plain.contains('ɾ'), "{plain}");
        assert_eq!(
            read.split(' ').next(),
            plain.split(' ').next(),
            "{read} / {plain}"
        );
    }

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
