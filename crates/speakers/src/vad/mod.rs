//! Voice activity: which 32-ms frames of 16 kHz audio hold speech.
//!
//! [`Silero`] is a neural detector (Silero VAD's ONNX model, installed by
//! `scripts/models.sh`); [`Energy`] compares frame levels with the audio's
//! own noise floor and stands in where the model is absent. Both answer a
//! speech probability per frame; [`speech`] and [`regions`] turn those into
//! decisions the way Silero's own `get_speech_timestamps` does.

pub mod energy;
mod silero;

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

pub use energy::Energy;
pub use silero::Silero;

use crate::RATE;

/// Samples per frame (32 ms, Silero's window at 16 kHz).
pub const FRAME: usize = 512;
/// A frame at or above this probability starts speech...
const ON: f32 = 0.5;
/// ...and speech goes on until a frame falls under this one.
const OFF: f32 = 0.35;

#[derive(Debug, thiserror::Error)]
#[error("voice activity detection failed: {0}")]
pub struct VadError(pub String);

/// A voice-activity detector.
pub trait Vad: Send + Sync {
    /// `silero` or `energy`.
    fn name(&self) -> &'static str;
    /// The speech probability (0–1) of every whole frame of `audio`
    /// (16 kHz mono), from its start; a last partial frame is left out.
    fn probabilities(&self, audio: &[f32]) -> Result<Vec<f32>, VadError>;
}

/// Silero where its model is installed (`<models>/vad/`), else the energy
/// detector (with a log line saying so).
pub fn discover(models_dir: &Path, threads: usize) -> Arc<dyn Vad> {
    match Silero::load(models_dir, threads) {
        Ok(silero) => Arc::new(silero),
        Err(e) => {
            tracing::warn!("voice activity by frame energy: {e}");
            Arc::new(Energy)
        }
    }
}

/// Frame decisions from probabilities, with hysteresis: speech starts at a
/// frame of 0.5 or more and lasts while frames stay at 0.35 or more.
pub fn speech(probabilities: &[f32]) -> Vec<bool> {
    let mut on = false;
    probabilities
        .iter()
        .map(|&p| {
            on = if on { p >= OFF } else { p >= ON };
            on
        })
        .collect()
}

/// How speech frames become regions.
#[derive(Debug, Clone, Copy)]
pub struct RegionOptions {
    /// Regions shorter than this are dropped (samples).
    pub min_speech: usize,
    /// Gaps shorter than this are closed (samples).
    pub min_silence: usize,
    /// Kept either side of each region (samples).
    pub pad: usize,
}

impl Default for RegionOptions {
    /// Silero's own defaults: 250 ms, 100 ms, 30 ms.
    fn default() -> Self {
        Self {
            min_speech: RATE / 4,
            min_silence: RATE / 10,
            pad: RATE * 3 / 100,
        }
    }
}

/// The speech regions (sample ranges) of audio `len` samples long whose
/// frames have `probabilities`: gaps under `min_silence` closed, regions
/// under `min_speech` dropped, `pad` added either side (never past the
/// audio or into the next region).
pub fn regions(probabilities: &[f32], len: usize, opts: RegionOptions) -> Vec<Range<usize>> {
    let flags = speech(probabilities);
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut i = 0;
    while i < flags.len() {
        if !flags[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < flags.len() && flags[i] {
            i += 1;
        }
        let (s, e) = (start * FRAME, (i * FRAME).min(len));
        match runs.last_mut() {
            Some(last) if s - last.end < opts.min_silence => last.end = e,
            _ => runs.push(s..e),
        }
    }
    runs.retain(|r| r.len() >= opts.min_speech);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(runs.len());
    for (k, r) in runs.iter().enumerate() {
        let floor = out.last().map_or(0, |p: &Range<usize>| p.end);
        let ceiling = runs.get(k + 1).map_or(len, |n| n.start);
        out.push(r.start.saturating_sub(opts.pad).max(floor)..(r.end + opts.pad).min(ceiling));
    }
    out
}

/// Seconds of speech in `audio` by `vad` (regions with default options).
pub fn speech_seconds(vad: &dyn Vad, audio: &[f32]) -> Result<f64, VadError> {
    let p = vad.probabilities(audio)?;
    let total: usize = regions(&p, audio.len(), RegionOptions::default())
        .iter()
        .map(|r| r.len())
        .sum();
    Ok(total as f64 / RATE as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hysteresis_holds_speech_through_a_dip() {
        let p = [0.1, 0.6, 0.4, 0.36, 0.2, 0.45, 0.7];
        assert_eq!(speech(&p), [false, true, true, true, false, false, true]);
    }

    #[test]
    fn regions_close_short_gaps_drop_short_bursts_and_pad() {
        let f = |n: usize| vec![0.9f32; n];
        let z = |n: usize| vec![0.0f32; n];
        // 10 frames speech, 2 silent (64 ms < 100 ms: closed), 10 speech,
        // 20 silent, 3 speech (96 ms < 250 ms: dropped), 10 silent.
        let p: Vec<f32> = [f(10), z(2), f(10), z(20), f(3), z(10)].concat();
        let len = p.len() * FRAME;
        let r = regions(&p, len, RegionOptions::default());
        let pad = RATE * 3 / 100;
        assert_eq!(r, vec![0..22 * FRAME + pad]);
    }
}
