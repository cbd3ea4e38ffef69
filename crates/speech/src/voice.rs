//! Voice profiles and voice conversion with the WORLD vocoder (Morise et
//! al.; the `rsworld` crate bundles its BSD-licensed C++).
//!
//! A profile is what a converter needs of a speaker: the median and spread
//! of the pitch, the spectral centroid of the voiced sound (where the
//! formants sit), the speaking rate. Converting analyses the input with
//! DIO + StoneMask (pitch), CheapTrick (spectral envelope) and D4C
//! (aperiodicity), maps the pitch so its median and log-spread become the
//! target's while the contour keeps its shape, warps the envelope along the
//! frequency axis by the ratio of the centroids (moving the formants), and
//! resynthesizes. No neural weights: a neural converter joins behind the
//! same [`VoiceConverter`] trait.

use rsworld::{cheaptrick, d4c, dio, stonemask, synthesis};

use mediagen_media::audio::resample;
use mediagen_media::pcm::PcmFile;
use mediagen_speakers::vad::{speech_seconds, Vad};
use rsworld_sys::{CheapTrickOption, D4COption, DioOption};

/// The rate voices are analysed and converted at.
pub const RATE: u32 = mediagen_core::voice::CONVERSION_RATE;
/// Analysis hop, milliseconds.
const FRAME_MS: f64 = 5.0;
/// Conversion works on pieces of about this many seconds, cut at the
/// quietest moment near each boundary (bounded memory on long files).
const PIECE_SECONDS: f64 = 10.0;

/// `f` over `items` on every core (pieces are independent), in order.
fn par_map<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let mut out: Vec<Option<U>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                scope.spawn(move || {
                    (t..items.len())
                        .step_by(threads)
                        .map(|i| (i, f(&items[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (i, u) in h.join().expect("a conversion thread") {
                out[i] = Some(u);
            }
        }
    });
    out.into_iter().map(|u| u.expect("every piece")).collect()
}

pub use mediagen_core::voice::VoiceProfile;

/// Why a sample cannot serve to build a voice.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleProblem {
    #[error("the sample is silent")]
    Silent,
    #[error("{percent:.1} % of the sample is clipped (at full scale); record it less loud")]
    Clipped { percent: f64 },
    #[error("too little voiced speech ({percent:.0} % of the sample); send speech")]
    NotSpeech { percent: f64 },
    #[error("only {seconds:.1} s of speech was heard in the sample (at least {MIN_SPEECH} s are needed); send speech")]
    NoSpeech { seconds: f64 },
}

/// Seconds of speech (by the voice-activity detector) each sample needs.
pub const MIN_SPEECH: f64 = 1.0;

/// Checks that the voice-activity detector hears at least [`MIN_SPEECH`]
/// seconds of speech in a sample (mono, [`RATE`]): music, tones and noise
/// are refused even where they are voiced or loud enough.
pub fn check_speech(samples: &[f32], vad: &dyn Vad) -> Result<(), SampleProblem> {
    let heard = resample(samples, RATE, mediagen_speakers::RATE as u32);
    match speech_seconds(vad, &heard) {
        Ok(seconds) if seconds < MIN_SPEECH => Err(SampleProblem::NoSpeech { seconds }),
        Ok(_) => Ok(()),
        // A detector that fails says nothing against the sample.
        Err(e) => {
            tracing::warn!("voice sample not checked for speech: {e}");
            Ok(())
        }
    }
}

/// Checks a sample (mono, [`RATE`]) for silence and clipping.
pub fn check_sample(samples: &[f32]) -> Result<(), SampleProblem> {
    let rms = (samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32).sqrt();
    if rms < 0.003 {
        return Err(SampleProblem::Silent);
    }
    let clipped = samples.iter().filter(|s| s.abs() >= 0.999).count();
    let percent = 100.0 * clipped as f64 / samples.len() as f64;
    if percent > 0.5 {
        return Err(SampleProblem::Clipped { percent });
    }
    Ok(())
}

/// The WORLD analysis of one piece.
struct Analysis {
    f0: Vec<f64>,
    sp: Vec<Vec<f64>>,
    ap: Vec<Vec<f64>>,
}

fn pitch(x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut option = DioOption::new();
    option.frame_period = FRAME_MS;
    option.f0_floor = 60.0;
    option.f0_ceil = 500.0;
    let x = x.to_vec();
    let (times, f0) = dio(&x, RATE as i32, &option);
    let f0 = stonemask(&x, RATE as i32, &times, &f0);
    (times, f0)
}

/// Whether work should stop now (a cancelled job); checked between runs of
/// [`FRAMES_AT_ONCE`] frames and between the stages of an analysis.
pub type Stop<'a> = &'a (dyn Fn() -> bool + Sync);

/// Never stops.
const UNSTOPPED: Stop<'static> = &|| false;

/// Frames analysed in one call of a per-frame stage (CheapTrick, D4C),
/// between checks of [`Stop`]: 0.25 s of sound, some tens of milliseconds
/// of a core. Each frame is computed from its own time and pitch alone, so
/// the result is the same as in one call.
const FRAMES_AT_ONCE: usize = 50;

/// `stage` over `times` and `f0` run by run ([`FRAMES_AT_ONCE`]), its rows
/// in order; `None` when `stop` said so between runs.
fn by_frames(
    times: &[f64],
    f0: &[f64],
    stop: Stop,
    mut stage: impl FnMut(&Vec<f64>, &Vec<f64>) -> Vec<Vec<f64>>,
) -> Option<Vec<Vec<f64>>> {
    let mut rows = Vec::with_capacity(times.len());
    for (t, f) in times.chunks(FRAMES_AT_ONCE).zip(f0.chunks(FRAMES_AT_ONCE)) {
        if stop() {
            return None;
        }
        rows.extend(stage(&t.to_vec(), &f.to_vec()));
    }
    Some(rows)
}

/// Frame times, pitch and spectral envelope of one piece.
type Envelope = (Vec<f64>, Vec<f64>, Vec<Vec<f64>>);

/// Pitch and spectral envelope of one piece (what a profile needs); `None`
/// when `stop` said so.
fn envelope(x: &[f64], stop: Stop) -> Option<Envelope> {
    if stop() {
        return None;
    }
    let (times, f0) = pitch(x);
    let xs = x.to_vec();
    let mut ct = CheapTrickOption::new(RATE as i32);
    let sp = by_frames(&times, &f0, stop, |t, f| {
        cheaptrick(&xs, RATE as i32, t, f, &mut ct)
    })?;
    Some((times, f0, sp))
}

fn analyse_piece(x: &[f64], stop: Stop) -> Option<Analysis> {
    let (times, f0, sp) = envelope(x, stop)?;
    let xs = x.to_vec();
    let option = D4COption::new();
    let mut ap = by_frames(&times, &f0, stop, |t, f| {
        d4c(&xs, RATE as i32, t, f, &option)
    })?;
    // D4C gives NaN where a frame is perfectly periodic (synthetic sound):
    // that is a fully periodic frame.
    for v in ap.iter_mut().flatten() {
        if !v.is_finite() {
            *v = 0.001;
        }
    }
    Some(Analysis { f0, sp, ap })
}

/// Spectral centroid (0–5 kHz) of the voiced frames' envelopes, Hz.
fn centroid(f0: &[f64], sp: &[Vec<f64>]) -> f64 {
    let (num, den) = centroid_sums(f0, sp);
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// The centroid's numerator and denominator (sums, so pieces add up).
fn centroid_sums(f0: &[f64], sp: &[Vec<f64>]) -> (f64, f64) {
    let (mut num, mut den) = (0.0, 0.0);
    for (f, row) in f0.iter().zip(sp) {
        if *f <= 0.0 {
            continue;
        }
        let bins = row.len();
        let hz = |k: usize| k as f64 * f64::from(RATE) / (2.0 * (bins - 1) as f64);
        for (k, power) in row.iter().enumerate() {
            let f = hz(k);
            if f > 5000.0 {
                break;
            }
            // Amplitude (not power) weights: less dominated by the first formant.
            let a = power.sqrt();
            num += f * a;
            den += a;
        }
    }
    (num, den)
}

/// The input speaker's statistics a conversion maps from.
#[derive(Debug, Clone, Copy)]
struct SourceStats {
    median: f64,
    spread: f64,
    centroid: f64,
}

impl SourceStats {
    fn of(profile: &VoiceProfile) -> Self {
        Self {
            median: profile.pitch_median,
            spread: profile.pitch_spread,
            centroid: profile.centroid,
        }
    }
}

/// Pitch and envelope sums over pieces, in order, for [`SourceStats`].
#[derive(Default)]
struct StatsSum {
    f0: Vec<f64>,
    num: f64,
    den: f64,
}

impl StatsSum {
    fn add(&mut self, f0: &[f64], sp: &[Vec<f64>]) {
        self.f0.extend(f0.iter().copied().filter(|f| *f > 0.0));
        let (num, den) = centroid_sums(f0, sp);
        self.num += num;
        self.den += den;
    }

    fn stats(&self) -> SourceStats {
        let (median, spread) = pitch_stats(&self.f0);
        SourceStats {
            median,
            spread,
            centroid: if self.den > 0.0 {
                self.num / self.den
            } else {
                0.0
            },
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median and log-spread of the voiced frames' pitch.
fn pitch_stats(f0: &[f64]) -> (f64, f64) {
    let voiced: Vec<f64> = f0.iter().copied().filter(|f| *f > 0.0).collect();
    if voiced.is_empty() {
        return (0.0, 0.0);
    }
    let logs: Vec<f64> = voiced.iter().map(|f| f.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let spread = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
    (median(voiced), spread)
}

/// Loudness peaks (syllable nuclei) per second of the non-silent audio.
fn speaking_rate(x: &[f64]) -> f64 {
    let hop = RATE as usize / 100;
    let env: Vec<f64> = x
        .chunks(hop)
        .map(|c| (c.iter().map(|s| s * s).sum::<f64>() / c.len() as f64).sqrt())
        .collect();
    let loud = env.iter().copied().fold(0.0, f64::max);
    let active = env.iter().filter(|e| **e > 0.05 * loud).count();
    // Smoothed over 50 ms; a peak stands 2 dB over the valleys around it.
    let smooth: Vec<f64> = (0..env.len())
        .map(|i| {
            let (a, b) = (i.saturating_sub(2), (i + 3).min(env.len()));
            env[a..b].iter().sum::<f64>() / (b - a) as f64
        })
        .collect();
    let mut peaks = 0;
    let mut valley = f64::MAX;
    let mut rising = false;
    for w in smooth.windows(2) {
        valley = valley.min(w[0]);
        if w[1] > w[0] {
            rising = true;
        } else if rising && w[1] < w[0] {
            if w[0] > 0.1 * loud && w[0] > valley * 1.26 {
                peaks += 1;
                valley = w[0];
            }
            rising = false;
        }
    }
    let seconds = active as f64 / 100.0;
    if seconds > 0.0 {
        peaks as f64 / seconds
    } else {
        0.0
    }
}

fn to_f64(samples: &[f32]) -> Vec<f64> {
    samples.iter().map(|&s| f64::from(s)).collect()
}

/// Builds a profile from samples of one speaker (each mono at [`RATE`]).
pub fn analyse(samples: &[Vec<f32>]) -> Result<VoiceProfile, SampleProblem> {
    let (mut f0, mut sp) = (Vec::new(), Vec::new());
    let mut rate = 0.0;
    let mut seconds = 0.0;
    for s in samples {
        let x = to_f64(s);
        let analysed = par_map(&pieces(&x), |p| envelope(p, UNSTOPPED));
        for (_, piece_f0, piece_sp) in analysed.into_iter().flatten() {
            f0.extend(piece_f0);
            sp.extend(piece_sp);
        }
        let secs = s.len() as f64 / f64::from(RATE);
        rate += speaking_rate(&x) * secs;
        seconds += secs;
    }
    let voiced = f0.iter().filter(|f| **f > 0.0).count();
    let percent = 100.0 * voiced as f64 / f0.len().max(1) as f64;
    if percent < 15.0 {
        return Err(SampleProblem::NotSpeech { percent });
    }
    let (pitch_median, pitch_spread) = pitch_stats(&f0);
    Ok(VoiceProfile {
        pitch_median,
        pitch_spread,
        centroid: centroid(&f0, &sp),
        speaking_rate: rate / seconds.max(1e-9),
        gender: if pitch_median >= 155.0 {
            "female"
        } else {
            "male"
        }
        .to_owned(),
        seconds,
    })
}

/// Pieces of about [`PIECE_SECONDS`], each cut at the quietest 20 ms within
/// two seconds of its nominal end.
fn pieces(x: &[f64]) -> Vec<&[f64]> {
    let nominal = (PIECE_SECONDS * f64::from(RATE)) as usize;
    let window = RATE as usize / 50;
    let mut out = Vec::new();
    let mut start = 0;
    while x.len() - start > nominal + nominal / 2 {
        let (lo, hi) = (
            start + nominal - 2 * RATE as usize,
            start + nominal + 2 * RATE as usize,
        );
        let cut = (lo..hi - window)
            .step_by(window / 2)
            .min_by(|&a, &b| {
                let e = |i: usize| x[i..i + window].iter().map(|s| s * s).sum::<f64>();
                e(a).total_cmp(&e(b))
            })
            .map_or(start + nominal, |i| i + window / 2);
        out.push(&x[start..cut]);
        start = cut;
    }
    out.push(&x[start..]);
    out
}

/// A converted clip and its measured pitch before and after.
#[derive(Debug, Clone)]
pub struct Converted {
    pub samples: Vec<f32>,
    /// Median pitch of the voiced frames, Hz.
    pub pitch_before: f64,
    pub pitch_after: f64,
}

/// What to do to a clip: move its voice toward `target` (or keep it), and
/// give it `length` samples (or keep its length) without changing pitch.
#[derive(Debug, Clone, Copy, Default)]
pub struct Transform<'a> {
    /// The voice to move toward; `None` keeps the speaker.
    pub target: Option<&'a VoiceProfile>,
    /// The input speaker's profile when known beforehand (a catalog voice,
    /// converted sentence by sentence, maps every sentence alike); measured
    /// on the clip otherwise.
    pub source: Option<&'a VoiceProfile>,
    /// Output length in samples; `None` keeps the input's.
    pub length: Option<usize>,
}

/// Changes the voice in speech toward a target speaker.
pub trait VoiceConverter: Send + Sync {
    fn name(&self) -> &'static str;
    /// `samples`: mono at [`RATE`].
    fn transform(&self, samples: &[f32], how: &Transform) -> Converted;
    /// A recording in a file (mono at [`RATE`]) moved toward `target`,
    /// length kept, written to `out`; answers the median pitch before and
    /// after. Converters that can should walk the file in windows, and
    /// check `stop` at least every 100 ms of work (a cancelled job),
    /// answering [`std::io::ErrorKind::Interrupted`] when it says so.
    fn convert_file(
        &self,
        input: &PcmFile,
        target: &VoiceProfile,
        out: &mut PcmFile,
        stop: Stop,
    ) -> std::io::Result<(f64, f64)> {
        if stop() {
            return Err(stopped());
        }
        let c = self.convert(&input.read_at(0, input.len())?, target);
        out.append(&c.samples)?;
        Ok((c.pitch_before, c.pitch_after))
    }

    /// The voice moved toward `target`, length kept.
    fn convert(&self, samples: &[f32], target: &VoiceProfile) -> Converted {
        self.transform(
            samples,
            &Transform {
                target: Some(target),
                ..Transform::default()
            },
        )
    }
}

/// Pitch mapping, formant warp and time scaling with the WORLD vocoder.
pub struct WorldConverter;

/// The envelope stretched along frequency by `alpha` (> 1 raises the
/// formants), linearly interpolated.
fn warp(row: &[f64], alpha: f64) -> Vec<f64> {
    let bins = row.len();
    (0..bins)
        .map(|k| {
            let src = k as f64 / alpha;
            let i = src.floor() as usize;
            let frac = src - i as f64;
            if i + 1 < bins {
                row[i] * (1.0 - frac) + row[i + 1] * frac
            } else {
                row[bins - 1]
            }
        })
        .collect()
}

/// The analysis resampled to `frames` frames (time scaling at constant
/// pitch): envelopes interpolated linearly, pitch geometrically between
/// voiced frames and from the nearer frame across a voicing change.
fn retime(a: &Analysis, frames: usize) -> Analysis {
    let n = a.f0.len();
    if n < 2 || frames < 2 {
        return Analysis {
            f0: a.f0.clone(),
            sp: a.sp.clone(),
            ap: a.ap.clone(),
        };
    }
    let lerp = |x: &[f64], y: &[f64], t: f64| -> Vec<f64> {
        x.iter().zip(y).map(|(p, q)| p + (q - p) * t).collect()
    };
    let (mut f0, mut sp, mut ap) = (
        Vec::with_capacity(frames),
        Vec::with_capacity(frames),
        Vec::with_capacity(frames),
    );
    for j in 0..frames {
        let pos = j as f64 * (n - 1) as f64 / (frames - 1) as f64;
        let i = (pos.floor() as usize).min(n - 2);
        let t = pos - i as f64;
        let (p, q) = (a.f0[i], a.f0[i + 1]);
        f0.push(if p > 0.0 && q > 0.0 {
            p * (q / p).powf(t)
        } else if t < 0.5 {
            p
        } else {
            q
        });
        sp.push(lerp(&a.sp[i], &a.sp[i + 1], t));
        ap.push(lerp(&a.ap[i], &a.ap[i + 1], t));
    }
    Analysis { f0, sp, ap }
}

/// How a conversion maps pitch and envelope.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    /// Envelope stretch along frequency (formants).
    alpha: f64,
    /// Log-pitch scale about the median (intonation range).
    exponent: f64,
    median_before: f64,
    pitch_to: f64,
}

impl Mapping {
    fn new(source: SourceStats, target: Option<&VoiceProfile>) -> Self {
        let Some(target) = target else {
            return Self {
                alpha: 1.0,
                exponent: 1.0,
                median_before: source.median,
                pitch_to: source.median,
            };
        };
        Self {
            alpha: if source.centroid > 0.0 && target.centroid > 0.0 {
                (target.centroid / source.centroid).clamp(0.8, 1.25)
            } else {
                1.0
            },
            // The contour keeps its shape: log-pitch is scaled about the
            // median so the spread becomes the target's.
            exponent: if source.spread > 1e-3 {
                (target.pitch_spread / source.spread).clamp(0.5, 2.0)
            } else {
                1.0
            },
            median_before: source.median,
            pitch_to: target.pitch_median,
        }
    }

    /// One piece resynthesized with `len` samples (retimed to them when
    /// `retimed`, else cut or padded).
    fn synthesize(&self, a: &Analysis, len: usize, retimed: bool) -> Vec<f32> {
        let hop = f64::from(RATE) * FRAME_MS / 1000.0;
        let stretched;
        let a = if retimed {
            stretched = retime(a, (len as f64 / hop).ceil() as usize + 1);
            &stretched
        } else {
            a
        };
        let f0: Vec<f64> =
            a.f0.iter()
                .map(|&f| {
                    if f > 0.0 && self.median_before > 0.0 {
                        self.pitch_to * (f / self.median_before).powf(self.exponent)
                    } else {
                        0.0
                    }
                })
                .collect();
        let warped;
        let sp = if self.alpha == 1.0 {
            &a.sp
        } else {
            warped =
                a.sp.iter()
                    .map(|row| warp(row, self.alpha))
                    .collect::<Vec<_>>();
            &warped
        };
        let mut y = synthesis(&f0, sp, &a.ap, FRAME_MS, RATE as i32);
        y.resize(len, 0.0);
        y.iter().map(|&s| s.clamp(-1.0, 1.0) as f32).collect()
    }
}

/// The error of work [`Stop`] stopped.
fn stopped() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped")
}

/// Every piece's result, or [`stopped`] when any piece was stopped.
fn every<T>(results: Vec<Option<T>>) -> std::io::Result<Vec<T>> {
    results
        .into_iter()
        .collect::<Option<Vec<T>>>()
        .ok_or_else(stopped)
}

/// Pieces converted at once when a file is walked window by window (about
/// 40 s: the analyses of a window take some 1.6 MB a second).
const WINDOW_PIECES: usize = 4;

/// Walks `input` window by window, each window's pieces cut exactly where
/// [`pieces`] cuts the whole file, and gives `f` each window's pieces.
fn for_each_window(
    input: &PcmFile,
    mut f: impl FnMut(&[&[f64]]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let nominal = (PIECE_SECONDS * f64::from(RATE)) as usize;
    // Room for the pieces and the lookahead the last cut needs.
    let span = WINDOW_PIECES * nominal + nominal / 2 + 2 * RATE as usize;
    let mut start = 0;
    while start < input.len() {
        let x = to_f64(&input.read_at(start, span)?);
        let mut cut = pieces(&x);
        // The window's last piece may end early only because the window
        // does: it starts the next window instead.
        if start + x.len() < input.len() && cut.len() > 1 {
            cut.pop();
        }
        f(&cut)?;
        start += cut.iter().map(|p| p.len()).sum::<usize>();
    }
    Ok(())
}

impl VoiceConverter for WorldConverter {
    fn name(&self) -> &'static str {
        "world"
    }

    fn transform(&self, samples: &[f32], how: &Transform) -> Converted {
        let x = to_f64(samples);
        let pieces = pieces(&x);
        let analyses: Vec<Analysis> = par_map(&pieces, |p| analyse_piece(p, UNSTOPPED))
            .into_iter()
            .flatten()
            .collect();
        // The source's statistics: known, or over the whole clip.
        let source = match how.source {
            Some(s) => SourceStats::of(s),
            None => {
                let mut sum = StatsSum::default();
                for a in &analyses {
                    sum.add(&a.f0, &a.sp);
                }
                sum.stats()
            }
        };
        let mapping = Mapping::new(source, how.target);
        // Each piece keeps its share of the output length.
        let total = how.length.unwrap_or(x.len());
        let ratio = total as f64 / x.len().max(1) as f64;
        let mut lengths: Vec<usize> = pieces
            .iter()
            .map(|p| (p.len() as f64 * ratio).round() as usize)
            .collect();
        let others: usize = lengths.iter().rev().skip(1).sum();
        if let Some(last) = lengths.last_mut() {
            *last = total.saturating_sub(others);
        }
        let jobs: Vec<(usize, Analysis)> = lengths.into_iter().zip(analyses).collect();
        let synthesized = par_map(&jobs, |(len, a)| {
            mapping.synthesize(a, *len, how.length.is_some())
        });
        drop(jobs);
        let out: Vec<f32> = synthesized.concat();
        // The result's pitch, measured again (not assumed).
        Converted {
            pitch_before: source.median,
            pitch_after: median_pitch(&out),
            samples: out,
        }
    }

    /// Window by window: a file longer than one window is read twice, once
    /// for the speaker's statistics over all of it (pitch and envelope
    /// only) and once to convert, so only one window's analyses are ever
    /// in memory. The result is the same as converting the whole file.
    fn convert_file(
        &self,
        input: &PcmFile,
        target: &VoiceProfile,
        out: &mut PcmFile,
        stop: Stop,
    ) -> std::io::Result<(f64, f64)> {
        let mut sum = StatsSum::default();
        let mut kept: Option<Vec<Analysis>> = None;
        let mut windows = 0;
        for_each_window(input, |pieces| {
            windows += 1;
            if windows == 1 {
                let analyses = every(par_map(pieces, |p| analyse_piece(p, stop)))?;
                for a in &analyses {
                    sum.add(&a.f0, &a.sp);
                }
                kept = Some(analyses);
            } else {
                // Longer than a window: statistics only, converted below.
                kept = None;
                for (_, f0, sp) in every(par_map(pieces, |p| envelope(p, stop)))? {
                    sum.add(&f0, &sp);
                }
            }
            Ok(())
        })?;
        let mapping = Mapping::new(sum.stats(), Some(target));
        let mut after = Vec::new();
        let mut convert = |pieces: &[&[f64]], analyses: Vec<Analysis>| {
            let jobs: Vec<(usize, Analysis)> =
                pieces.iter().map(|p| p.len()).zip(analyses).collect();
            let synthesized = par_map(&jobs, |(len, a)| {
                (!stop()).then(|| mapping.synthesize(a, *len, false))
            });
            for y in every(synthesized)? {
                after.extend(pitch(&to_f64(&y)).1);
                out.append(&y)?;
            }
            Ok(())
        };
        match kept {
            Some(analyses) => {
                let x = to_f64(&input.read_at(0, input.len())?);
                convert(&pieces(&x), analyses)?;
            }
            None => for_each_window(input, |pieces| {
                let analyses = every(par_map(pieces, |p| analyse_piece(p, stop)))?;
                convert(pieces, analyses)
            })?,
        }
        Ok((mapping.median_before, pitch_stats(&after).0))
    }
}

/// The median pitch (Hz) of the voiced frames of `samples` (mono at
/// [`RATE`]); 0 when nothing is voiced.
pub fn median_pitch(samples: &[f32]) -> f64 {
    let slices: Vec<&[f32]> = samples
        .chunks((PIECE_SECONDS * f64::from(RATE)) as usize)
        .collect();
    let f0: Vec<f64> = par_map(&slices, |p| pitch(&to_f64(p)).1).concat();
    pitch_stats(&f0).0
}

/// [`median_pitch`] of a file, read piece by piece.
pub fn median_pitch_of(pcm: &PcmFile) -> std::io::Result<f64> {
    let piece = (PIECE_SECONDS * f64::from(RATE)) as usize;
    let mut f0 = Vec::new();
    let mut at = 0;
    while at < pcm.len() {
        let x = pcm.read_at(at, piece * 4)?;
        let slices: Vec<&[f32]> = x.chunks(piece).collect();
        f0.extend(par_map(&slices, |p| pitch(&to_f64(p)).1).concat());
        at += x.len();
    }
    Ok(pitch_stats(&f0).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// WORLD draws its safeguard noise from one random sequence that every
    /// analysis and synthesis in the process shares, so the tests that
    /// compare outputs run one at a time (others running beside them moved
    /// the quietest bins past the tolerance under load).
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static WORLD: std::sync::Mutex<()> = std::sync::Mutex::new(());
        WORLD.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A vowel-like buzz at `f0` Hz with a formant near `formant` Hz.
    fn buzz(f0: f64, formant: f64, seconds: f64) -> Vec<f32> {
        let n = (seconds * f64::from(RATE)) as usize;
        (0..n)
            .map(|i| {
                let t = i as f64 / f64::from(RATE);
                // A slow rise and fall of the pitch, like intonation.
                let f = f0 * (1.0 + 0.08 * (t * 2.0).sin());
                let mut s = 0.0;
                for h in 1..40 {
                    let hz = f * h as f64;
                    let gain = 1.0 / (1.0 + ((hz - formant) / 300.0).powi(2));
                    s += gain * (2.0 * std::f64::consts::PI * hz * t).sin();
                }
                (0.1 * s) as f32
            })
            .collect()
    }

    #[test]
    fn profiles_measure_pitch_and_formants() {
        let _world = one_at_a_time();
        let low = analyse(&[buzz(100.0, 600.0, 3.0)]).unwrap();
        let high = analyse(&[buzz(220.0, 900.0, 3.0)]).unwrap();
        assert!((low.pitch_median - 100.0).abs() < 8.0, "{low:?}");
        assert!((high.pitch_median - 220.0).abs() < 15.0, "{high:?}");
        assert!(high.centroid > low.centroid, "{low:?} {high:?}");
        assert_eq!(
            (low.gender.as_str(), high.gender.as_str()),
            ("male", "female")
        );
    }

    #[test]
    fn conversion_moves_pitch_to_the_target() {
        let _world = one_at_a_time();
        let target = analyse(&[buzz(220.0, 900.0, 3.0)]).unwrap();
        let source = buzz(100.0, 600.0, 4.0);
        let c = WorldConverter.convert(&source, &target);
        assert_eq!(c.samples.len(), source.len());
        assert!((c.pitch_before - 100.0).abs() < 8.0, "{}", c.pitch_before);
        assert!(
            (c.pitch_after / target.pitch_median - 1.0).abs() < 0.1,
            "{} vs {}",
            c.pitch_after,
            target.pitch_median
        );
    }

    #[test]
    fn time_scaling_keeps_the_pitch() {
        let _world = one_at_a_time();
        let source = buzz(140.0, 700.0, 3.0);
        for factor in [0.7, 1.4] {
            let length = (source.len() as f64 * factor) as usize;
            let c = WorldConverter.transform(
                &source,
                &Transform {
                    length: Some(length),
                    ..Transform::default()
                },
            );
            assert_eq!(c.samples.len(), length);
            assert!(
                (c.pitch_after / c.pitch_before - 1.0).abs() < 0.05,
                "{factor}: {} → {}",
                c.pitch_before,
                c.pitch_after
            );
        }
    }

    #[test]
    fn bad_samples_are_named() {
        let _world = one_at_a_time();
        assert_eq!(check_sample(&vec![0.0; 24_000]), Err(SampleProblem::Silent));
        let clipped: Vec<f32> = (0..24_000)
            .map(|i| if i % 10 == 0 { 1.0 } else { 0.1 })
            .collect();
        assert!(matches!(
            check_sample(&clipped),
            Err(SampleProblem::Clipped { .. })
        ));
        let mut seed = 1u32;
        let noise: Vec<f32> = (0..72_000)
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 0.2
            })
            .collect();
        assert!(matches!(
            analyse(&[noise]),
            Err(SampleProblem::NotSpeech { .. })
        ));
    }

    /// Windows cut a long file exactly where the whole file is cut, so a
    /// file converted window by window sounds as if converted whole.
    #[test]
    fn windows_cut_where_the_whole_file_is_cut() {
        let _world = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        let mut pcm = PcmFile::create(&dir.path().join("long.f32"), RATE).unwrap();
        // Speech-like loudness: a beat every 1.3 s, quieter at its ends.
        let x: Vec<f32> = (0..RATE as usize * 200)
            .map(|i| {
                let t = i as f32 / RATE as f32;
                (t * 700.0).sin() * (t * std::f32::consts::PI / 1.3).sin().abs()
            })
            .collect();
        pcm.append(&x).unwrap();
        let whole = to_f64(&x);
        let expected: Vec<usize> = pieces(&whole).iter().map(|p| p.len()).collect();
        let mut got = Vec::new();
        let mut windows = 0;
        for_each_window(&pcm, |ps| {
            windows += 1;
            got.extend(ps.iter().map(|p| p.len()));
            Ok(())
        })
        .unwrap();
        assert!(windows >= 4, "{windows}");
        assert_eq!(got, expected);
    }

    /// A file within one window converts as the clip does.
    #[test]
    fn files_convert_as_clips_do() {
        let _world = one_at_a_time();
        let dir = tempfile::tempdir().unwrap();
        let clip = buzz(110.0, 600.0, 2.0);
        let mut pcm = PcmFile::create(&dir.path().join("in.f32"), RATE).unwrap();
        pcm.append(&clip).unwrap();
        let target = analyse(&[buzz(200.0, 800.0, 2.0)]).unwrap();
        let mut out = PcmFile::create(&dir.path().join("out.f32"), RATE).unwrap();
        let (before, after) = WorldConverter
            .convert_file(&pcm, &target, &mut out, UNSTOPPED)
            .unwrap();
        let whole = WorldConverter.convert(&clip, &target);
        // The same but for WORLD's noise: its aperiodic part is drawn from
        // one random sequence that concurrent syntheses share, so samples
        // match exactly only when nothing else runs. Loudness and pitch do.
        let got = out.read_at(0, out.len()).unwrap();
        assert_eq!(got.len(), whole.samples.len());
        let rms = |x: &[f32]| (x.iter().map(|s| s * s).sum::<f32>() / x.len() as f32).sqrt();
        let (a, b) = (rms(&got), rms(&whole.samples));
        assert!((a / b - 1.0).abs() < 0.1, "{a} {b}");
        assert_eq!(before, whole.pitch_before);
        assert!((after - whole.pitch_after).abs() < 2.0, "{after} {whole:?}");
        assert!((after - target.pitch_median).abs() < 20.0, "{after}");
    }

    /// The per-frame stages run in runs of frames between checks give the
    /// rows one call gives, but for WORLD's safeguard noise, which each call
    /// draws afresh from a reseeded sequence (and concurrent analyses share:
    /// outputs already differ that much from run to run): within 0.15 % on
    /// this buzz's quietest bins (0.006 dB).
    #[test]
    fn frames_analysed_in_runs_match_one_call() {
        let _world = one_at_a_time();
        let x = to_f64(&buzz(140.0, 700.0, 1.3));
        let (times, f0) = pitch(&x);
        assert!(times.len() > 3 * FRAMES_AT_ONCE);
        let close = |a: &[Vec<f64>], b: &[Vec<f64>]| {
            a.len() == b.len()
                && a.iter().flatten().zip(b.iter().flatten()).all(|(p, q)| {
                    (p.is_nan() && q.is_nan())
                        || (p - q).abs() <= 1e-2 * p.abs().max(q.abs()).max(1e-9)
                })
        };
        let mut ct = CheapTrickOption::new(RATE as i32);
        let whole = cheaptrick(&x, RATE as i32, &times, &f0, &mut ct);
        let runs = by_frames(&times, &f0, UNSTOPPED, |t, f| {
            cheaptrick(&x, RATE as i32, t, f, &mut ct)
        })
        .unwrap();
        assert!(close(&whole, &runs));
        let option = D4COption::new();
        let whole = d4c(&x, RATE as i32, &times, &f0, &option);
        let runs = by_frames(&times, &f0, UNSTOPPED, |t, f| {
            d4c(&x, RATE as i32, t, f, &option)
        })
        .unwrap();
        assert!(close(&whole, &runs));
    }

    /// A conversion told to stop (a cancelled job) returns at once, not at
    /// the end of its window (issue 70: a cancelled 900-s conversion kept a
    /// core busy for 107 s).
    #[test]
    fn a_stopped_conversion_returns_at_once() {
        let _world = one_at_a_time();
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let mut pcm = PcmFile::create(&dir.path().join("in.f32"), RATE).unwrap();
        for _ in 0..6 {
            pcm.append(&buzz(120.0, 650.0, 10.0)).unwrap();
        }
        let target = analyse(&[buzz(200.0, 800.0, 2.0)]).unwrap();
        let mut out = PcmFile::create(&dir.path().join("out.f32"), RATE).unwrap();
        let flag = AtomicBool::new(false);
        let raised = std::sync::Mutex::new(None::<std::time::Instant>);
        let began = std::time::Instant::now();
        let stop = || {
            if began.elapsed() > std::time::Duration::from_millis(700) {
                let mut at = raised.lock().unwrap();
                at.get_or_insert_with(std::time::Instant::now);
                flag.store(true, Ordering::SeqCst);
            }
            flag.load(Ordering::SeqCst)
        };
        let e = WorldConverter
            .convert_file(&pcm, &target, &mut out, &stop)
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted);
        let raised = raised.lock().unwrap().expect("the stop was asked");
        // The check itself runs every run of frames; what is left after it
        // says stop is the other threads' current run (a few tens of ms
        // alone). Generous for a loaded machine.
        let late = raised.elapsed();
        eprintln!("stopped {} ms after it was asked", late.as_millis());
        assert!(late < std::time::Duration::from_millis(1500), "{late:?}");
    }
}
