//! The fallback detector: frame levels against the audio's own noise floor.

use super::{Vad, VadError, FRAME};

/// Speech is any frame more than 15 dB over the noise floor (the tenth
/// percentile level of the audio given), but at most 25 dB under its
/// loudest frame (so unbroken sound counts) and never under -50 dBFS. Its
/// probabilities are 0 or 1, and depend on the span it is given.
#[derive(Debug, Clone, Copy, Default)]
pub struct Energy;

/// Frame levels in dBFS, one per frame (a last partial frame included).
pub fn levels(audio: &[f32]) -> Vec<f32> {
    audio
        .chunks(FRAME)
        .map(|f| {
            let power = f.iter().map(|s| s * s).sum::<f32>() / f.len() as f32;
            10.0 * power.max(1e-12).log10()
        })
        .collect()
}

/// The level over which a frame of `levels` counts as speech.
pub fn threshold(levels: &[f32]) -> f32 {
    let mut sorted = levels.to_vec();
    sorted.sort_by(f32::total_cmp);
    let Some(&peak) = sorted.last() else {
        return 0.0;
    };
    let floor = sorted[sorted.len() / 10];
    (floor + 15.0).min(peak - 25.0).max(-50.0)
}

impl Vad for Energy {
    fn name(&self) -> &'static str {
        "energy"
    }

    fn probabilities(&self, audio: &[f32]) -> Result<Vec<f32>, VadError> {
        let levels = levels(audio);
        let t = threshold(&levels);
        Ok(levels[..audio.len() / FRAME]
            .iter()
            .map(|&l| if l > t { 1.0 } else { 0.0 })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tone_over_silence_is_speech_and_the_silence_not() {
        let mut audio = vec![0.0f32; 10 * FRAME];
        audio.extend((0..10 * FRAME).map(|i| 0.3 * (i as f32 * 0.05).sin()));
        let p = Energy.probabilities(&audio).unwrap();
        assert_eq!(p.len(), 20);
        assert!(p[..10].iter().all(|&x| x == 0.0));
        assert!(p[10..].iter().all(|&x| x == 1.0));
    }
}
