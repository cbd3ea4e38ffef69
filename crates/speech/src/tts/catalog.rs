use mediagen_core::Capability;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::tts::espeak::{self, EspeakEngine};
use crate::tts::kokoro::KokoroEngine;
use crate::tts::normalize::normalize;
use crate::tts::piper::PiperEngine;
use crate::tts::ssml::{self, Segment};
use crate::tts::{text, Foreign, Style, TextToSpeech, TtsError, VoiceInfo};
use crate::voice::{analyse, VoiceProfile, RATE as VOICE_RATE};
use mediagen_media::audio::{resample, Audio};
use mediagen_speakers::encoder::{Embedding, SpeakerEncoder};

/// Pause between sentences, seconds.
const SENTENCE_GAP: f64 = 0.12;

/// What start-up found of one engine.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineStatus {
    pub engine: &'static str,
    /// The model's name, where requests pick models by name (speech-to-text).
    pub name: Option<String>,
    pub kind: Capability,
    pub available: bool,
    pub voices: usize,
    /// Where it loaded from, or why it is missing.
    pub detail: String,
}

/// What a voice is matched on: its profile, and its speaker embedding with
/// the encoder that made it (catalog voices are embedded by the same one).
#[derive(Clone, Copy)]
pub struct Likeness<'a> {
    pub profile: &'a VoiceProfile,
    pub print: Option<(&'a Embedding, &'a SpeakerEncoder)>,
}

impl<'a> Likeness<'a> {
    /// Matched on the profile alone.
    pub fn profile(profile: &'a VoiceProfile) -> Self {
        Likeness {
            profile,
            print: None,
        }
    }
}

/// Every voice of every engine found at start-up, by id.
#[derive(Default)]
pub struct TtsCatalog {
    engines: Vec<Arc<dyn TextToSpeech>>,
    voices: Vec<VoiceInfo>,
    engine_of: HashMap<String, usize>,
    status: Vec<EngineStatus>,
    /// Voice profiles of catalog voices, measured on first use.
    profiles: Mutex<HashMap<String, VoiceProfile>>,
    /// Speaker embeddings of catalog voices, made on first use.
    voiceprints: Mutex<HashMap<String, Embedding>>,
    /// Where measured profiles are also kept across restarts (derived from
    /// the models, so beside them: `<models>/.profiles/`); `None` keeps
    /// them in memory only.
    profile_dir: Option<std::path::PathBuf>,
}

/// Bumped when the measurement changes, so older kept profiles are redone.
const PROFILE_VERSION: u32 = 1;
/// The same for voiceprints.
const VOICEPRINT_VERSION: u32 = 1;

/// What a catalog voice reads to have its profile measured (a few
/// sentences with varied vowels; numbers for languages without a text).
fn profile_text(language: &str) -> &'static str {
    match language.get(..2).unwrap_or("") {
        "en" => {
            "The rainbow is a division of white light into many beautiful colors. \
                 These take the shape of a long round arch, with its path high above, \
                 and its two ends apparently beyond the horizon."
        }
        "es" => {
            "El arco iris es la división de la luz blanca en muchos colores hermosos. \
                 Tiene la forma de un arco largo y redondo, con su camino muy alto, \
                 y sus dos extremos más allá del horizonte."
        }
        "fr" => {
            "L'arc-en-ciel divise la lumière blanche en de nombreuses belles couleurs. \
                 Il prend la forme d'un long arc arrondi, très haut dans le ciel, \
                 et ses deux extrémités semblent au-delà de l'horizon."
        }
        "it" => {
            "L'arcobaleno divide la luce bianca in molti bei colori. \
                 Ha la forma di un lungo arco rotondo, alto nel cielo, \
                 e le sue due estremità sembrano oltre l'orizzonte."
        }
        "pt" => {
            "O arco-íris divide a luz branca em muitas cores bonitas. \
                 Tem a forma de um longo arco redondo, muito alto no céu, \
                 e as suas duas pontas parecem estar além do horizonte."
        }
        "de" => {
            "Der Regenbogen teilt das weiße Licht in viele schöne Farben. \
                 Er hat die Form eines langen runden Bogens, hoch am Himmel, \
                 und seine beiden Enden liegen scheinbar hinter dem Horizont."
        }
        "ja" => {
            "虹は白い光をたくさんの美しい色に分けます。\
                 長く丸いアーチの形をしていて、空の高いところにかかり、\
                 その両端は地平線の向こうにあるように見えます。"
        }
        "zh" => {
            "彩虹把白色的光分成许多美丽的颜色。\
                 它的形状像一座又长又圆的拱门，高高地挂在天空中，\
                 两端好像在地平线的另一边。"
        }
        _ => "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20.",
    }
}

/// How unlike two voices sound: pitch and formants on a log scale (the
/// formants count double: pitch is moved by conversion anyway).
fn distance(a: &VoiceProfile, b: &VoiceProfile) -> f64 {
    let ln = |x: f64, y: f64| (x.max(1.0) / y.max(1.0)).ln().abs();
    ln(a.pitch_median, b.pitch_median) + 2.0 * ln(a.centroid, b.centroid)
}

/// Weight of the speaker encoder's dissimilarity (1 − cosine) beside the
/// profile [`distance`]: equal. Different people's voices score 0.35–0.5
/// apart (similarities of 0.5–0.65, docs/voice.md), the same voice much
/// less, so the embedding decides between candidates of like pitch.
const VOICEPRINT_WEIGHT: f64 = 1.0;

/// A measurement kept on disk, if it is there and readable.
fn read_kept<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
}

/// Keeps a measurement on disk (written aside, then renamed into place).
/// Best effort: a read-only models directory keeps it in memory only.
fn keep<T: serde::Serialize>(path: Option<&Path>, value: &T) {
    let Some(path) = path else { return };
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let tmp = path.with_extension(format!(
                "{}-{:?}.tmp",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::write(&tmp, serde_json::to_vec(value).unwrap_or_default())?;
            std::fs::rename(&tmp, path)
        });
    if let Err(e) = written {
        tracing::debug!(error = %e, "voice measurement not kept on disk");
    }
}

impl TtsCatalog {
    /// Loads the engines whose programs and models are present. A missing
    /// engine is reported (log line and [`TtsCatalog::status`]), never fatal.
    pub fn discover(models_dir: &Path, threads: usize) -> Self {
        let mut catalog = Self {
            profile_dir: Some(models_dir.join(".profiles")),
            ..Self::default()
        };
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
            name: None,
            engine: engine.engine(),
            kind: Capability::TextToSpeech,
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
            name: None,
            engine,
            kind: Capability::TextToSpeech,
            available: false,
            voices: 0,
            detail: reason,
        });
    }

    /// Loads every engine's models now (a worker warming up, so its first
    /// request does not wait); what failed, with why.
    pub fn warm(&self) -> Vec<String> {
        self.engines.iter().flat_map(|e| e.warm()).collect()
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

    /// The voice profile of a catalog voice, measured once (the voice
    /// reads a few sentences in its language) and then kept. Blocking.
    pub fn profile(&self, voice_id: &str) -> Result<VoiceProfile, TtsError> {
        let file = format!("{voice_id}.v{PROFILE_VERSION}.json");
        self.measured(&self.profiles, voice_id, &file, |samples| {
            analyse(&[samples])
                .map_err(|e| TtsError::Failed(format!("the voice cannot be measured: {e}")))
        })
    }

    /// How a catalog voice sounds to the speaker encoder: the embedding of
    /// the text its profile is measured on, made once and then kept (in
    /// memory and beside the profiles). Blocking.
    pub fn voiceprint(
        &self,
        voice_id: &str,
        encoder: &SpeakerEncoder,
    ) -> Result<Embedding, TtsError> {
        let file = format!("{voice_id}.ge2e.v{VOICEPRINT_VERSION}.json");
        self.measured(&self.voiceprints, voice_id, &file, |samples| {
            encoder
                .embed_at(&samples, VOICE_RATE)
                .map_err(|e| TtsError::Failed(format!("the voice cannot be embedded: {e}")))
        })
    }

    /// A measurement of a catalog voice: from `cache`, else from `file`
    /// beside the profiles, else made by `measure` from the voice reading
    /// its profile text, and kept in both.
    fn measured<T>(
        &self,
        cache: &Mutex<HashMap<String, T>>,
        voice_id: &str,
        file: &str,
        measure: impl FnOnce(Vec<f32>) -> Result<T, TtsError>,
    ) -> Result<T, TtsError>
    where
        T: Clone + serde::Serialize + serde::de::DeserializeOwned,
    {
        if let Some(m) = cache.lock().expect("measurements").get(voice_id) {
            return Ok(m.clone());
        }
        let m = self.kept(voice_id, file, || {
            measure(self.read_profile_text(voice_id)?)
        })?;
        cache
            .lock()
            .expect("measurements")
            .insert(voice_id.to_owned(), m.clone());
        Ok(m)
    }

    /// A measurement of catalog voice `voice_id` kept in `file` beside the
    /// profiles (derived from the models, so it lasts across restarts),
    /// else made by `measure` and kept there. `file` is a name of the
    /// caller's making, never user text. Blocking.
    pub fn kept<T>(
        &self,
        voice_id: &str,
        file: &str,
        measure: impl FnOnce() -> Result<T, TtsError>,
    ) -> Result<T, TtsError>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        // Only a catalog voice's id ever names a file.
        if self.voice(voice_id).is_none() {
            return Err(TtsError::UnknownVoice(voice_id.into()));
        }
        let kept = self.profile_dir.as_ref().map(|d| d.join(file));
        if let Some(m) = kept.as_deref().and_then(read_kept) {
            return Ok(m);
        }
        let m = measure()?;
        keep(kept.as_deref(), &m);
        Ok(m)
    }

    /// The voice reading its profile text, at the rate voices are measured.
    fn read_profile_text(&self, voice_id: &str) -> Result<Vec<f32>, TtsError> {
        let voice = self
            .voice(voice_id)
            .ok_or_else(|| TtsError::UnknownVoice(voice_id.into()))?;
        let audio = self.speak(voice_id, profile_text(&voice.language), 1.0, |_, _, _| true)?;
        Ok(resample(&audio.samples, audio.sample_rate, VOICE_RATE))
    }

    /// The catalog voices that may speak for a voice of `gender` in
    /// `language` (see [`mediagen_core::voice::candidates`]).
    pub fn candidates(&self, gender: &str, language: &str) -> Vec<&VoiceInfo> {
        mediagen_core::voice::candidates(&self.voices, gender, language)
    }

    /// The candidate (see [`TtsCatalog::candidates`]) nearest to `profile`
    /// in pitch and formants. Blocking (measures voices not measured yet).
    pub fn closest(&self, profile: &VoiceProfile, language: &str) -> Option<&VoiceInfo> {
        self.closest_except(&Likeness::profile(profile), language, &[])
    }

    /// The candidate nearest to `like` (pitch and formants, and how it
    /// sounds to the speaker encoder when `like` has a voiceprint) among
    /// those not in `taken` (voice ids), so that several speakers get
    /// voices of their own; the nearest of all when every candidate is
    /// taken. Blocking.
    pub fn closest_except(
        &self,
        like: &Likeness,
        language: &str,
        taken: &[String],
    ) -> Option<&VoiceInfo> {
        let mut ranked: Vec<(&VoiceInfo, f64)> = self
            .candidates(&like.profile.gender, language)
            .into_iter()
            .filter_map(|v| {
                let mut d = distance(&self.profile(&v.id).ok()?, like.profile);
                if let Some((print, encoder)) = like.print {
                    match self.voiceprint(&v.id, encoder) {
                        Ok(theirs) => {
                            d += VOICEPRINT_WEIGHT * (1.0 - f64::from(theirs.similarity(print)))
                        }
                        Err(e) => tracing::warn!(voice = %v.id, "voice not embedded: {e}"),
                    }
                }
                Some((v, d))
            })
            .collect();
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
        ranked
            .iter()
            .find(|(v, _)| !taken.contains(&v.id))
            .or(ranked.first())
            .map(|(v, _)| *v)
    }

    /// Catalog voice `voice_id`'s style table, when its engine has them.
    pub fn style_table(&self, voice_id: &str) -> Option<Vec<f32>> {
        let voice = self.voice(voice_id)?;
        self.engines[*self.engine_of.get(voice_id)?].style_table(&voice.key)
    }

    /// What each piece [`Self::speak`] makes of `text` in voice `voice_id`
    /// weighs in its price, in order ([`ssml::spoken_characters`] of each
    /// sentence, a break nothing): a stream closed early pays for the
    /// pieces it took by what they held.
    pub fn piece_weights(&self, voice_id: &str, text: &str) -> Result<Vec<usize>, TtsError> {
        let voice = self
            .voice(voice_id)
            .ok_or_else(|| TtsError::UnknownVoice(voice_id.into()))?;
        let segments = segments(text)?;
        Ok(units_of(&segments, &voice.language)
            .iter()
            .map(Unit::weight)
            .collect())
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
        each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError> {
        self.speak_styled(voice_id, None, text, speed, each)
    }

    /// [`Self::speak`], with `style` (a neural clone's table and pitch) in
    /// place of the voice's own when given: the voice then gives the language,
    /// the phonemes and the engine (one with style tables).
    pub fn speak_styled(
        &self,
        voice_id: &str,
        style: Option<Style>,
        text: &str,
        speed: f32,
        each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError> {
        self.speak_foreign(voice_id, style, text, None, speed, each)
    }

    /// [`Self::speak_styled`], reading `foreign`'s words (when given) in
    /// their own language where the engine can
    /// ([`TextToSpeech::synthesize_foreign`]).
    pub fn speak_foreign(
        &self,
        voice_id: &str,
        style: Option<Style>,
        text: &str,
        foreign: Option<&Foreign>,
        speed: f32,
        mut each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError> {
        let voice = self
            .voice(voice_id)
            .ok_or_else(|| TtsError::UnknownVoice(voice_id.into()))?;
        let engine = &self.engines[self.engine_of[voice_id]];
        let segments = segments(text)?;
        let units = units_of(&segments, &voice.language);
        let mut out = Audio::new(Vec::new(), voice.sample_rate);
        let n = units.len();
        for (i, unit) in units.iter().enumerate() {
            if mediagen_media::process::cancelled_here() {
                return Err(TtsError::Cancelled);
            }
            let mut audio = match unit {
                Unit::Silence(secs) => Audio::silence(*secs, voice.sample_rate),
                Unit::Sentence(sentence, rate) => {
                    let rate = ssml::effective_rate(speed, *rate);
                    let audio = match (style, foreign) {
                        (style, Some(foreign)) => {
                            engine.synthesize_foreign(style, &voice.key, sentence, foreign, rate)?
                        }
                        (Some(style), None) => {
                            engine.synthesize_styles(style, &voice.key, sentence, rate)?
                        }
                        (None, None) => engine.synthesize(&voice.key, sentence, rate)?,
                    };
                    within_ceiling(audio, ssml::spoken_characters(sentence), rate)?
                }
                Unit::Ipa(ipa, text, rate) => {
                    let rate = ssml::effective_rate(speed, *rate);
                    let audio = match style {
                        // A clone speaks the text of a `<phoneme>`.
                        Some(style) => engine.synthesize_styles(style, &voice.key, text, rate)?,
                        None => match engine.synthesize_ipa(&voice.key, ipa, rate) {
                            Err(TtsError::PhonemesUnsupported) => {
                                engine.synthesize(&voice.key, text, rate)?
                            }
                            other => other?,
                        },
                    };
                    let chars = ipa.chars().count().max(ssml::spoken_characters(text));
                    within_ceiling(audio, chars, rate)?
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
            // The job's cancel is also heard above, whatever `each` says
            // (a caller that only collects the audio: a dub's line).
            if !each(i, n, &audio) {
                return Err(TtsError::Cancelled);
            }
            out.append(&audio);
        }
        Ok(out)
    }
}

/// What [`TtsCatalog::speak`] makes one by one, in order: sentences (each
/// with its SSML rate), breaks, and `<phoneme>`s (IPA, text, rate).
enum Unit<'a> {
    Sentence(String, f32),
    Silence(f64),
    Ipa(&'a str, &'a str, f32),
}

/// The units of `segments` for a voice speaking `language`.
fn units_of<'a>(segments: &'a [Segment], language: &str) -> Vec<Unit<'a>> {
    let mut units = Vec::new();
    for seg in segments {
        match seg {
            Segment::Text { text, rate } => {
                for s in text::sentences(&normalize(text, language)) {
                    units.push(Unit::Sentence(s, *rate));
                }
            }
            Segment::Break(secs) => units.push(Unit::Silence(*secs)),
            Segment::Phonemes { ipa, text, rate } => units.push(Unit::Ipa(ipa, text, *rate)),
        }
    }
    units
}

/// `text` (plain, or SSML) read into its segments.
fn segments(text: &str) -> Result<Vec<Segment>, TtsError> {
    if ssml::is_ssml(text) {
        ssml::parse(text).map_err(|e| TtsError::Failed(e.to_string()))
    } else {
        Ok(ssml::plain(text))
    }
}

impl Unit<'_> {
    /// What the unit weighs in the price ([`ssml::spoken_characters`]; a
    /// break nothing).
    fn weight(&self) -> usize {
        match self {
            Unit::Sentence(s, _) => ssml::spoken_characters(s),
            Unit::Silence(_) => 0,
            Unit::Ipa(ipa, text, _) => ipa.chars().count().max(ssml::spoken_characters(text)),
        }
    }
}

/// `audio` when it is no longer than a sentence of `characters` may be at
/// `rate` ([`ssml::max_speech_seconds`]); an engine that runs past that is
/// stopped there, whatever the text asked for.
fn within_ceiling(audio: Audio, characters: usize, rate: f32) -> Result<Audio, TtsError> {
    let limit = ssml::max_speech_seconds(characters, rate);
    let seconds = audio.duration();
    if seconds > limit {
        return Err(TtsError::OverLimit { seconds, limit });
    }
    Ok(audio)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_catalog_voice_names_a_kept_measurement() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".profiles")).unwrap();
        // A measurement planted outside the profiles directory.
        let planted = VoiceProfile {
            pitch_median: 120.0,
            pitch_spread: 0.1,
            centroid: 1500.0,
            speaking_rate: 4.0,
            gender: "male".into(),
            seconds: 10.0,
        };
        std::fs::write(
            dir.path().join("planted.v1.json"),
            serde_json::to_vec(&planted).unwrap(),
        )
        .unwrap();
        let catalog = TtsCatalog {
            profile_dir: Some(dir.path().join(".profiles")),
            ..TtsCatalog::default()
        };
        assert!(matches!(
            catalog.profile("../planted"),
            Err(TtsError::UnknownVoice(_))
        ));
    }
}
