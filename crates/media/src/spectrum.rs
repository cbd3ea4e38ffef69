//! Short-time power spectra and mel filter banks, as librosa and whisper
//! compute them (Hann frames, Slaney-style mel filters): the front end of
//! the recognisers and of the speaker encoder.

use std::sync::Arc;

use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

/// Slaney's mel scale (linear below 1 kHz, logarithmic above).
fn hz_to_mel(hz: f64) -> f64 {
    let (f_sp, min_log_hz, min_log_mel) = (200.0 / 3.0, 1000.0, 15.0);
    let logstep = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / logstep
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let (f_sp, min_log_hz, min_log_mel) = (200.0 / 3.0, 1000.0, 15.0);
    let logstep = 6.4f64.ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (logstep * (mel - min_log_mel)).exp()
    } else {
        f_sp * mel
    }
}

/// `n_mels` triangular filters from 0 Hz to the Nyquist frequency over the
/// `n_fft / 2 + 1` bins of a spectrum, area-normalised: librosa's
/// `filters.mel(sr=rate, n_fft=n_fft, n_mels=n_mels, norm="slaney")`,
/// `[n_mels][bins]` row-major.
pub fn mel_filters(rate: u32, n_fft: usize, n_mels: usize) -> Vec<f32> {
    let bins = n_fft / 2 + 1;
    let nyquist = rate as f64 / 2.0;
    let top = hz_to_mel(nyquist);
    let edges: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(top * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut out = vec![0f32; n_mels * bins];
    for m in 0..n_mels {
        let (lo, mid, hi) = (edges[m], edges[m + 1], edges[m + 2]);
        let norm = 2.0 / (hi - lo);
        for b in 0..bins {
            let f = nyquist * b as f64 / (bins - 1) as f64;
            let w = ((f - lo) / (mid - lo)).min((hi - f) / (hi - mid)).max(0.0);
            out[m * bins + b] = (w * norm) as f32;
        }
    }
    out
}

/// The centre frequencies (Hz) of the filters of [`mel_filters`] for
/// `rate` and `n_mels`.
pub fn mel_centres(rate: u32, n_mels: usize) -> Vec<f32> {
    let top = hz_to_mel(rate as f64 / 2.0);
    (1..=n_mels)
        .map(|i| mel_to_hz(top * i as f64 / (n_mels + 1) as f64) as f32)
        .collect()
}

/// `audio` through an equaliser: each frequency's amplitude scaled by the
/// gain (dB) of `curve`, a list of (Hz, dB) points in rising frequency,
/// interpolated linearly in between and held beyond the ends. Short-time
/// Fourier frames of 1024 samples, a quarter apart, square-root Hann
/// windows on both sides (they overlap-add to one), so a flat curve gives
/// the audio back.
pub fn equalize(audio: &[f32], rate: u32, curve: &[(f32, f32)]) -> Vec<f32> {
    const N: usize = 1024;
    const HOP: usize = N / 4;
    if audio.is_empty() || curve.is_empty() {
        return audio.to_vec();
    }
    let gain_at = |hz: f32| -> f32 {
        let db = match curve.iter().position(|&(f, _)| f >= hz) {
            None => curve[curve.len() - 1].1,
            Some(0) => curve[0].1,
            Some(i) => {
                let ((f0, g0), (f1, g1)) = (curve[i - 1], curve[i]);
                g0 + (g1 - g0) * (hz - f0) / (f1 - f0).max(1e-6)
            }
        };
        10f32.powf(db / 20.0)
    };
    let gains: Vec<f32> = (0..N)
        .map(|k| {
            let bin = if k <= N / 2 { k } else { N - k };
            gain_at(bin as f32 * rate as f32 / N as f32)
        })
        .collect();
    // sqrt-Hann (periodic) on analysis and synthesis: their product, a
    // Hann window, sums to 2 at a hop of a quarter.
    let window: Vec<f32> = (0..N)
        .map(|i| (0.5 - 0.5 * (std::f32::consts::TAU * i as f32 / N as f32).cos()).sqrt())
        .collect();
    let mut planner = FftPlanner::new();
    let (forward, inverse) = (planner.plan_fft_forward(N), planner.plan_fft_inverse(N));
    // Padded so every sample is covered by four frames.
    let pad = N - HOP;
    let len = audio.len() + 2 * pad;
    let mut out = vec![0f32; len + N];
    let mut buf = vec![Complex32::new(0.0, 0.0); N];
    let mut start = 0;
    while start < len {
        for (i, b) in buf.iter_mut().enumerate() {
            let at = (start + i).checked_sub(pad);
            let x = at.and_then(|a| audio.get(a)).copied().unwrap_or(0.0);
            *b = Complex32::new(x * window[i], 0.0);
        }
        forward.process(&mut buf);
        for (b, g) in buf.iter_mut().zip(&gains) {
            *b *= *g;
        }
        inverse.process(&mut buf);
        for (i, b) in buf.iter().enumerate() {
            // rustfft does not normalise; the windows overlap-add to 2.
            out[start + i] += b.re * window[i] / (N as f32 * 2.0);
        }
        start += HOP;
    }
    out[pad..pad + audio.len()].to_vec()
}

/// Power spectra of Hann-windowed frames of `n_fft` samples.
pub struct Stft {
    n_fft: usize,
    hann: Vec<f32>,
    fft: Arc<dyn Fft<f32>>,
}

impl Stft {
    /// Periodic Hann window of `n_fft` samples (as librosa and torch use).
    pub fn new(n_fft: usize) -> Self {
        let hann = (0..n_fft)
            .map(|i| {
                let x = std::f32::consts::TAU * i as f32 / n_fft as f32;
                0.5 - 0.5 * x.cos()
            })
            .collect();
        Self {
            n_fft,
            hann,
            fft: FftPlanner::new().plan_fft_forward(n_fft),
        }
    }

    /// Bins per spectrum.
    pub fn bins(&self) -> usize {
        self.n_fft / 2 + 1
    }

    /// `frames` power spectra (`[frames][bins]`), frame `f` centred on
    /// sample `f * hop`; `sample(i)` gives sample `i` of the padded signal
    /// (any `i`, negative before the start), so the caller picks the
    /// padding.
    pub fn power(&self, frames: usize, hop: usize, sample: impl Fn(isize) -> f32) -> Vec<f32> {
        let (bins, half) = (self.bins(), self.n_fft / 2);
        let mut power = vec![0f32; frames * bins];
        let mut buf = vec![Complex32::default(); self.n_fft];
        let mut scratch = vec![Complex32::default(); self.fft.get_inplace_scratch_len()];
        for (f, row) in power.chunks_exact_mut(bins).enumerate() {
            let start = (f * hop) as isize - half as isize;
            for (k, (c, &w)) in buf.iter_mut().zip(&self.hann).enumerate() {
                *c = Complex32::new(sample(start + k as isize) * w, 0.0);
            }
            self.fft.process_with_scratch(&mut buf, &mut scratch);
            for (p, c) in row.iter_mut().zip(&buf) {
                *p = c.norm_sqr();
            }
        }
        power
    }
}

/// The mel energies of power spectra: `filters` (from [`mel_filters`],
/// `[n_mels][bins]`) over `power` (`[frames][bins]`), as `[frames][n_mels]`.
pub fn mel_energies(filters: &[f32], power: &[f32], bins: usize) -> Vec<f32> {
    let rows: Vec<Vec<(usize, f32)>> = filters
        .chunks_exact(bins)
        .map(|f| {
            f.iter()
                .copied()
                .enumerate()
                .filter(|&(_, w)| w > 0.0)
                .collect()
        })
        .collect();
    power
        .chunks_exact(bins)
        .flat_map(|spectrum| {
            rows.iter()
                .map(move |row| row.iter().map(|&(b, w)| w * spectrum[b]).sum::<f32>())
        })
        .collect()
}

#[cfg(test)]
mod eq_tests {
    use super::*;
    use crate::test_signals::{rms, sine};

    #[test]
    fn a_flat_curve_gives_the_audio_back_and_a_gain_scales_its_band() {
        let audio = sine(440.0, 24_000, 1.0);
        let flat = equalize(&audio, 24_000, &[(0.0, 0.0), (12_000.0, 0.0)]);
        let worst = audio
            .iter()
            .zip(&flat)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 1e-3, "{worst}");
        // -12 dB at 440 Hz, 0 dB at 4 kHz.
        let curve = [(0.0, -12.0), (1000.0, -12.0), (3000.0, 0.0)];
        let low = equalize(&audio, 24_000, &curve);
        let ratio = rms(&low[2000..22_000]) / rms(&audio[2000..22_000]);
        assert!((20.0 * ratio.log10() + 12.0).abs() < 0.5, "{ratio}");
        let high = sine(4000.0, 24_000, 1.0);
        let kept = equalize(&high, 24_000, &curve);
        let ratio = rms(&kept[2000..22_000]) / rms(&high[2000..22_000]);
        assert!((20.0 * ratio.log10()).abs() < 0.5, "{ratio}");
        assert_eq!(mel_centres(16_000, 40).len(), 40);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_slaney_triangles() {
        const BINS: usize = 201;
        let f = mel_filters(16_000, 400, 80);
        // librosa's first filter peaks at bin 1 (40 Hz); each row is a
        // triangle with area normalisation 2 / (hi - lo) at its peak.
        let row0 = &f[..BINS];
        let peak = row0
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        assert_eq!(peak.0, 1);
        assert!((peak.1 - 0.0246).abs() < 5e-4, "{}", peak.1);
        // Values of whisper's own mel_filters.npz (mel_80): row 0 bin 1,
        // row 26's peak (bin 25), row 79's last bins, and the total.
        assert!((f[1] - 0.024_862_59).abs() < 1e-6, "{}", f[1]);
        assert!((f[26 * BINS + 25] - 0.022_114_217).abs() < 1e-6);
        assert!((f[79 * BINS + 198] - 0.000_897_52).abs() < 1e-7);
        assert!((f[79 * BINS + 199] - 0.000_448_76).abs() < 1e-7);
        let total: f32 = f.iter().sum();
        assert!((total - 1.999_024_2).abs() < 1e-4, "{total}");
    }

    #[test]
    fn a_tone_has_its_power_in_its_bin() {
        let stft = Stft::new(400);
        let tone: Vec<f32> = (0..4000)
            .map(|i| (std::f32::consts::TAU * 1000.0 * i as f32 / 16_000.0).sin())
            .collect();
        let p = stft.power(10, 160, |i| {
            tone.get(i.max(0) as usize).copied().unwrap_or(0.0)
        });
        let row = &p[5 * 201..6 * 201];
        let peak = (0..201).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        // 1 kHz is bin 25 of 400 at 16 kHz.
        assert_eq!(peak, 25);
    }
}
