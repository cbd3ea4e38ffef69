//! The neural step of `voice.clone`: a Kokoro style table searched for
//! from the samples (`mediagen_speech::clone`), judged on samples the
//! search did not use, and checked by ear (the recogniser) before it is
//! kept.
//!
//! The samples are split in time: the last third or so (whole samples
//! where there are several, else the end of the one) is held out. The
//! search hears candidates against the rest. The judging hears the clone,
//! the best stock voice and the WORLD clone on three other sentences
//! against the held-out part; the better of the clone and the best stock
//! voice is kept (a search that found nothing better keeps the stock
//! voice, and says so in the likeness it reports).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mediagen_core::voice::{styled_speaker, VoiceProfile, STYLED_ENGINE};
use mediagen_core::ErrorCode;
use mediagen_jobs::voice_clone::{HeldOut, NeuralStyle};
use mediagen_media::audio::resample;
use mediagen_media::spectrum::equalize;
use mediagen_speakers::encoder::{Embedding, SpeakerEncoder};
use mediagen_speech::clone::colour::colour;
use mediagen_speech::clone::sentences::sentences;
use mediagen_speech::clone::{
    hear_stock, join, search, CloneError, Options, Progress, StockVoice, Studio,
};
use mediagen_speech::stt::wer::spoken_word_error_rate;
use mediagen_speech::stt::{transcribe, SttCatalog, SttOptions};
use mediagen_speech::tts::kokoro::{FORMANT_RANGE, PITCH_RANGE};
use mediagen_speech::tts::{Style, TtsCatalog, TtsError};
use mediagen_speech::voice::RATE;
use mediagen_worker::JobFailure;

use crate::tts::{speak_converted, tts_failure, Styled};

/// How far a clone that must be told apart from another voice is turned
/// away from it: the likeness it goes by is to its own samples less this
/// times to the other voice (a dub's speakers; bench/clone_dub.sh).
pub const APART: f32 = 0.5;
/// Share of the samples held out for judging.
const HELD_OUT: f64 = 0.3;
/// Time kept back from the search for judging and the checks after it: a
/// quarter of the job's, within these bounds (a shorter judging hears
/// fewer settings; all six took 19–21 s and the checks after them about
/// 3 s on the bench's readers, docs/voice.md).
const RESERVE: (Duration, Duration) = (Duration::from_secs(25), Duration::from_secs(30));
/// Time the judging keeps, after its settings, for the stock voice, the
/// WORLD clone and the recogniser's check.
const JUDGING_TAIL: Duration = Duration::from_secs(10);
/// How far a table may leave the stock voices' range (a share of it).
const MARGIN: f32 = 0.1;
/// The recogniser must hear the clone's judging sentence with at most this
/// word error rate (stock Kokoro voices: 0–10 % on one sentence).
const MAX_WER: f64 = 0.25;

/// The step either side of the formants found that the judging hears too:
/// the search's short sentences missed a gain of 0.05 at ×0.90 for one
/// reader (docs/voice.md).
const FORMANT_STEP: f32 = 0.9;
/// The same for the pitch, about the search's own step (docs/voice.md).
const PITCH_STEP: f32 = 1.12;

/// Stock voices of the speaker's language enough to search among; with
/// fewer, every language's are heard.
const MIN_STOCK: usize = 4;
/// Bumped when the search's sentences or how they are heard change, so
/// kept hearings are redone (2: the sentences joined).
const STOCK_VERSION: u32 = 2;

/// What the stock voices sound like on each language's search sentences:
/// the same for every clone, so heard once per worker process.
#[derive(Default)]
pub struct StockCache(Mutex<HashMap<String, StockVoice>>);

/// A neural clone, made.
pub struct NeuralVoice {
    pub styles: Vec<f32>,
    /// The factors its table's pitch and formants are spoken at.
    pub pitch: f32,
    pub formant: f32,
    /// The recording colour it is spoken through (empty: none).
    pub colour: Vec<(f32, f32)>,
    /// The catalog voice whose language and phonemes it speaks.
    pub base_voice_id: String,
    pub held_out: HeldOut,
    /// Its likeness to all the samples, and the best stock voice's.
    pub samples: f32,
    pub base: f32,
}

impl NeuralVoice {
    /// The clone as it is spoken.
    pub fn styled(&self) -> Styled<'_> {
        Styled {
            style: Style {
                table: &self.styles,
                pitch: self.pitch,
                formant: self.formant,
                pace: 1.0,
            },
            colour: &self.colour,
        }
    }

    /// The clone as a voice record keeps it, its table stored at
    /// `styles_key`.
    pub fn stored(&self, styles_key: String) -> NeuralStyle {
        NeuralStyle {
            styles_key,
            pitch: self.pitch,
            formant: self.formant,
            pace: 1.0,
            colour: self.colour.clone(),
        }
    }
}

/// The engines a clone is made with, and how the job follows it.
pub struct Maker<'a> {
    pub tts: &'a TtsCatalog,
    pub stt: &'a SttCatalog,
    pub stock: &'a StockCache,
    /// Takes progress from 0 to 1.
    pub report: &'a (dyn Fn(f32) + Sync),
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

/// The catalog and the encoder as the search hears them: speech of one
/// style table, phonemised as catalog voice `like`.
struct Heard<'a> {
    tts: &'a TtsCatalog,
    encoder: &'a SpeakerEncoder,
    like: String,
    cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl Studio for Heard<'_> {
    fn speak(&self, style: Style, sentence: &str) -> Result<Vec<f32>, String> {
        let audio = self
            .tts
            .speak_styled(&self.like, Some(style), sentence, 1.0, |_, _, _| {
                !(self.cancelled)()
            })
            .map_err(|e| e.to_string())?;
        Ok(resample(&audio.samples, audio.sample_rate, 16_000))
    }

    fn embed(&self, audio: &[f32]) -> Result<Embedding, String> {
        self.encoder
            .embed(audio)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "the speech was silent".to_owned())
    }
}

impl Maker<'_> {
    /// A neural clone of the speaker of `samples` (at [`RATE`]) in
    /// `language`, done by `deadline`; `None` when no engine with style
    /// tables speaks the language (the caller makes a WORLD clone).
    /// `unlike`: another voice the clone must be told apart from (a dub's
    /// other speakers): every likeness the search and the judging go by is
    /// then to the samples less [`APART`] times to it.
    pub fn make(
        &self,
        samples: &[Vec<f32>],
        profile: &VoiceProfile,
        language: &str,
        world_base: Option<&str>,
        unlike: Option<&Embedding>,
        deadline: Instant,
    ) -> Result<Option<NeuralVoice>, JobFailure> {
        let (report, cancelled) = (self.report, self.cancelled);
        let reserve =
            (deadline.saturating_duration_since(Instant::now()) / 4).clamp(RESERVE.0, RESERVE.1);
        let (said_in, search_sentences, judge_sentences) = sentences(language);
        let kokoro: Vec<_> = self
            .tts
            .voices()
            .iter()
            .filter(|v| v.engine == STYLED_ENGINE)
            .collect();
        let speaks = |code: &str| {
            language
                .get(..2)
                .is_some_and(|l| l.eq_ignore_ascii_case(code))
        };
        let Some(like) = styled_speaker(self.tts.voices(), &profile.gender, language)
            .filter(|_| speaks(said_in))
        else {
            return Ok(None);
        };
        let studio = self.studio(&like.id)?;
        let encoder = studio.encoder;
        // A step stopped by a cancel fails as cancelled, whatever it said.
        let failed = |e: CloneError| {
            if cancelled() || matches!(e, CloneError::Cancelled) {
                JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled.")
            } else {
                JobFailure::retry(ErrorCode::SynthesisFailed, e.to_string())
            }
        };
        let embed = |audio: &[f32]| -> Result<Embedding, JobFailure> {
            encoder
                .embed_at(audio, RATE)
                .map_err(|e| JobFailure::retry(ErrorCode::InternalError, e.to_string()))
        };
        let (searched, held) = split(samples);
        let seconds = |set: &[Vec<f32>]| {
            set.iter()
                .map(|s| s.len() as f64 / f64::from(RATE))
                .sum::<f64>()
        };
        let mean = |set: &[Vec<f32>]| -> Result<Embedding, JobFailure> {
            let each = set
                .iter()
                .map(|s| embed(s))
                .collect::<Result<Vec<_>, _>>()?;
            Embedding::mean(&each)
                .ok_or_else(|| JobFailure::abort(ErrorCode::InternalError, "no samples"))
        };
        let aim = |e: Embedding| match unlike {
            Some(other) => apart(&e, other),
            None => e,
        };
        let (target, held_target, all_target) = (
            aim(mean(&searched)?),
            aim(mean(&held)?),
            aim(mean(samples)?),
        );

        // The stock voices of both genders (a voice between them, or
        // guessed as the other by its pitch, is often nearest to one of the
        // other: bench/clone.sh, docs/voice.md): of the language where it
        // has a few, else of every language (a table sets the voice; the
        // sentences are phonemised as `like`). Every language's even where
        // the language has enough was measured too: no better on average,
        // and the clone's words less clear (docs/voice.md).
        let of_language: Vec<_> = kokoro
            .iter()
            .filter(|v| v.language.starts_with(said_in))
            .copied()
            .collect();
        let stock_voices = if of_language.len() >= MIN_STOCK {
            of_language
        } else {
            kokoro.clone()
        };
        let sentences_of = |set: [&str; 3]| set.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let search_sentences = sentences_of(search_sentences);
        let mut stock = Vec::new();
        for (i, v) in stock_voices.iter().enumerate() {
            if cancelled() {
                return Err(failed(CloneError::Cancelled));
            }
            // Bounded by the job's time too: a first clone of an
            // installation (nothing heard yet) searches among the voices it
            // had time to hear; the rest are heard by later clones.
            if stock.len() >= MIN_STOCK && Instant::now() + reserve >= deadline {
                tracing::info!(heard = stock.len(), "the stock voices are heard in part");
                break;
            }
            let key = format!("{}|{said_in}", v.id);
            let known = self
                .stock
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned();
            let voice = match known {
                Some(voice) => voice,
                None => {
                    let table = self.tts.style_table(&v.id).ok_or_else(|| {
                        JobFailure::abort(
                            ErrorCode::EngineUnavailable,
                            "a stock voice has no style table",
                        )
                    })?;
                    // Kept beside the voices' profiles: heard once per
                    // installation, not once per clone.
                    let file = format!("{}.clone-{said_in}.v{STOCK_VERSION}.json", v.id);
                    let heard: Vec<f32> = self
                        .tts
                        .kept(&v.id, &file, || {
                            let voice =
                                hear_stock(&studio, &v.id, table.clone(), &search_sentences)
                                    .map_err(|e| TtsError::Failed(e.to_string()))?;
                            Ok(voice.heard.0)
                        })
                        .map_err(|e| failed(CloneError::Engine(e.to_string())))?;
                    let voice = StockVoice {
                        key: v.id.clone(),
                        styles: table,
                        heard: Embedding(heard),
                    };
                    self.stock
                        .0
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key, voice.clone());
                    voice
                }
            };
            stock.push(voice);
            report(0.2 * (i + 1) as f32 / stock_voices.len() as f32);
        }

        let started = Instant::now();
        let budget = deadline
            .saturating_duration_since(started)
            .saturating_sub(reserve);
        let options = Options {
            sentences: search_sentences,
            budget,
            margin: MARGIN,
            seed: 0x5EED,
        };
        let progress = Progress {
            report: &|share| report(0.2 + 0.7 * share),
            cancelled,
        };
        let found = search(&studio, &stock, &target, &options, &progress).map_err(failed)?;
        tracing::info!(
            blends = found.heard[0],
            steps = found.heard[1],
            likeness = found.likeness,
            best_stock = found.best_stock.1,
            pitch = found.pitch,
            formant = found.formant,
            "the search's table"
        );

        // The samples' recording colour, measured against the clone's
        // speech of the search sentences.
        let at = |(pitch, formant)| Style {
            table: &found.styles,
            pitch,
            formant,
            pace: 1.0,
        };
        let tuned = (found.pitch, found.formant);
        let clone_style = at(tuned);
        let spoken: Vec<f32> = options
            .sentences
            .iter()
            .map(|s| studio.speak(clone_style, s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(CloneError::Engine(e)))?
            .concat();
        let searched_16k: Vec<f32> = searched
            .iter()
            .flat_map(|s| resample(s, RATE, 16_000))
            .collect();
        let curve = colour(encoder, &searched_16k, &spoken).unwrap_or_default();

        // Judged on the held-out samples, on sentences the search never
        // heard, at several pitch and formant factors around those found
        // (`settings`: they are chosen on three short sentences, which can
        // mislead), each heard plain and through the colour, its sentences
        // joined into one utterance (as the search hears its own).
        let speak = |style: Style| -> Result<Vec<f32>, JobFailure> {
            if cancelled() {
                return Err(failed(CloneError::Cancelled));
            }
            let spoken = judge_sentences
                .iter()
                .map(|s| studio.speak(style, s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| failed(CloneError::Engine(e)))?;
            Ok(join(&spoken))
        };
        let hear = |audio: &[f32]| -> Result<Embedding, JobFailure> {
            studio
                .embed(audio)
                .map_err(|e| failed(CloneError::Engine(e)))
        };
        let judge = |spoken: &[f32], curve: &[(f32, f32)]| -> Result<(f32, f32), JobFailure> {
            let heard = hear(&equalize(spoken, 16_000, curve))?;
            Ok((
                heard.similarity(&held_target),
                heard.similarity(&all_target),
            ))
        };
        let stock_table = stock
            .iter()
            .find(|v| v.key == found.best_stock.0)
            .map(|v| v.styles.clone())
            .unwrap_or_default();
        // The longest a setting took: another is heard only while there is
        // time for it and the judging's tail before the deadline.
        let longest = std::cell::Cell::new(Duration::ZERO);
        let judge_at = |factor: (f32, f32)| -> Result<Vec<Way>, JobFailure> {
            let began = Instant::now();
            let spoken = speak(at(factor))?;
            let way = |colour: &[(f32, f32)]| -> Result<Way, JobFailure> {
                let (held, all) = judge(&spoken, colour)?;
                Ok(Way {
                    factor,
                    colour: colour.to_vec(),
                    held,
                    all,
                })
            };
            let mut heard = vec![way(&[])?];
            if !curve.is_empty() {
                heard.push(way(&curve)?);
            }
            longest.set(longest.get().max(began.elapsed()));
            Ok(heard)
        };
        let in_time = || Instant::now() + longest.get() + JUDGING_TAIL < deadline;
        let ways = settings(tuned, &judge_at, &in_time)?;
        let (stock_held, stock_all) = judge(&speak(Style::plain(&stock_table))?, &[])?;
        let world = match world_base {
            Some(base) => {
                let spoken = judge_sentences
                    .iter()
                    .map(|s| {
                        let audio = speak_converted(self.tts, base, profile, s, 1.0, |_, _, _| {
                            !cancelled()
                        })
                        .map_err(tts_failure)?;
                        Ok(resample(&audio.samples, audio.sample_rate, 16_000))
                    })
                    .collect::<Result<Vec<_>, JobFailure>>()?;
                hear(&join(&spoken))?.similarity(&held_target)
            }
            None => 0.0,
        };
        report(0.95);
        // The pitch, the formants and the colour are kept where they make
        // the clone more alike; the clone where it is more alike than the
        // stock voice on the held-out samples and the recogniser hears its
        // words.
        let judged: Vec<_> = ways
            .iter()
            .map(|w| (w.factor, !w.colour.is_empty(), round(w.held)))
            .collect();
        let Way {
            factor,
            colour: curve,
            held: clone_held,
            all: clone_all,
        } = most_alike(&ways).cloned().expect("the clone was judged");
        tracing::info!(
            found = ?tuned,
            kept = ?factor,
            ?judged,
            stock_held,
            "the clone's pitch and formant factors"
        );
        let understood = self.understood(&studio, at(factor), judge_sentences[0], said_in)?;
        let (styles, (pitch, formant), curve, held_likeness, samples_likeness) =
            if clone_held > stock_held && understood {
                (found.styles, factor, curve, clone_held, clone_all)
            } else {
                tracing::info!(
                    clone_held,
                    stock_held,
                    understood,
                    "the stock voice is kept for a clone"
                );
                (stock_table, (1.0, 1.0), Vec::new(), stock_held, stock_all)
            };
        Ok(Some(NeuralVoice {
            styles,
            pitch,
            formant,
            held_out: HeldOut {
                clone: round(held_likeness),
                best_stock_voice_id: found.best_stock.0.clone(),
                best_stock: round(stock_held),
                world: round(world),
                coloured: !curve.is_empty(),
                pitch: round(pitch),
                formant: round(formant),
                search_seconds: (seconds(&searched) * 10.0).round() / 10.0,
                held_out_seconds: (seconds(&held) * 10.0).round() / 10.0,
            },
            colour: curve,
            base_voice_id: like.id.clone(),
            samples: round(samples_likeness),
            base: round(stock_all),
        }))
    }

    /// The engines as the search hears them, phonemising as catalog voice
    /// `like`.
    fn studio(&self, like: &str) -> Result<Heard<'_>, JobFailure> {
        let encoder = self
            .stt
            .encoder()
            .map_err(|e| JobFailure::abort(ErrorCode::EngineUnavailable, e))?;
        Ok(Heard {
            tts: self.tts,
            encoder,
            like: like.to_owned(),
            cancelled: self.cancelled,
        })
    }

    /// Whether the recogniser hears a clone's table speak `language`
    /// through catalog voice `speaker` (a voice of that language): one of
    /// the language's judging sentences, at most [`MAX_WER`] wrong (`true`
    /// for a language without sentences here, or without a recogniser).
    pub fn speaks_clearly(
        &self,
        style: Style,
        speaker: &str,
        language: &str,
    ) -> Result<bool, JobFailure> {
        let (said_in, _, judge) = sentences(language);
        if !language.to_ascii_lowercase().starts_with(said_in) {
            return Ok(true);
        }
        let studio = self.studio(speaker)?;
        self.understood(&studio, style, judge[0], said_in)
    }

    /// Whether the recogniser hears `sentence` in the table's speech
    /// (`true` when no recogniser is installed: nothing can tell).
    fn understood(
        &self,
        studio: &Heard,
        style: Style,
        sentence: &str,
        language: &str,
    ) -> Result<bool, JobFailure> {
        let Some(model) = self.stt.model(None) else {
            return Ok(true);
        };
        let audio = studio
            .speak(style, sentence)
            .map_err(|e| JobFailure::retry(ErrorCode::SynthesisFailed, e))?;
        let options = SttOptions {
            language: model.multilingual().then(|| language.to_owned()),
            translate: false,
            prompt: None,
            words: false,
            decoding: mediagen_speech::stt::Decoding::Full,
        };
        let heard = transcribe(
            model.as_ref(),
            self.stt.gate(),
            self.stt.vad(),
            &audio,
            &options,
        )
        .map_err(|e| JobFailure::retry(ErrorCode::RecognitionFailed, e.to_string()))?;
        Ok(spoken_word_error_rate(language, sentence, &heard.text) <= MAX_WER)
    }
}

/// The samples searched with and those held out: the last whole samples
/// making up about [`HELD_OUT`] of the time, or the end of a single one.
pub fn split(samples: &[Vec<f32>]) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let total: usize = samples.iter().map(Vec::len).sum();
    let want = (total as f64 * HELD_OUT) as usize;
    let mut held = 0;
    let mut cut = samples.len();
    while cut > 1 && held < want {
        cut -= 1;
        held += samples[cut].len();
    }
    if cut == samples.len() || held > total - total / 4 {
        // One sample, or the last is most of them: cut the audio itself.
        let all: Vec<f32> = samples.concat();
        let at = total - want;
        return (vec![all[..at].to_vec()], vec![all[at..].to_vec()]);
    }
    (samples[..cut].to_vec(), samples[cut..].to_vec())
}

/// `voice` turned away from `other`: the direction of `voice − APART·other`.
/// A voice's likeness to it is its likeness to `voice` less [`APART`] times
/// its likeness to `other`, over a constant (both are unit vectors), so the
/// most alike to it is the most alike to `voice` that is also least like
/// `other`.
fn apart(voice: &Embedding, other: &Embedding) -> Embedding {
    let away: Vec<f32> = voice
        .0
        .iter()
        .zip(&other.0)
        .map(|(a, b)| a - APART * b)
        .collect();
    Embedding::mean([&Embedding(away)]).unwrap_or_else(|| voice.clone())
}

/// A way a clone may be spoken, judged.
#[derive(Clone)]
struct Way {
    /// Its pitch and formant factors.
    factor: (f32, f32),
    /// The recording colour it is spoken through (empty: none).
    colour: Vec<(f32, f32)>,
    /// Its likeness to the held-out samples, and to all of them.
    held: f32,
    all: f32,
}

/// The way most alike to the held-out samples.
fn most_alike(ways: &[Way]) -> Option<&Way> {
    ways.iter().max_by(|a, b| a.held.total_cmp(&b.held))
}

/// The pitch and formant factors a clone is judged at first: those found,
/// the table's own, and the found formants a step either side
/// ([`FORMANT_STEP`], within the engine's range).
fn formant_steps((pitch, formant): (f32, f32)) -> [(f32, f32); 4] {
    let (low, high) = FORMANT_RANGE;
    [
        (pitch, formant),
        (1.0, 1.0),
        (pitch, (formant * FORMANT_STEP).clamp(low, high)),
        (pitch, (formant / FORMANT_STEP).clamp(low, high)),
    ]
}

/// Then: the pitch a step either side ([`PITCH_STEP`], within the engine's
/// range) at the same formants.
fn pitch_steps((pitch, formant): (f32, f32)) -> [(f32, f32); 2] {
    let (low, high) = PITCH_RANGE;
    [
        ((pitch * PITCH_STEP).clamp(low, high), formant),
        ((pitch / PITCH_STEP).clamp(low, high), formant),
    ]
}

/// Every setting judged from `tuned` (the factors the search found), each
/// once, as `judge_at` hears it: [`formant_steps`], then [`pitch_steps`]
/// of the most alike of those; the first always, the others while
/// `in_time`.
fn settings(
    tuned: (f32, f32),
    judge_at: &dyn Fn((f32, f32)) -> Result<Vec<Way>, JobFailure>,
    in_time: &dyn Fn() -> bool,
) -> Result<Vec<Way>, JobFailure> {
    let mut ways: Vec<Way> = Vec::new();
    let hear = |factor, ways: &mut Vec<Way>| -> Result<(), JobFailure> {
        let first = ways.is_empty();
        if first || (!ways.iter().any(|w| same(w.factor, factor)) && in_time()) {
            ways.extend(judge_at(factor)?);
        }
        Ok(())
    };
    for factor in formant_steps(tuned) {
        hear(factor, &mut ways)?;
    }
    let best = most_alike(&ways).map_or(tuned, |w| w.factor);
    for factor in pitch_steps(best) {
        hear(factor, &mut ways)?;
    }
    Ok(ways)
}

/// Whether two settings are the same (to a hundredth).
fn same(a: (f32, f32), b: (f32, f32)) -> bool {
    (a.0 - b.0).abs() < 0.01 && (a.1 - b.1).abs() < 0.01
}

fn round(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::{apart, formant_steps, most_alike, pitch_steps, same, settings, split, Way};
    use mediagen_speakers::encoder::Embedding;

    #[test]
    fn a_voice_turned_away_ranks_by_likeness_less_the_others() {
        let (me, other) = (
            Embedding(vec![1.0, 0.0, 0.0]),
            Embedding(vec![0.6, 0.8, 0.0]),
        );
        let aim = apart(&me, &other);
        // Both as like `me` (0.6): the one unlike `other` ranks first.
        let near_other = Embedding(vec![0.6, 0.8, 0.0]);
        let away = Embedding(vec![0.6, -0.8, 0.0]);
        assert!(aim.similarity(&away) > aim.similarity(&near_other));
        assert!((aim.similarity(&aim) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn the_judging_steps_either_side_within_the_engines_range() {
        let [found, own, lower, higher] = formant_steps((1.27, 0.85));
        assert_eq!((found, own), ((1.27, 0.85), (1.0, 1.0)));
        // The step down is bounded by the engine's lowest formants.
        assert_eq!(lower, (1.27, 0.8));
        assert!((higher.1 - 0.85 / 0.9).abs() < 1e-6 && higher.0 == 1.27);
        // Found at its own: the first two are one setting, heard once.
        let [a, b, ..] = formant_steps((1.0, 1.0));
        assert!(same(a, b));
        let [up, down] = pitch_steps((1.9, 0.9));
        assert_eq!(up, (2.0, 0.9));
        assert!((down.0 - 1.9 / 1.12).abs() < 1e-6 && down.1 == 0.9);
        assert!(!same((1.0, 1.0), (1.0, 1.02)));
    }

    #[test]
    fn the_pitch_is_stepped_at_the_most_alike_formants() {
        // Likeness peaks at pitch ×1.12, formants ×0.9; the search found
        // ×1 of both. Each setting is heard once, plain only.
        let heard = std::cell::RefCell::new(Vec::new());
        let judge_at = |(p, f): (f32, f32)| {
            heard.borrow_mut().push((p, f));
            let likeness = 0.8 - (p - 1.12).abs() - (f - 0.9).abs();
            Ok(vec![Way {
                factor: (p, f),
                colour: Vec::new(),
                held: likeness,
                all: likeness,
            }])
        };
        let ways = settings((1.0, 1.0), &judge_at, &|| true).unwrap();
        let all = heard.take();
        assert_eq!(all.len(), 5, "{all:?}");
        assert_eq!(ways.len(), 5);
        // The pitch steps are at ×0.9, the best formants.
        assert!(same(all[3], (1.12, 0.9)) && same(all[4], (1.0 / 1.12, 0.9)));
        let best = most_alike(&ways).unwrap();
        assert!(same(best.factor, (1.12, 0.9)));
        // Out of time: the found setting only.
        let ways = settings((1.0, 1.0), &judge_at, &|| false).unwrap();
        assert_eq!((ways.len(), heard.take().len()), (1, 1));
    }

    #[test]
    fn the_last_samples_are_held_out() {
        let samples = vec![vec![0.0; 40], vec![0.0; 30], vec![0.0; 30]];
        let (searched, held) = split(&samples);
        assert_eq!((searched.len(), held.len()), (2, 1));
        // One sample: its end.
        let (searched, held) = split(&[vec![0.0; 100]]);
        assert_eq!((searched[0].len(), held[0].len()), (70, 30));
        // The last sample is nearly everything: the audio is cut.
        let (searched, held) = split(&[vec![0.0; 10], vec![0.0; 90]]);
        assert_eq!((searched[0].len(), held[0].len()), (70, 30));
    }
}
