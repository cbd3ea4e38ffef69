//! Speaking timed lines again: each line of a transcript is synthesized
//! with a catalog voice (or a clone: converted toward its profile, or with
//! a neural clone's style table) and time-fitted into the slot it had, on
//! one track as long as the original. Shared by the voice changer's
//! `resynthesize` mode and by dubbing.

use mediagen_core::time::round_ms;
use mediagen_media::audio::{resample, Audio};
use mediagen_media::stretch::stretch;
use mediagen_speech::tts::{Foreign, TtsCatalog, TtsError};
use mediagen_speech::voice::{Transform, VoiceConverter, VoiceProfile, WorldConverter, RATE};

use crate::tts::{speak_neural, Styled};
use serde::Serialize;

/// A line to speak and the time it had in the original, seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub start: f64,
    pub end: f64,
    pub text: String,
    /// Words of `text` read in another language than the voice's (the words
    /// a dub's translator left as they were).
    pub foreign: Option<Foreign>,
}

/// How lines are fitted into their slots.
#[derive(Debug, Clone, Copy)]
pub struct Fit {
    /// Fastest tempo a line may be sped up to (1.3 = 30 % faster).
    pub max_speedup: f64,
    /// Slowest tempo a short line may be slowed to (0.8 = 20 % slower);
    /// the rest of its slot stays silent.
    pub min_speedup: f64,
    /// A line too long for its slot may first take the silence after it
    /// (up to the next line) before being sped up.
    pub borrow_silence: bool,
}

/// Where a line went, seconds on the output's clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placed {
    pub start: f64,
    pub end: f64,
    /// Tempo applied (1 = as synthesized; above 1 = faster).
    pub speedup: f64,
    /// Seconds the line runs past the end of its slot (0 when it fits).
    pub overrun: f64,
}

/// Converting toward a cloned voice: its profile, and the speaking voice's.
#[derive(Debug, Clone, Copy)]
pub struct Toward<'a> {
    pub target: &'a VoiceProfile,
    pub source: &'a VoiceProfile,
}

/// Tempos this close to 1 are left alone (no resynthesis).
const UNCHANGED: f64 = 0.02;
/// Least pause kept between two lines that had to be pushed later, seconds.
pub const MIN_GAP: f64 = 0.05;

fn secs(n: usize) -> f64 {
    n as f64 / f64::from(RATE)
}

fn samples(seconds: f64) -> usize {
    (seconds.max(0.0) * f64::from(RATE)).round() as usize
}

/// The tempo and output length for speech of `natural` seconds given a
/// slot of `slot` seconds and `spare` seconds of silence after it.
fn tempo(natural: f64, slot: f64, spare: f64, fit: &Fit) -> (f64, f64) {
    let room = if fit.borrow_silence && natural > slot {
        (slot + spare).min(natural)
    } else {
        slot
    };
    let speedup = if room <= 0.0 {
        fit.max_speedup
    } else {
        (natural / room).clamp(fit.min_speedup, fit.max_speedup)
    };
    let speedup = if (speedup - 1.0).abs() < UNCHANGED {
        1.0
    } else {
        speedup
    };
    (speedup, natural / speedup)
}

/// A line as spoken: where it went and its samples (mono at [`RATE`]).
#[derive(Debug, Clone)]
pub struct Spoken {
    pub placed: Placed,
    pub samples: Vec<f32>,
}

/// A line as the voice says it naturally: silence trimmed, at [`RATE`].
fn natural_speech(
    catalog: &TtsCatalog,
    voice: &Voicing,
    line: &Line,
) -> Result<Vec<f32>, TtsError> {
    let (text, foreign) = (&line.text, line.foreign.as_ref());
    let mut audio = match &voice.styled {
        Some(s) => speak_neural(catalog, voice.speaker, *s, text, foreign, 1.0, |_, _, _| {
            true
        })?,
        None => catalog.speak_foreign(voice.speaker, None, text, foreign, 1.0, |_, _, _| true)?,
    };
    audio.trim_silence(-45.0, 0.02);
    Ok(resample(&audio.samples, audio.sample_rate, RATE))
}

/// Fits naturally spoken `natural` into the slot of `line`: it starts at
/// the line's start or at `cursor` if later (the previous line ran on),
/// and may borrow the silence up to `next` (the following line's start)
/// when `fit` allows; moved `toward` a cloned voice when given.
fn fit_line(
    natural: Vec<f32>,
    toward: Option<Toward>,
    line: &Line,
    cursor: f64,
    next: f64,
    fit: &Fit,
) -> Spoken {
    let start = line.start.max(cursor);
    let slot = line.end - start;
    let spare = (next - line.end).max(0.0);
    let (speedup, seconds) = tempo(secs(natural.len()), slot, spare, fit);
    let samples = match toward {
        None if speedup == 1.0 => natural,
        // Tempo alone: windows of the speech itself, overlapped (WSOLA),
        // cheaper than a vocoder and truer to the voice, and heard more
        // clearly than the voice told to speak at the tempo (Kokoro at
        // ×1.3: WER 8.6–13.8 % against 1.1–5.2 % stretched;
        // docs/dubbing.md, pace_bench).
        None => stretch(&natural, RATE, samples(seconds)),
        // Toward another voice: the vocoder converts and sets the length
        // in one pass.
        Some(t) => {
            let how = Transform {
                target: Some(t.target),
                source: Some(t.source),
                length: Some(samples(seconds)),
            };
            WorldConverter.transform(&natural, &how).samples
        }
    };
    let end = start + secs(samples.len());
    Spoken {
        placed: Placed {
            start: round_ms(start),
            end: round_ms(end),
            speedup: round_ms(speedup),
            overrun: round_ms((end - line.end).max(0.0)),
        },
        samples,
    }
}

/// Speaks one line in `voice` and fits it into its slot (see
/// [`fit_line`]).
pub fn speak_line(
    catalog: &TtsCatalog,
    voice: &Voicing,
    line: &Line,
    cursor: f64,
    next: f64,
    fit: &Fit,
) -> Result<Spoken, TtsError> {
    let natural = natural_speech(catalog, voice, line)?;
    Ok(fit_line(natural, voice.toward, line, cursor, next, fit))
}

/// A voice lines are spoken in: a catalog voice (its language and
/// phonemes), speaking as it is, converted toward a profile (a WORLD
/// clone), or with a neural clone's style table in its place.
#[derive(Debug, Clone, Copy)]
pub struct Voicing<'a> {
    pub speaker: &'a str,
    pub toward: Option<Toward<'a>>,
    pub styled: Option<Styled<'a>>,
}

/// Speaks every line (see [`speak_line`]) for a track of `total` samples
/// at [`RATE`], line `i` in `voices[who[i]]`. A line that cannot fit even
/// at the fastest tempo runs on (later lines move after it) and reports its
/// overrun. The voices speak the next lines on one thread while the last
/// ones are fitted on another. `progress` sees the fraction done and
/// returns false to cancel.
pub fn speak_lines(
    catalog: &TtsCatalog,
    voices: &[Voicing],
    who: &[usize],
    lines: &[Line],
    total: usize,
    fit: &Fit,
    mut progress: impl FnMut(f64) -> bool,
) -> Result<Vec<Spoken>, TtsError> {
    let voice = |i: usize| voices[who.get(i).copied().unwrap_or(0).min(voices.len() - 1)];
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        scope.spawn(mediagen_media::process::in_this_scope(move || {
            for (i, line) in lines.iter().enumerate() {
                // A closed channel: the fitting side stopped (cancelled).
                if tx.send(natural_speech(catalog, &voice(i), line)).is_err() {
                    break;
                }
            }
        }));
        let mut out: Vec<Spoken> = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            let natural = rx
                .recv()
                .map_err(|_| TtsError::Failed("the speaking thread stopped".into()))??;
            let cursor = out.last().map_or(0.0, |s| s.placed.end + MIN_GAP);
            let next = lines.get(i + 1).map_or(secs(total), |l| l.start);
            out.push(fit_line(natural, voice(i).toward, line, cursor, next, fit));
            if !progress((i + 1) as f64 / lines.len() as f64) {
                return Err(TtsError::Cancelled);
            }
        }
        Ok(out)
    })
}

/// The spoken lines added onto `window` (the samples of a track from index
/// `at`), clipped to full scale: the track is mixed window by window.
pub fn mix_lines(window: &mut [f32], at: usize, spoken: &[Spoken]) {
    let end = at + window.len();
    let mut track = vec![0.0f32; window.len()];
    for s in spoken {
        let start = samples(s.placed.start);
        for i in start.max(at)..(start + s.samples.len()).min(end) {
            track[i - at] += s.samples[i - start];
        }
    }
    for (b, t) in window.iter_mut().zip(track) {
        *b = (*b + t).clamp(-1.0, 1.0);
    }
}

/// `window` (the samples of a track from index `at`) with the spans of
/// `lines` faded out (20 ms ramps), so new speech can take their place
/// while everything between them stays.
pub fn clear_lines(window: &mut [f32], at: usize, lines: &[Line]) {
    let ramp = samples(0.02).max(1);
    let end = at + window.len();
    for line in lines {
        let (a, b) = (samples(line.start), samples(line.end));
        for i in a.max(at)..b.min(end) {
            let edge = (i - a).min(b - 1 - i);
            window[i - at] *= if edge < ramp {
                1.0 - edge as f32 / ramp as f32
            } else {
                0.0
            };
        }
    }
}

/// How much of the voice band is taken out of the original under a dubbed
/// line (at the band's centre; less toward its edges).
const DUCK_BAND: f32 = 0.9;
/// The original's level under a dubbed line, after the band is taken out.
const DUCK_LEVEL: f32 = 0.5;

/// Ducks the original's speech under each line: the voice band
/// (300–3400 Hz, a second-order band-pass around 1 kHz, subtracted) mostly
/// removed and the rest lowered, with 50 ms ramps; music and noise outside
/// the band and between lines stay.
pub struct Ducker {
    /// The band-pass's coefficients and its state, carried across windows.
    b0: f64,
    b2: f64,
    a1: f64,
    a2: f64,
    state: [f64; 4],
}

impl Default for Ducker {
    fn default() -> Self {
        // RBJ band-pass (0 dB peak) centred at √(300·3400) Hz, Q = f0 / bandwidth.
        let f0 = (300.0f64 * 3400.0).sqrt();
        let q = f0 / (3400.0 - 300.0);
        let w = std::f64::consts::TAU * f0 / f64::from(RATE);
        let alpha = w.sin() / (2.0 * q);
        let a0 = 1.0 + alpha;
        Self {
            b0: alpha / a0,
            b2: -alpha / a0,
            a1: -2.0 * w.cos() / a0,
            a2: (1.0 - alpha) / a0,
            state: [0.0; 4],
        }
    }
}

impl Ducker {
    /// Ducks `window`, the samples of the track from index `at`; windows
    /// come in order.
    pub fn duck(&mut self, window: &mut [f32], at: usize, lines: &[Line]) {
        // How deep the ducking is at each sample: 1 inside a line, ramps
        // at the edges, 0 elsewhere.
        let ramp = samples(0.05).max(1);
        let end = at + window.len();
        let mut depth = vec![0.0f32; window.len()];
        for line in lines {
            let (a, b) = (samples(line.start), samples(line.end));
            for i in a.saturating_sub(ramp).max(at)..(b + ramp).min(end) {
                let edge = if i < a {
                    (ramp - (a - i)) as f32 / ramp as f32
                } else if i >= b {
                    (ramp - (i - b)) as f32 / ramp as f32
                } else {
                    1.0
                };
                depth[i - at] = depth[i - at].max(edge.clamp(0.0, 1.0));
            }
        }
        let [mut x1, mut x2, mut y1, mut y2] = self.state;
        for (s, d) in window.iter_mut().zip(depth) {
            let x = f64::from(*s);
            let band = self.b0 * x + self.b2 * x2 - self.a1 * y1 - self.a2 * y2;
            (x2, x1, y2, y1) = (x1, x, y1, band);
            if d > 0.0 {
                let ducked = (x - f64::from(DUCK_BAND) * band) as f32 * DUCK_LEVEL;
                *s = *s * (1.0 - d) + ducked * d;
            }
        }
        self.state = [x1, x2, y1, y2];
    }
}

/// Mono audio at [`RATE`].
pub fn at_rate(samples: Vec<f32>) -> Audio {
    Audio::new(samples, RATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIT: Fit = Fit {
        max_speedup: 1.3,
        min_speedup: 0.8,
        borrow_silence: false,
    };

    fn near(got: (f64, f64), want: (f64, f64)) {
        assert!(
            (got.0 - want.0).abs() < 1e-9 && (got.1 - want.1).abs() < 1e-9,
            "{got:?} vs {want:?}"
        );
    }

    #[test]
    fn lines_are_fitted_within_the_limits() {
        // Fits exactly when within the tempo limits.
        near(tempo(2.2, 2.0, 1.0, &FIT), (1.1, 2.0));
        // Nearly right: left alone.
        near(tempo(2.01, 2.0, 1.0, &FIT), (1.0, 2.01));
        // Too long: the fastest tempo, and it runs over.
        near(tempo(4.0, 2.0, 1.0, &FIT), (1.3, 4.0 / 1.3));
        // Too short: slowed at most to 0.8.
        near(tempo(1.0, 3.0, 0.0, &FIT), (0.8, 1.25));
        // Borrowing the silence after the slot before speeding up.
        let borrow = Fit {
            borrow_silence: true,
            ..FIT
        };
        near(tempo(2.5, 2.0, 1.0, &borrow), (1.0, 2.5));
        near(tempo(3.9, 2.0, 1.0, &borrow), (1.3, 3.0));
    }

    #[test]
    fn ducking_takes_the_voice_band_out_under_lines_only() {
        let tone = |hz: f64| -> Vec<f32> {
            (0..RATE as usize * 3)
                .map(|i| {
                    (0.5 * (std::f64::consts::TAU * hz * i as f64 / f64::from(RATE)).sin()) as f32
                })
                .collect()
        };
        let rms = |x: &[f32]| (x.iter().map(|s| s * s).sum::<f32>() / x.len() as f32).sqrt();
        let line = [Line {
            start: 1.0,
            end: 2.0,
            text: String::new(),
            foreign: None,
        }];
        let r = RATE as usize;
        let mut voice = tone(1000.0);
        // Ducked in two windows that split the line: as if whole.
        let mut whole = voice.clone();
        Ducker::default().duck(&mut whole, 0, &line);
        let mut ducker = Ducker::default();
        let (first, second) = voice.split_at_mut(r * 3 / 2);
        ducker.duck(first, 0, &line);
        ducker.duck(second, r * 3 / 2, &line);
        assert_eq!(voice, whole);
        // 1 kHz under the line: down by more than 20 dB; untouched outside.
        assert!(rms(&voice[r + r / 4..2 * r - r / 4]) < 0.1 * rms(&voice[..r / 2]));
        assert!((rms(&voice[r * 5 / 2..]) - 0.5 / 2f32.sqrt()).abs() < 0.01);
        // A low hum is only lowered by the level, not removed.
        let mut hum = tone(60.0);
        Ducker::default().duck(&mut hum, 0, &line);
        assert!(rms(&hum[r + r / 4..2 * r - r / 4]) > 0.4 * rms(&hum[..r / 2]));
    }

    #[test]
    fn cleared_spans_are_silent_and_the_rest_is_kept() {
        let mut x = vec![0.5f32; RATE as usize * 3];
        let line = [Line {
            start: 1.0,
            end: 2.0,
            text: String::new(),
            foreign: None,
        }];
        // Two windows, the second starting inside the line.
        let (first, second) = x.split_at_mut(RATE as usize * 5 / 4);
        clear_lines(first, 0, &line);
        clear_lines(second, RATE as usize * 5 / 4, &line);
        assert_eq!(x[RATE as usize / 2], 0.5);
        assert_eq!(x[RATE as usize * 3 / 2], 0.0);
        assert_eq!(x[RATE as usize * 5 / 2], 0.5);
        // Ramps, not clicks.
        assert!(x[RATE as usize + 10] > 0.0 && x[RATE as usize + 10] < 0.5);
        assert!(x[RATE as usize * 2 - 10] > 0.0 && x[RATE as usize * 2 - 10] < 0.5);
    }

    #[test]
    fn lines_mix_in_across_windows() {
        let r = RATE as usize;
        let spoken = [Spoken {
            placed: Placed {
                start: 1.0,
                end: 2.0,
                speedup: 1.0,
                overrun: 0.0,
            },
            samples: vec![0.75; r],
        }];
        let mut x = vec![0.5f32; r * 3];
        let (first, second) = x.split_at_mut(r * 3 / 2);
        mix_lines(first, 0, &spoken);
        mix_lines(second, r * 3 / 2, &spoken);
        assert_eq!(
            (x[r - 1], x[r], x[2 * r - 1], x[2 * r]),
            (0.5, 1.0, 1.0, 0.5)
        );
    }
}
