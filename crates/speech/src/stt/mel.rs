//! Whisper's input features: the log-mel spectrogram of one 30-second
//! window (25 ms Hann frames every 10 ms, Slaney-style mel filters, log10
//! clamped to 8 decades under the peak and scaled to about ±1), the same
//! computation as whisper's `log_mel_spectrogram`.

use mediagen_media::spectrum::{mel_energies, mel_filters, Stft};

use super::chunk::RATE;

const N_FFT: usize = 400;
const HOP: usize = 160;
/// Mel frames in one window (30 s).
pub const WINDOW: usize = 3000;

pub struct Mel {
    n_mels: usize,
    /// [n_mels][bins]
    filters: Vec<f32>,
    stft: Stft,
}

impl Mel {
    pub fn new(n_mels: usize) -> Self {
        Self {
            n_mels,
            filters: mel_filters(RATE as u32, N_FFT, n_mels),
            stft: Stft::new(N_FFT),
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
        let power = self.stft.power(frames, HOP, reflect);
        let energies = mel_energies(&self.filters, &power, self.stft.bins());
        let mut out = vec![0f32; self.n_mels * WINDOW];
        for (f, row) in energies.chunks_exact(self.n_mels).enumerate() {
            for (m, &energy) in row.iter().enumerate() {
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
