//! A recording's colour: how the samples' mean spectrum differs from the
//! clone's speech, as an equaliser curve the clone is then spoken through.
//!
//! Samples carry their microphone and room (a telephone's band, a
//! close-talking microphone's bass) as well as the voice, and the speaker
//! encoder hears both. A style table can move the voice but not the
//! recording; the curve moves the recording. It is measured on the speaker
//! encoder's own 40 mel bands (to 8 kHz), on the louder half of the frames
//! (speech, not pauses), level removed (only the shape counts), smoothed
//! over three bands and bounded to ±12 dB; the clone keeps it only where it
//! makes the speech more alike to the held-out samples.

use mediagen_media::spectrum::mel_centres;
use mediagen_speakers::encoder::{raised, SpeakerEncoder};

/// Mel bands of the speaker encoder's frames.
const BANDS: usize = 40;
/// The encoder's sample rate.
const RATE: u32 = 16_000;
/// The largest gain or cut.
const LIMIT: f32 = 12.0;

/// The curve (Hz, dB) that takes the mean spectrum of `spoken` to that of
/// `samples` (both 16-kHz mono speech); `None` when either is silent.
pub fn colour(
    encoder: &SpeakerEncoder,
    samples: &[f32],
    spoken: &[f32],
) -> Option<Vec<(f32, f32)>> {
    let (theirs, ours) = (
        mean_spectrum(encoder, samples)?,
        mean_spectrum(encoder, spoken)?,
    );
    let diff: Vec<f64> = theirs.iter().zip(&ours).map(|(a, b)| a - b).collect();
    let level = diff.iter().sum::<f64>() / BANDS as f64;
    let smoothed: Vec<f32> = (0..BANDS)
        .map(|i| {
            let window = &diff[i.saturating_sub(1)..(i + 2).min(BANDS)];
            let mean = window.iter().sum::<f64>() / window.len() as f64 - level;
            // Natural-log power to dB.
            ((10.0 / std::f64::consts::LN_10) * mean) as f32
        })
        .collect();
    Some(
        mel_centres(RATE, BANDS)
            .into_iter()
            .zip(smoothed)
            .map(|(hz, db)| (hz, db.clamp(-LIMIT, LIMIT)))
            .collect(),
    )
}

/// Mean natural-log power per mel band over the louder half of the frames.
fn mean_spectrum(encoder: &SpeakerEncoder, audio: &[f32]) -> Option<Vec<f64>> {
    let audio = raised(audio)?;
    let frames = encoder.frames(&audio);
    let energy: Vec<f32> = frames.chunks_exact(BANDS).map(|f| f.iter().sum()).collect();
    let mut sorted = energy.clone();
    sorted.sort_by(f32::total_cmp);
    let cut = *sorted.get(sorted.len() / 2)?;
    let mut sum = vec![0.0f64; BANDS];
    let mut count = 0.0;
    for (frame, e) in frames.chunks_exact(BANDS).zip(&energy) {
        if *e >= cut {
            for (s, x) in sum.iter_mut().zip(frame) {
                *s += f64::from(*x).max(1e-10).ln();
            }
            count += 1.0;
        }
    }
    (count > 0.0).then(|| sum.iter().map(|s| s / count).collect())
}
