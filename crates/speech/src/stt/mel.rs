//! Whisper's input features: the log-mel spectrogram of one 30-second
//! window (25 ms Hann frames every 10 ms, Slaney-style mel filters, log10
//! clamped to 8 decades under the peak and scaled to about ±1), the same
//! computation as whisper's `log_mel_spectrogram`.

use std::sync::Arc;

use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

use super::chunk::RATE;

const N_FFT: usize = 400;
const HOP: usize = 160;
/// Mel frames in one window (30 s).
pub const WINDOW: usize = 3000;
const BINS: usize = N_FFT / 2 + 1;

pub struct Mel {
    n_mels: usize,
    /// [n_mels][BINS]
    filters: Vec<f32>,
    hann: Vec<f32>,
    fft: Arc<dyn Fft<f32>>,
}

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

/// Triangular filters from 0 Hz to the Nyquist frequency, area-normalised
/// (librosa's `filters.mel(sr=16000, n_fft=400, norm="slaney")`).
fn filters(n_mels: usize) -> Vec<f32> {
    let nyquist = RATE as f64 / 2.0;
    let top = hz_to_mel(nyquist);
    let edges: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(top * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut out = vec![0f32; n_mels * BINS];
    for m in 0..n_mels {
        let (lo, mid, hi) = (edges[m], edges[m + 1], edges[m + 2]);
        let norm = 2.0 / (hi - lo);
        for b in 0..BINS {
            let f = nyquist * b as f64 / (BINS - 1) as f64;
            let w = ((f - lo) / (mid - lo)).min((hi - f) / (hi - mid)).max(0.0);
            out[m * BINS + b] = (w * norm) as f32;
        }
    }
    out
}

impl Mel {
    pub fn new(n_mels: usize) -> Self {
        let hann = (0..N_FFT)
            .map(|i| {
                let x = std::f32::consts::TAU * i as f32 / N_FFT as f32;
                0.5 - 0.5 * x.cos()
            })
            .collect();
        Self {
            n_mels,
            filters: filters(n_mels),
            hann,
            fft: FftPlanner::new().plan_fft_forward(N_FFT),
        }
    }

    pub fn n_mels(&self) -> usize {
        self.n_mels
    }

    /// Features of one window, `[n_mels][WINDOW]` row-major, for up to 30 s
    /// of 16 kHz audio; also returns how many frames hold audio. As
    /// faster-whisper computes them: the audio and one hop of silence framed
    /// with reflection at both ends, normalised over those frames, and the
    /// rest of the window left at zero.
    pub fn window(&self, audio: &[f32]) -> (Vec<f32>, usize) {
        let audio = &audio[..audio.len().min(WINDOW * HOP - HOP)];
        let half = N_FFT / 2;
        let mut signal = audio.to_vec();
        signal.resize(audio.len() + HOP, 0.0);
        let n = signal.len();
        let reflect = |i: isize| -> f32 {
            // numpy's "reflect" padding (the edge sample not repeated).
            let last = n as isize - 1;
            let j = if i < 0 {
                -i
            } else if i > last {
                2 * last - i
            } else {
                i
            };
            signal
                .get(j.clamp(0, last.max(0)) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let frames = (n / HOP).min(WINDOW);
        let mut power = vec![0f32; frames * BINS];
        let mut buf = vec![Complex32::default(); N_FFT];
        let mut scratch = vec![Complex32::default(); self.fft.get_inplace_scratch_len()];
        for (f, row) in power.chunks_exact_mut(BINS).enumerate() {
            let start = (f * HOP) as isize - half as isize;
            for (k, (c, &w)) in buf.iter_mut().zip(&self.hann).enumerate() {
                *c = Complex32::new(reflect(start + k as isize) * w, 0.0);
            }
            self.fft.process_with_scratch(&mut buf, &mut scratch);
            for (p, c) in row.iter_mut().zip(&buf) {
                *p = c.norm_sqr();
            }
        }
        let mut out = vec![0f32; self.n_mels * WINDOW];
        for (m, filter) in self.filters.chunks_exact(BINS).enumerate() {
            let nonzero: Vec<(usize, f32)> = filter
                .iter()
                .copied()
                .enumerate()
                .filter(|&(_, w)| w > 0.0)
                .collect();
            for (f, row) in power.chunks_exact(BINS).enumerate() {
                let energy: f32 = nonzero.iter().map(|&(b, w)| w * row[b]).sum();
                out[m * WINDOW + f] = energy.max(1e-10).log10();
            }
        }
        let peak = (0..self.n_mels)
            .flat_map(|m| out[m * WINDOW..m * WINDOW + frames].iter().copied())
            .fold(f32::MIN, f32::max);
        for m in 0..self.n_mels {
            for v in &mut out[m * WINDOW..m * WINDOW + frames] {
                *v = (v.max(peak - 8.0) + 4.0) / 4.0;
            }
        }
        (out, audio.len() / HOP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_slaney_triangles() {
        let f = filters(80);
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
        // The last filter reaches the top bins.
        assert!(f[79 * BINS + BINS - 2] > 0.0);
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
    fn a_tone_lights_its_own_band() {
        let mel = Mel::new(80);
        let tone: Vec<f32> = (0..RATE)
            .map(|i| 0.5 * (std::f32::consts::TAU * 1000.0 * i as f32 / RATE as f32).sin())
            .collect();
        let (x, frames) = mel.window(&tone);
        assert_eq!(frames, 100);
        let frame = 50;
        let band = (0..80)
            .max_by(|&a, &b| x[a * WINDOW + frame].total_cmp(&x[b * WINDOW + frame]))
            .unwrap();
        // 1 kHz is mel 15, so filter 15 × 80 / 45.2 ≈ 26.
        assert!((25..=27).contains(&band), "{band}");
        // After the audio the window is zero (as faster-whisper pads it),
        // the tone well above it.
        assert_eq!(x[band * WINDOW + 2000], 0.0);
        assert!(
            x[band * WINDOW + frame] > 1.0,
            "{}",
            x[band * WINDOW + frame]
        );
    }
}
