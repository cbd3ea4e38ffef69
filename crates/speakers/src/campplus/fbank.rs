//! Kaldi's log-mel filter bank, as CAM++ was trained on it: 25-ms frames
//! every 10 ms (only whole frames), each frame's mean removed,
//! pre-emphasis 0.97, a Povey window, a 512-point power spectrum, 80
//! triangular mel bands from 20 Hz to 8 kHz on Kaldi's mel scale, natural
//! log (floored at f32's epsilon), then each band's mean over the stretch
//! subtracted. Checked against torchaudio's Kaldi-compatible fbank.

use std::sync::{Arc, LazyLock};

use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};

use super::graph::BANDS;
use crate::RATE;

/// Samples in a frame (25 ms) and between frames (10 ms).
pub const FRAME: usize = 400;
pub const SHIFT: usize = 160;
const FFT: usize = 512;
const LOW_HZ: f64 = 20.0;
const PREEMPHASIS: f64 = 0.97;

fn mel(hz: f64) -> f64 {
    1127.0 * (1.0 + hz / 700.0).ln()
}

struct Bank {
    window: Vec<f64>,
    /// Each band's (first bin, weights).
    bands: Vec<(usize, Vec<f64>)>,
    fft: Arc<dyn Fft<f64>>,
}

static BANK: LazyLock<Bank> = LazyLock::new(|| {
    let window = (0..FRAME)
        .map(|n| {
            let x = std::f64::consts::TAU * n as f64 / (FRAME - 1) as f64;
            (0.5 - 0.5 * x.cos()).powf(0.85)
        })
        .collect();
    let (low, high) = (mel(LOW_HZ), mel(RATE as f64 / 2.0));
    let delta = (high - low) / (BANDS + 1) as f64;
    let bands = (0..BANDS)
        .map(|b| {
            let (left, centre, right) = (
                low + b as f64 * delta,
                low + (b + 1) as f64 * delta,
                low + (b + 2) as f64 * delta,
            );
            let weights: Vec<(usize, f64)> = (0..FFT / 2)
                .filter_map(|k| {
                    let m = mel(k as f64 * RATE as f64 / FFT as f64);
                    let up = (m - left) / (centre - left);
                    let down = (right - m) / (right - centre);
                    let w = up.min(down);
                    (w > 0.0).then_some((k, w))
                })
                .collect();
            let first = weights.first().map_or(0, |w| w.0);
            (first, weights.into_iter().map(|w| w.1).collect())
        })
        .collect();
    Bank {
        window,
        bands,
        fft: FftPlanner::new().plan_fft_forward(FFT),
    }
});

/// Frames `audio` (16 kHz) makes: one per 10 ms once the first 25 ms are in.
pub fn frames(samples: usize) -> usize {
    if samples < FRAME {
        0
    } else {
        1 + (samples - FRAME) / SHIFT
    }
}

/// The features of `audio`: `[frames][80]`, flattened, less each band's
/// mean over them.
pub fn fbank(audio: &[f32]) -> Vec<f32> {
    let mut feats = log_mel(audio);
    subtract_mean(&mut feats);
    feats
}

/// Each band's mean over the frames of `feats` subtracted from it.
pub fn subtract_mean(feats: &mut [f32]) {
    let n = feats.len() / BANDS;
    if n == 0 {
        return;
    }
    for b in 0..BANDS {
        let mean = feats
            .iter()
            .skip(b)
            .step_by(BANDS)
            .map(|&v| v as f64)
            .sum::<f64>()
            / n as f64;
        for v in feats.iter_mut().skip(b).step_by(BANDS) {
            *v = (*v as f64 - mean) as f32;
        }
    }
}

/// The log-mel frames of `audio`, `[frames][80]` flattened (frame `f`
/// from sample `f * 160`), their means left in.
pub fn log_mel(audio: &[f32]) -> Vec<f32> {
    let bank = &*BANK;
    let n = frames(audio.len());
    let mut out = vec![0f32; n * BANDS];
    let mut buf = vec![Complex64::default(); FFT];
    let mut scratch = vec![Complex64::default(); bank.fft.get_inplace_scratch_len()];
    let mut frame = [0f64; FRAME];
    for (f, row) in out.chunks_exact_mut(BANDS).enumerate() {
        let samples = &audio[f * SHIFT..f * SHIFT + FRAME];
        let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / FRAME as f64;
        for (x, &s) in frame.iter_mut().zip(samples) {
            *x = s as f64 - mean;
        }
        for i in (1..FRAME).rev() {
            frame[i] -= PREEMPHASIS * frame[i - 1];
        }
        frame[0] -= PREEMPHASIS * frame[0];
        for (k, c) in buf.iter_mut().enumerate() {
            let v = if k < FRAME {
                frame[k] * bank.window[k]
            } else {
                0.0
            };
            *c = Complex64::new(v, 0.0);
        }
        bank.fft.process_with_scratch(&mut buf, &mut scratch);
        for (e, (first, weights)) in row.iter_mut().zip(&bank.bands) {
            let energy: f64 = weights
                .iter()
                .zip(&buf[*first..])
                .map(|(w, c)| w * c.norm_sqr())
                .sum();
            *e = energy.max(f32::EPSILON as f64).ln() as f32;
        }
    }
    out
}
