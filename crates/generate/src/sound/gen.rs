//! One generator per sound concept. Each renders `n` samples of its source
//! (one-shots at the start, textures and repeating sources throughout) from
//! its own random stream and the prompt's modifiers.

use super::dsp::*;

/// What the prompt's adjectives and numbers ask of a source.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// 0.4 (soft) … 1.6 (heavy).
    pub intensity: f32,
    /// Event rate and motion: 0.6 (slow) … 1.6 (fast).
    pub rate: f32,
    /// Pitch and size: 0.6 (big, deep) … 1.6 (small, high).
    pub pitch: f32,
    /// Beats per minute asked for, if any.
    pub bpm: Option<f32>,
    /// Minor key (sad, dark) instead of major.
    pub minor: bool,
    /// The words that named the source (variants such as "knock" or "rev").
    pub words: Vec<String>,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            intensity: 1.0,
            rate: 1.0,
            pitch: 1.0,
            bpm: None,
            minor: false,
            words: Vec::new(),
        }
    }
}

impl Params {
    fn has(&self, stem: &str) -> bool {
        self.words.iter().any(|w| w.starts_with(stem))
    }

    /// Events per second of a repeating source at `per_minute` by default.
    fn tempo(&self, per_minute: f32) -> f32 {
        self.bpm.unwrap_or(per_minute * self.rate) / 60.0
    }
}

pub type Generator = fn(&mut Rng, &Params, f32, usize) -> Vec<f32>;

fn secs(i: usize, sr: f32) -> f32 {
    i as f32 / sr
}

/// Impulses at random times (`per_sec` on average) with random amplitudes.
fn impulses(rng: &mut Rng, per_sec: f32, sr: f32, n: usize) -> Vec<f32> {
    let p = per_sec / sr;
    (0..n)
        .map(|_| {
            if rng.unit() < p {
                rng.range(0.3, 1.0) * if rng.unit() < 0.5 { 1.0 } else { -1.0 }
            } else {
                0.0
            }
        })
        .collect()
}

/// A decaying noise burst (a click, a clap, a crack).
fn burst(rng: &mut Rng, decay: f32, sr: f32) -> Vec<f32> {
    let len = (decay * 6.0 * sr) as usize;
    (0..len)
        .map(|i| rng.signed() * hit(secs(i, sr), 0.0005, decay))
        .collect()
}

/// A decaying sine whose pitch falls from `from` to `to` Hz (thumps, kicks).
fn thump(from: f32, to: f32, decay: f32, sr: f32) -> Vec<f32> {
    let len = (decay * 6.0 * sr) as usize;
    let mut ph = Phase::default();
    (0..len)
        .map(|i| {
            let t = secs(i, sr);
            let hz = to + (from - to) * (-t / (decay * 0.5)).exp();
            sine(ph.tick(hz, sr)) * hit(t, 0.002, decay)
        })
        .collect()
}

fn filtered(mut buf: Vec<f32>, mut f: Biquad) -> Vec<f32> {
    f.apply(&mut buf);
    buf
}

/// Times of a repeating event: every `1/per_sec` s from `first`, jittered.
fn beats(rng: &mut Rng, per_sec: f32, first: f32, jitter: f32, sr: f32, n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut t = first;
    while t * sr < n as f32 {
        let j = rng.signed() * jitter;
        out.push(((t + j).max(0.0) * sr) as usize);
        t += 1.0 / per_sec;
    }
    out
}

pub fn rain(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut pink = Pink::default();
    let mut hp = Biquad::highpass(sr, 500.0, 0.7);
    let bed: Vec<f32> = (0..n).map(|_| hp.run(pink.next(rng.signed()))).collect();
    let drops = filtered(
        impulses(rng, 180.0 * p.intensity, sr, n),
        Biquad::bandpass(sr, 3200.0 * p.pitch, 1.5),
    );
    bed.iter()
        .zip(&drops)
        .map(|(b, d)| b * 0.8 + d * 2.5)
        .collect()
}

pub fn wind(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut brown = Brown::default();
    let mut bp = Biquad::bandpass(sr, 400.0, 1.2);
    let (mut lfo, mut gust) = (Phase(rng.unit()), Phase(rng.unit()));
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i % 64 == 0 {
            let l = sine(lfo.tick(0.13 * p.rate * 64.0, sr));
            bp.retune(Biquad::bandpass(sr, (450.0 + 300.0 * l) * p.pitch, 1.2));
        }
        let g = 0.55 + 0.45 * sine(gust.tick(0.07 * p.rate, sr));
        out.push(bp.run(brown.next(rng.signed())) * g);
    }
    out
}

pub fn thunder(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let strikes = 1 + (secs(n, sr) / 12.0) as usize;
    for s in 0..strikes {
        let at = if s == 0 {
            0.05
        } else {
            rng.range(0.2, 0.8) * secs(n, sr)
        };
        let len = ((4.0 * sr) as usize).min(n);
        let mut brown = Brown::default();
        let mut lp = Biquad::lowpass(sr, 160.0 * p.pitch, 0.8);
        let rumble: Vec<f32> = (0..len)
            .map(|i| lp.run(brown.next(rng.signed())) * hit(secs(i, sr), 0.08, 1.4 / p.rate))
            .collect();
        let crack = filtered(burst(rng, 0.06, sr), Biquad::highpass(sr, 900.0, 0.7));
        mix_at(&mut out, &rumble, (at * sr) as usize, 2.5);
        mix_at(&mut out, &crack, (at * sr) as usize, 0.6 * p.intensity);
    }
    reverb(&mut out, sr, 0.9, 0.3);
    out
}

pub fn fire(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut brown = Brown::default();
    let mut lp = Biquad::lowpass(sr, 350.0, 0.7);
    let roar: Vec<f32> = (0..n).map(|_| lp.run(brown.next(rng.signed()))).collect();
    let mut crackle = vec![0.0; n];
    let pops = impulses(rng, 14.0 * p.intensity, sr, n);
    for (i, &a) in pops.iter().enumerate() {
        if a != 0.0 {
            let decay = rng.range(0.0008, 0.003);
            let b = burst(rng, decay, sr);
            mix_at(&mut crackle, &b, i, a.abs() * a.abs());
        }
    }
    let crackle = filtered(crackle, Biquad::highpass(sr, 1500.0, 0.7));
    roar.iter()
        .zip(&crackle)
        .map(|(r, c)| r * 0.5 + c)
        .collect()
}

pub fn ocean(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut pink = Pink::default();
    let mut lp = Biquad::lowpass(sr, 800.0, 0.7);
    let period = 7.0 / p.rate;
    let offset = rng.unit();
    (0..n)
        .map(|i| {
            let phase = (secs(i, sr) / period + offset).fract();
            let swell = (0.5 - 0.5 * sine(phase + 0.25)).powi(2);
            if i % 64 == 0 {
                lp.retune(Biquad::lowpass(sr, 400.0 + 2200.0 * swell, 0.7));
            }
            lp.run(pink.next(rng.signed())) * (0.25 + 0.75 * swell)
        })
        .collect()
}

pub fn stream(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut pink = Pink::default();
    let mut bp = Biquad::bandpass(sr, 1800.0, 0.6);
    let mut out: Vec<f32> = (0..n)
        .map(|_| bp.run(pink.next(rng.signed())) * 0.6)
        .collect();
    let bubbles = (40.0 * p.intensity * secs(n, sr)) as usize;
    for _ in 0..bubbles {
        let at = (rng.unit() * n as f32) as usize;
        let f0 = rng.range(400.0, 1400.0) * p.pitch;
        let len = (0.03 * sr) as usize;
        let mut ph = Phase::default();
        let b: Vec<f32> = (0..len)
            .map(|i| {
                let t = secs(i, sr);
                sine(ph.tick(f0 * (1.0 + 6.0 * t), sr)) * hit(t, 0.002, 0.01)
            })
            .collect();
        mix_at(&mut out, &b, at, rng.range(0.1, 0.35));
    }
    out
}

pub fn birds(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let mut t = rng.range(0.05, 0.4);
    while t * sr < n as f32 {
        let base = rng.range(2800.0, 5000.0) * p.pitch;
        let chirps = 2 + (rng.unit() * 4.0) as usize;
        let mut at = t;
        for _ in 0..chirps {
            let len = rng.range(0.05, 0.12);
            let sweep = rng.range(-0.4, 0.5);
            let mut ph = Phase::default();
            let chirp: Vec<f32> = (0..(len * sr) as usize)
                .map(|i| {
                    let x = secs(i, sr) / len;
                    let hz = base * (1.0 + sweep * x) * (1.0 + 0.03 * sine(x * 6.0));
                    sine(ph.tick(hz, sr)) * (PI_F * x).sin().powi(2)
                })
                .collect();
            mix_at(&mut out, &chirp, (at * sr) as usize, rng.range(0.4, 1.0));
            at += len + rng.range(0.03, 0.1);
        }
        t = at + rng.range(0.4, 1.6) / p.rate;
    }
    out
}

const PI_F: f32 = std::f32::consts::PI;

/// Babble: formant-filtered noise voices with syllable rhythm. Voices sit
/// under 1.5 kHz, so they are made at a quarter of the rate and
/// interpolated up (four times less work).
pub fn crowd(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    const DOWN: usize = 4;
    let lr = sr / DOWN as f32;
    let m = n / DOWN + 2;
    let mut low = vec![0.0f32; m];
    let voices = (12.0 * p.intensity) as usize + 4;
    for _ in 0..voices {
        let mut pink = Pink::default();
        let mut bp = Biquad::bandpass(lr, rng.range(350.0, 1100.0) * p.pitch, 4.0);
        let mut syl = Phase(rng.unit());
        let rate = rng.range(3.0, 5.5);
        let pause = rng.unit();
        let mut level = 0.0;
        for (i, o) in low.iter_mut().enumerate() {
            if i % 8 == 0 {
                let t = secs(i, lr);
                // Syllables, in phrases with pauses between them.
                let talking = ((t * 0.3 + pause).fract() < 0.7) as u8 as f32;
                level = sine(syl.tick(rate * 8.0, lr)).max(0.0) * talking;
            }
            *o += bp.run(pink.next(rng.signed())) * level;
        }
    }
    let up: Vec<f32> = (0..n)
        .map(|i| {
            let (k, f) = (i / DOWN, (i % DOWN) as f32 / DOWN as f32);
            low[k] * (1.0 - f) + low[k + 1] * f
        })
        .collect();
    filtered(up, Biquad::lowpass(sr, 1800.0, 0.7))
}

pub fn applause(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let total = secs(n, sr);
    let claps = (35.0 * p.intensity * total) as usize;
    for _ in 0..claps {
        let at = rng.unit() * total;
        let decay = rng.range(0.004, 0.009);
        let b = burst(rng, decay, sr);
        mix_at(&mut out, &b, (at * sr) as usize, ar(at, 0.4, 1.2, total));
    }
    let mut out = filtered(out, Biquad::bandpass(sr, 1600.0 * p.pitch, 0.8));
    reverb(&mut out, sr, 0.6, 0.2);
    out
}

pub fn footsteps(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let per_sec = p.tempo(110.0);
    for (k, at) in beats(rng, per_sec, 0.1, 0.008, sr, n)
        .into_iter()
        .enumerate()
    {
        let heel = thump(110.0 * p.pitch, 60.0 * p.pitch, 0.035, sr);
        let scuff = filtered(burst(rng, 0.02, sr), Biquad::lowpass(sr, 2500.0, 0.7));
        let g = if k % 2 == 0 { 1.0 } else { 0.85 };
        mix_at(&mut out, &heel, at, g * p.intensity);
        mix_at(&mut out, &scuff, at, 0.5 * g);
        mix_at(&mut out, &scuff, at + (0.045 * sr) as usize, 0.2 * g);
    }
    out
}

pub fn door(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    if p.has("knock") {
        for k in 0..3 {
            let b = filtered(
                burst(rng, 0.03, sr),
                Biquad::bandpass(sr, 280.0 * p.pitch, 5.0),
            );
            mix_at(
                &mut out,
                &b,
                ((0.05 + 0.2 * k as f32 / p.rate) * sr) as usize,
                4.0,
            );
        }
    } else {
        // A creak, then the slam.
        let len = (0.6 * sr) as usize;
        let mut ph = Phase::default();
        let mut bp = Biquad::bandpass(sr, 900.0, 6.0);
        let creak: Vec<f32> = (0..len)
            .map(|i| {
                let t = secs(i, sr);
                let hz = (70.0 + 50.0 * sine(t * 1.3)) * p.pitch;
                bp.run(saw(ph.tick(hz, sr))) * ar(t, 0.1, 0.1, 0.6)
            })
            .collect();
        mix_at(&mut out, &creak, (0.02 * sr) as usize, 0.6);
        let slam = thump(90.0 * p.pitch, 50.0 * p.pitch, 0.12, sr);
        let crack = filtered(burst(rng, 0.05, sr), Biquad::lowpass(sr, 1800.0, 0.7));
        let at = (0.65 * sr) as usize;
        mix_at(&mut out, &slam, at, 1.0 * p.intensity);
        mix_at(&mut out, &crack, at, 0.7 * p.intensity);
    }
    reverb(&mut out, sr, 0.5, 0.2);
    out
}

pub fn explosion(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let len = ((3.5 * sr) as usize).min(n);
    let mut lp = Biquad::lowpass(sr, 4000.0, 0.7);
    let mut out = vec![0.0; n];
    for (i, o) in out.iter_mut().take(len).enumerate() {
        let t = secs(i, sr);
        if i % 64 == 0 {
            lp.retune(Biquad::lowpass(
                sr,
                (200.0 + 3800.0 * (-t / 0.3).exp()) * p.pitch,
                0.7,
            ));
        }
        *o = lp.run(rng.signed()) * hit(t, 0.004, 0.7);
    }
    let boom = thump(70.0 * p.pitch, 32.0 * p.pitch, 0.5, sr);
    mix_at(&mut out, &boom, 0, 1.2 * p.intensity);
    reverb(&mut out, sr, 0.95, 0.35);
    out
}

pub fn gunshot(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let shots = if p.has("shots") || p.has("gunfire") {
        3
    } else {
        1
    };
    for k in 0..shots {
        let at = ((0.02 + 0.35 * k as f32 / p.rate) * sr) as usize;
        let crack = filtered(burst(rng, 0.012, sr), Biquad::highpass(sr, 500.0, 0.7));
        mix_at(&mut out, &crack, at, 1.0);
        mix_at(
            &mut out,
            &thump(140.0 * p.pitch, 60.0, 0.05, sr),
            at,
            0.8 * p.intensity,
        );
    }
    reverb(&mut out, sr, 0.7, 0.35);
    out
}

pub fn engine(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let revving = p.has("rev") || p.has("accelerat");
    let mut ph = Phase::default();
    let mut lp = Biquad::lowpass(sr, 500.0, 0.9);
    let mut brown = Brown::default();
    let total = secs(n, sr);
    (0..n)
        .map(|i| {
            let t = secs(i, sr);
            let up = if revving {
                1.0 + 1.6 * (t / total.max(0.1))
            } else {
                1.0
            };
            let hz = 32.0 * p.pitch * p.rate.sqrt() * up;
            let phase = ph.tick(hz, sr);
            let firing = saw(phase) * 0.6 + square((phase * 2.0).fract()) * 0.3;
            lp.run(firing + brown.next(rng.signed()) * 0.3) * (0.8 + 0.2 * sine(t * 3.1))
        })
        .collect()
}

pub fn siren(_: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut ph = Phase::default();
    let mut lp = Biquad::lowpass(sr, 3000.0, 0.7);
    let period = 4.0 / p.rate;
    (0..n)
        .map(|i| {
            let t = secs(i, sr);
            let hz = (650.0 + 550.0 * (0.5 - 0.5 * (2.0 * PI_F * t / period).cos())) * p.pitch;
            let ph = ph.tick(hz * (1.0 + 0.01 * sine(t * 6.0)), sr);
            lp.run(triangle(ph) * 0.7 + square(ph) * 0.3)
        })
        .collect()
}

/// Partials of a struck bar or bell: `(ratio, amplitude, decay seconds)`,
/// at most eight. Each partial is a rotating phasor with a per-sample decay
/// factor (no sine or exponential per sample); all partials advance
/// together (independent chains the CPU overlaps), in blocks renormalised
/// between them, until every partial is below -60 dB.
fn struck(partials: &[(f32, f32, f32)], f0: f32, secs_len: f32, sr: f32) -> Vec<f32> {
    const MAX: usize = 8;
    let len = (secs_len * sr) as usize;
    let attack = ((0.002 * sr) as usize).max(1);
    let count = partials.len().min(MAX);
    let (mut cw, mut sw, mut fall) = ([1.0f32; MAX], [0.0f32; MAX], [0.0f32; MAX]);
    let (mut x, mut y, mut a) = ([1.0f32; MAX], [0.0f32; MAX], [0.0f32; MAX]);
    let mut quiet = 0.0f32;
    for (k, &(ratio, amp, decay)) in partials.iter().take(MAX).enumerate() {
        let w = 2.0 * PI_F * (f0 * ratio / sr).min(0.49);
        (cw[k], sw[k]) = (w.cos(), w.sin());
        fall[k] = (-1.0 / (decay * sr)).exp();
        a[k] = amp;
        quiet = quiet.max(amp * 1e-3);
    }
    let mut out = vec![0.0; len];
    for (b, block) in out.chunks_mut(1024).enumerate() {
        for (i, o) in block.iter_mut().enumerate() {
            let mut sum = 0.0;
            for k in 0..count {
                sum += y[k] * a[k];
                (x[k], y[k]) = (x[k] * cw[k] - y[k] * sw[k], x[k] * sw[k] + y[k] * cw[k]);
                a[k] *= fall[k];
            }
            let at = b * 1024 + i;
            *o = if at < attack {
                sum * at as f32 / attack as f32
            } else {
                sum
            };
        }
        for k in 0..count {
            let norm = (x[k] * x[k] + y[k] * y[k]).sqrt();
            (x[k], y[k]) = (x[k] / norm, y[k] / norm);
        }
        if a.iter().take(count).all(|&v| v < quiet) {
            break;
        }
    }
    out
}

pub fn bell(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let partials = [
        (0.5, 0.6, 3.5),
        (1.0, 1.0, 2.5),
        (1.183, 0.5, 2.0),
        (1.506, 0.4, 1.6),
        (2.0, 0.5, 1.2),
        (2.514, 0.25, 0.9),
        (3.011, 0.2, 0.7),
    ];
    let mut out = vec![0.0; n];
    let ringing = p.has("ringing") || p.has("bells");
    let strikes = if ringing {
        beats(rng, p.tempo(30.0), 0.02, 0.0, sr, n)
    } else {
        vec![(0.02 * sr) as usize]
    };
    let strike = struck(&partials, 330.0 * p.pitch, 4.0, sr);
    for at in strikes {
        mix_at(&mut out, &strike, at, 1.0);
    }
    out
}

pub fn chime(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let partials = [(1.0, 1.0, 1.2), (2.76, 0.35, 0.6), (5.4, 0.15, 0.3)];
    let mut out = vec![0.0; n];
    if p.has("wind") {
        // Wind chimes: random strikes on a pentatonic set.
        let notes = [1.0, 1.125, 1.25, 1.5, 1.667, 2.0];
        let hits = (2.5 * p.rate * secs(n, sr)) as usize + 1;
        for _ in 0..hits {
            let f = 880.0 * p.pitch * notes[(rng.unit() * notes.len() as f32) as usize];
            let at = (rng.unit() * n as f32) as usize;
            mix_at(
                &mut out,
                &struck(&partials, f, 2.0, sr),
                at,
                rng.range(0.3, 1.0),
            );
        }
    } else {
        mix_at(
            &mut out,
            &struck(&partials, 1046.5 * p.pitch, 2.0, sr),
            0,
            1.0,
        );
        mix_at(
            &mut out,
            &struck(&partials, 1318.5 * p.pitch, 2.0, sr),
            (0.18 * sr) as usize,
            0.8,
        );
    }
    out
}

pub fn beep(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let hz = 1000.0 * p.pitch;
    let len = 0.25;
    let starts = if p.has("beeps") || p.has("beeping") {
        beats(rng, p.tempo(120.0), 0.0, 0.0, sr, n)
    } else {
        vec![0]
    };
    let mut ph = Phase::default();
    let tone: Vec<f32> = (0..(len * sr) as usize)
        .map(|i| sine(ph.tick(hz, sr)) * ar(secs(i, sr), 0.005, 0.005, len))
        .collect();
    let mut out = vec![0.0; n];
    for at in starts {
        mix_at(&mut out, &tone, at, 1.0);
    }
    out
}

pub fn whoosh(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let len = ((0.9 / p.rate * sr) as usize).min(n);
    let mut pink = Pink::default();
    let mut bp = Biquad::bandpass(sr, 300.0, 1.8);
    let mut out = vec![0.0; n];
    for (i, o) in out.iter_mut().take(len).enumerate() {
        let x = i as f32 / len as f32;
        if i % 32 == 0 {
            let hz = (300.0 + 2700.0 * (PI_F * x).sin()) * p.pitch;
            bp.retune(Biquad::bandpass(sr, hz, 1.8));
        }
        *o = bp.run(pink.next(rng.signed())) * (PI_F * x).sin().powi(2);
    }
    out
}

/// A square-wave sweep with exponential glide (sfxr style).
fn sweep(from: f32, to: f32, len: f32, sr: f32, vibrato: f32) -> Vec<f32> {
    let mut ph = Phase::default();
    (0..(len * sr) as usize)
        .map(|i| {
            let t = secs(i, sr);
            let x = t / len;
            let hz = from * (to / from).powf(x) * (1.0 + vibrato * sine(t * 30.0));
            square(ph.tick(hz, sr)) * (1.0 - x).powf(0.7) * 0.5
        })
        .collect()
}

pub fn laser(_: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    mix_at(
        &mut out,
        &sweep(1600.0 * p.pitch, 180.0 * p.pitch, 0.28 / p.rate, sr, 0.02),
        0,
        1.0,
    );
    out
}

pub fn coin(_: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let note = |hz: f32, len: f32| sweep(hz, hz, len, sr, 0.0);
    mix_at(&mut out, &note(987.8 * p.pitch, 0.08), 0, 1.0);
    mix_at(
        &mut out,
        &note(1318.5 * p.pitch, 0.3),
        (0.08 * sr) as usize,
        1.0,
    );
    out
}

pub fn jump(_: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    mix_at(
        &mut out,
        &sweep(240.0 * p.pitch, 720.0 * p.pitch, 0.22 / p.rate, sr, 0.0),
        0,
        1.0,
    );
    out
}

pub fn power_up(_: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let notes = [523.3, 659.3, 784.0, 1046.5, 1318.5, 1568.0];
    let step = 0.07 / p.rate;
    for (k, hz) in notes.iter().enumerate() {
        let len = if k + 1 == notes.len() { 0.35 } else { step };
        let tone = sweep(hz * p.pitch, hz * p.pitch, len, sr, 0.015);
        mix_at(&mut out, &tone, (k as f32 * step * sr) as usize, 1.0);
    }
    out
}

pub fn heartbeat(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let per_sec = p.tempo(65.0);
    for at in beats(rng, per_sec, 0.05, 0.0, sr, n) {
        let lub = thump(65.0 * p.pitch, 45.0 * p.pitch, 0.06, sr);
        let dub = thump(80.0 * p.pitch, 55.0 * p.pitch, 0.05, sr);
        mix_at(&mut out, &lub, at, 1.0 * p.intensity);
        mix_at(
            &mut out,
            &dub,
            at + (0.28 / per_sec.max(0.5) * sr) as usize,
            0.7,
        );
    }
    filtered(out, Biquad::lowpass(sr, 200.0, 0.7))
}

pub fn clock(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    for (k, at) in beats(rng, p.tempo(60.0), 0.02, 0.0, sr, n)
        .into_iter()
        .enumerate()
    {
        let hz = if k % 2 == 0 { 3200.0 } else { 2400.0 } * p.pitch;
        let click = filtered(burst(rng, 0.004, sr), Biquad::bandpass(sr, hz, 4.0));
        mix_at(&mut out, &click, at, 3.0);
    }
    reverb(&mut out, sr, 0.3, 0.15);
    out
}

pub fn typing(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    let mut t = 0.05;
    let mean_gap = 0.14 / p.rate;
    while t * sr < n as f32 {
        let space = rng.unit() < 0.12;
        let hz = if space {
            900.0
        } else {
            rng.range(2000.0, 4200.0)
        } * p.pitch;
        let click = filtered(burst(rng, 0.005, sr), Biquad::bandpass(sr, hz, 2.0));
        let at = (t * sr) as usize;
        mix_at(&mut out, &click, at, if space { 2.0 } else { 1.4 });
        mix_at(&mut out, &thump(240.0, 160.0, 0.01, sr), at, 0.3);
        // Exponential gaps, with the odd pause between words.
        t += -mean_gap * (1.0 - rng.unit()).max(1e-3).ln() * 0.7 + 0.03;
        if rng.unit() < 0.05 {
            t += rng.range(0.3, 0.8);
        }
    }
    out
}

/// Music from instrument, tempo and mood words: a four-chord progression
/// with a seeded melody over it, and drums when asked.
pub fn music(rng: &mut Rng, p: &Params, sr: f32, n: usize) -> Vec<f32> {
    let bpm = p.bpm.unwrap_or(100.0 * p.rate).clamp(40.0, 220.0);
    let beat = 60.0 / bpm;
    let (scale, chords): (&[i32], [[i32; 3]; 4]) = if p.minor {
        (
            &[0, 2, 3, 5, 7, 8, 10],
            [[0, 3, 7], [8, 12, 15], [3, 7, 10], [10, 14, 17]],
        )
    } else {
        (
            &[0, 2, 4, 5, 7, 9, 11],
            [[0, 4, 7], [7, 11, 14], [9, 12, 16], [5, 9, 12]],
        )
    };
    let root = if p.minor { 57.0 } else { 60.0 } + 12.0 * (p.pitch.log2()).round();
    let hz = |midi: f32| 440.0 * 2f32.powf((midi - 69.0) / 12.0);
    let instrument = if p.has("guitar") || p.has("harp") {
        "pluck"
    } else if p.has("pad") || p.has("string") || p.has("ambient") || p.has("synth") {
        "pad"
    } else {
        "piano"
    };
    let note = |rng: &mut Rng, f: f32, len: f32| -> Vec<f32> {
        match instrument {
            "pluck" => pluck(rng, f, len + 0.5, sr, 0.996),
            "pad" => {
                let (mut a, mut b) = (Phase::default(), Phase::default());
                let mut lp = Biquad::lowpass(sr, 1400.0, 0.7);
                (0..((len + 0.3) * sr) as usize)
                    .map(|i| {
                        let t = secs(i, sr);
                        let x = saw(a.tick(f * 1.003, sr)) + saw(b.tick(f * 0.997, sr));
                        lp.run(x) * 0.4 * ar(t, 0.25, 0.3, len + 0.3)
                    })
                    .collect()
            }
            _ => struck(
                &[
                    (1.0, 1.0, 1.2),
                    (2.0, 0.5, 0.8),
                    (3.0, 0.25, 0.5),
                    (4.0, 0.12, 0.3),
                ],
                f,
                len + 0.8,
                sr,
            ),
        }
    };
    let mut out = vec![0.0; n];
    let bars = (secs(n, sr) / (4.0 * beat)).ceil() as usize;
    let mut degree = 4i32;
    for bar in 0..bars {
        let chord = chords[bar % 4];
        let at = (bar as f32 * 4.0 * beat * sr) as usize;
        for &c in &chord {
            let tone = note(rng, hz(root - 12.0 + c as f32), 4.0 * beat);
            mix_at(&mut out, &tone, at, 0.25);
        }
        for b in 0..4 {
            degree = (degree + (rng.unit() * 5.0) as i32 - 2).clamp(0, 13);
            let pitch = root + scale[degree as usize % 7] as f32 + 12.0 * (degree / 7) as f32;
            let tone = note(rng, hz(pitch), beat * 0.9);
            mix_at(&mut out, &tone, at + (b as f32 * beat * sr) as usize, 0.45);
        }
    }
    if p.has("drum") || p.has("beat") || p.has("rock") || p.has("dance") {
        for (k, at) in beats(rng, bpm / 60.0, 0.0, 0.0, sr, n)
            .into_iter()
            .enumerate()
        {
            if k % 2 == 0 {
                mix_at(&mut out, &thump(120.0, 45.0, 0.12, sr), at, 0.9);
            } else {
                let snare = filtered(burst(rng, 0.04, sr), Biquad::bandpass(sr, 1800.0, 0.7));
                mix_at(&mut out, &snare, at, 0.6);
            }
            let hat = filtered(burst(rng, 0.008, sr), Biquad::highpass(sr, 7000.0, 0.7));
            mix_at(&mut out, &hat, at + (beat * 0.5 * sr) as usize, 0.25);
        }
    }
    reverb(&mut out, sr, 0.5, 0.18);
    out
}
