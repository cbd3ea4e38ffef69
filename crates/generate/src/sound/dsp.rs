//! The small, deterministic signal-processing kit the sound generator is
//! built from: a seeded random source, noise colours, RBJ biquad filters,
//! oscillators, envelopes, a plucked string and a Schroeder reverb. Mono
//! `f32` at any sample rate.

use std::f32::consts::PI;

pub use mediagen_core::rng::Rng;

/// Pink noise (-3 dB/octave), Paul Kellet's economy filter.
#[derive(Debug, Default, Clone)]
pub struct Pink([f32; 3]);

impl Pink {
    pub fn next(&mut self, white: f32) -> f32 {
        let b = &mut self.0;
        b[0] = 0.99765 * b[0] + white * 0.099_046;
        b[1] = 0.963 * b[1] + white * 0.296_516_4;
        b[2] = 0.57 * b[2] + white * 1.052_691_3;
        (b[0] + b[1] + b[2] + white * 0.1848) * 0.25
    }
}

/// Brown noise (-6 dB/octave): leaky integrated white noise.
#[derive(Debug, Default, Clone)]
pub struct Brown(f32);

impl Brown {
    pub fn next(&mut self, white: f32) -> f32 {
        self.0 = (self.0 * 0.996 + white * 0.04).clamp(-1.0, 1.0);
        self.0 * 3.0
    }
}

/// An RBJ-cookbook biquad filter (transposed direct form II).
#[derive(Debug, Clone, Default)]
pub struct Biquad {
    b: [f32; 3],
    a: [f32; 2],
    z: [f32; 2],
}

impl Biquad {
    fn from(b0: f32, b1: f32, b2: f32, a0: f32, a1: f32, a2: f32) -> Self {
        Self {
            b: [b0 / a0, b1 / a0, b2 / a0],
            a: [a1 / a0, a2 / a0],
            z: [0.0; 2],
        }
    }

    fn parts(sr: f32, hz: f32, q: f32) -> (f32, f32) {
        let w = 2.0 * PI * (hz / sr).clamp(1e-5, 0.49);
        (w.cos(), w.sin() / (2.0 * q.max(0.05)))
    }

    pub fn lowpass(sr: f32, hz: f32, q: f32) -> Self {
        let (c, al) = Self::parts(sr, hz, q);
        Self::from(
            (1.0 - c) / 2.0,
            1.0 - c,
            (1.0 - c) / 2.0,
            1.0 + al,
            -2.0 * c,
            1.0 - al,
        )
    }

    pub fn highpass(sr: f32, hz: f32, q: f32) -> Self {
        let (c, al) = Self::parts(sr, hz, q);
        Self::from(
            (1.0 + c) / 2.0,
            -(1.0 + c),
            (1.0 + c) / 2.0,
            1.0 + al,
            -2.0 * c,
            1.0 - al,
        )
    }

    /// Band-pass with 0 dB peak gain.
    pub fn bandpass(sr: f32, hz: f32, q: f32) -> Self {
        let (c, al) = Self::parts(sr, hz, q);
        Self::from(al, 0.0, -al, 1.0 + al, -2.0 * c, 1.0 - al)
    }

    /// Moves the centre/cut-off keeping the state (for sweeps).
    pub fn retune(&mut self, other: Biquad) {
        self.b = other.b;
        self.a = other.a;
    }

    pub fn run(&mut self, x: f32) -> f32 {
        let y = self.b[0] * x + self.z[0];
        self.z[0] = self.b[1] * x - self.a[0] * y + self.z[1];
        self.z[1] = self.b[2] * x - self.a[1] * y;
        y
    }

    pub fn apply(&mut self, buf: &mut [f32]) {
        for s in buf {
            *s = self.run(*s);
        }
    }
}

/// A phase accumulator for periodic waves.
#[derive(Debug, Clone, Default)]
pub struct Phase(pub f32);

impl Phase {
    /// Advances by `hz` and returns the phase in [0, 1).
    pub fn tick(&mut self, hz: f32, sr: f32) -> f32 {
        let p = self.0;
        self.0 = (self.0 + hz / sr).fract();
        p
    }
}

pub fn sine(p: f32) -> f32 {
    (2.0 * PI * p).sin()
}

pub fn square(p: f32) -> f32 {
    if p < 0.5 {
        1.0
    } else {
        -1.0
    }
}

pub fn saw(p: f32) -> f32 {
    2.0 * p - 1.0
}

pub fn triangle(p: f32) -> f32 {
    1.0 - 4.0 * (p - 0.5).abs()
}

/// Attack-then-exponential-decay envelope at `t` seconds.
pub fn hit(t: f32, attack: f32, decay: f32) -> f32 {
    if t < 0.0 {
        0.0
    } else if t < attack {
        t / attack
    } else {
        (-(t - attack) / decay.max(1e-4)).exp()
    }
}

/// Linear attack, sustain, linear release over `len` seconds.
pub fn ar(t: f32, attack: f32, release: f32, len: f32) -> f32 {
    if t < 0.0 || t > len {
        0.0
    } else if t < attack {
        t / attack
    } else if t > len - release {
        ((len - t) / release).max(0.0)
    } else {
        1.0
    }
}

/// Adds `src` into `dst` at sample `at`, scaled by `gain` (clipped to the end).
pub fn mix_at(dst: &mut [f32], src: &[f32], at: usize, gain: f32) {
    if at >= dst.len() {
        return;
    }
    for (d, s) in dst[at..].iter_mut().zip(src) {
        *d += s * gain;
    }
}

/// A Karplus-Strong plucked string: `secs` seconds of a note at `hz`.
pub fn pluck(rng: &mut Rng, hz: f32, secs: f32, sr: f32, damping: f32) -> Vec<f32> {
    let period = (sr / hz).max(2.0) as usize;
    let mut line: Vec<f32> = (0..period).map(|_| rng.signed()).collect();
    let n = (secs * sr) as usize;
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    for _ in 0..n {
        let next = (i + 1) % period;
        let v = line[i];
        line[i] = damping * 0.5 * (line[i] + line[next]);
        out.push(v);
        i = next;
    }
    out
}

/// A Schroeder reverb (four combs, two all-passes); `room` 0–1 sets the
/// decay, `wet` the mix.
pub fn reverb(buf: &mut [f32], sr: f32, room: f32, wet: f32) {
    let scale = sr / 44_100.0;
    let combs = [1557, 1617, 1491, 1422].map(|d| ((d as f32 * scale) as usize).max(1));
    let passes = [225, 556].map(|d| ((d as f32 * scale) as usize).max(1));
    let feedback = 0.7 + 0.28 * room.clamp(0.0, 1.0);
    let mut comb_lines: Vec<Vec<f32>> = combs.iter().map(|&d| vec![0.0; d]).collect();
    let mut pass_lines: Vec<Vec<f32>> = passes.iter().map(|&d| vec![0.0; d]).collect();
    let mut comb_i = [0usize; 4];
    let mut pass_i = [0usize; 2];
    let mut damp = [0.0f32; 4];
    for s in buf.iter_mut() {
        let x = *s;
        let mut acc = 0.0;
        for (k, line) in comb_lines.iter_mut().enumerate() {
            let y = line[comb_i[k]];
            damp[k] = y * 0.6 + damp[k] * 0.4;
            line[comb_i[k]] = x + damp[k] * feedback;
            comb_i[k] = (comb_i[k] + 1) % line.len();
            acc += y;
        }
        let mut y = acc * 0.25;
        for (k, line) in pass_lines.iter_mut().enumerate() {
            let delayed = line[pass_i[k]];
            let v = y + delayed * 0.5;
            line[pass_i[k]] = v;
            y = delayed - v * 0.5;
            pass_i[k] = (pass_i[k] + 1) % line.len();
        }
        *s = x * (1.0 - wet) + y * wet;
    }
}

/// Root mean square.
pub fn rms(buf: &[f32]) -> f32 {
    if buf.is_empty() {
        return 0.0;
    }
    (buf.iter().map(|x| x * x).sum::<f32>() / buf.len() as f32).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_seeded_and_uniform() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<f32> = (0..1000).map(|_| a.unit()).collect();
        assert!(xs
            .iter()
            .zip((0..1000).map(|_| b.unit()))
            .all(|(x, y)| *x == y));
        let mean = xs.iter().sum::<f32>() / 1000.0;
        assert!((mean - 0.5).abs() < 0.05 && xs.iter().all(|x| (0.0..1.0).contains(x)));
        assert_ne!(Rng::new(8).next_u64(), Rng::new(7).next_u64());
    }

    #[test]
    fn lowpass_passes_lows_and_stops_highs() {
        let sr = 44_100.0;
        let tone = |hz: f32| -> f32 {
            let mut f = Biquad::lowpass(sr, 500.0, 0.707);
            let mut p = Phase::default();
            let out: Vec<f32> = (0..44_100).map(|_| f.run(sine(p.tick(hz, sr)))).collect();
            rms(&out[4410..])
        };
        assert!(tone(100.0) > 0.6 && tone(8000.0) < 0.01);
    }
}
