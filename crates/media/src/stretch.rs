//! Changing the tempo of speech without changing its pitch or timbre, by
//! WSOLA (waveform-similarity overlap-add, Verhelst and Roelands 1993):
//! the output is built from overlapping windows of the input taken at the
//! new tempo, each shifted by up to [`TOLERANCE`] to where it continues the
//! waveform of the window before it, so that nothing is resynthesized and
//! no phase is broken. Far cheaper than a vocoder, and for tempo changes of
//! a few tens of percent it keeps speech as it was said.

/// Window length, seconds (a few pitch periods of a low voice).
const FRAME: f64 = 0.03;
/// How far a window may move from its nominal place, seconds (more than
/// one period of the lowest voices, 100 Hz).
const TOLERANCE: f64 = 0.012;
/// Every `DECIMATE`-th sample is compared when looking for the best shift.
const DECIMATE: usize = 3;

/// `x` (mono at `rate` Hz) spoken at another tempo, exactly `length`
/// samples long (shorter than `x` is faster).
pub fn stretch(x: &[f32], rate: u32, length: usize) -> Vec<f32> {
    if x.is_empty() || length == 0 {
        return vec![0.0; length];
    }
    if length == x.len() {
        return x.to_vec();
    }
    let n = ((FRAME * f64::from(rate)) as usize / 2 * 2).max(4);
    let hop = n / 2;
    let tolerance = (TOLERANCE * f64::from(rate)) as isize;
    // A periodic Hann window: at half overlap its copies add up to one.
    let window: Vec<f32> = (0..n)
        .map(|i| {
            let phase = std::f64::consts::TAU * i as f64 / n as f64;
            (0.5 - 0.5 * phase.cos()) as f32
        })
        .collect();
    // Input samples with silence on either side.
    let at = |i: isize| -> f32 {
        if i < 0 {
            0.0
        } else {
            x.get(i as usize).copied().unwrap_or(0.0)
        }
    };
    // Input samples per output sample.
    let step = x.len() as f64 / length as f64;
    let frames = length.div_ceil(hop) + 1;
    let mut out = vec![0f32; frames * hop + n];
    let mut weight = vec![0f32; out.len()];
    let mut previous: isize = 0;
    for k in 0..frames {
        let nominal = (k as f64 * hop as f64 * step).round() as isize;
        let chosen = if k == 0 {
            0
        } else {
            // Where the window before would have gone on: the shift of the
            // nominal place whose waveform is most like it.
            let follow = previous + hop as isize;
            best_shift(&at, follow, nominal, tolerance, n)
        };
        let base = k * hop;
        for i in 0..n {
            // The first window is flat on its leading half (nothing
            // overlaps it there).
            let w = if k == 0 && i < hop { 1.0 } else { window[i] };
            out[base + i] += w * at(chosen + i as isize);
            weight[base + i] += w;
        }
        previous = chosen;
    }
    out.truncate(length);
    for (y, w) in out.iter_mut().zip(&weight) {
        if *w > 1e-3 {
            *y /= w;
        }
    }
    out
}

/// The start within `nominal ± tolerance` whose `n` samples correlate
/// best (normalised) with the `n` samples at `follow`.
fn best_shift(
    at: &impl Fn(isize) -> f32,
    follow: isize,
    nominal: isize,
    tolerance: isize,
    n: usize,
) -> isize {
    let reference: Vec<f32> = (0..n)
        .step_by(DECIMATE)
        .map(|i| at(follow + i as isize))
        .collect();
    let mut best = (nominal, f32::MIN);
    for candidate in nominal - tolerance..=nominal + tolerance {
        let (mut dot, mut energy) = (0f32, 0f32);
        for (j, r) in reference.iter().enumerate() {
            let v = at(candidate + (j * DECIMATE) as isize);
            dot += r * v;
            energy += v * v;
        }
        let score = if energy > 0.0 {
            dot / energy.sqrt()
        } else {
            0.0
        };
        if score > best.1 {
            best = (candidate, score);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: u32 = 24_000;

    fn tone(hz: f64, seconds: f64) -> Vec<f32> {
        (0..(seconds * f64::from(RATE)) as usize)
            .map(|i| (std::f64::consts::TAU * hz * i as f64 / f64::from(RATE)).sin() as f32 * 0.5)
            .collect()
    }

    /// Cycles per second, counted by upward zero crossings.
    fn frequency(x: &[f32]) -> f64 {
        let ups = x.windows(2).filter(|p| p[0] < 0.0 && p[1] >= 0.0).count();
        ups as f64 / (x.len() as f64 / f64::from(RATE))
    }

    #[test]
    fn the_length_is_exact_and_the_pitch_kept() {
        let x = tone(180.0, 2.0);
        for factor in [0.7, 0.85, 1.2, 1.4] {
            let length = (x.len() as f64 * factor) as usize;
            let y = stretch(&x, RATE, length);
            assert_eq!(y.len(), length);
            let f = frequency(&y[1000..length - 1000]);
            assert!((f / 180.0 - 1.0).abs() < 0.02, "{factor}: {f} Hz");
            // No seams: a sine's steps stay those of a sine.
            let steepest = |s: &[f32]| {
                s.windows(2)
                    .map(|p| (p[1] - p[0]).abs())
                    .fold(0f32, f32::max)
            };
            assert!(
                steepest(&y) < 1.3 * steepest(&x),
                "{factor}: {} vs {}",
                steepest(&y),
                steepest(&x)
            );
            // Nothing faded: the level holds from start to end.
            let rms = |s: &[f32]| (s.iter().map(|v| v * v).sum::<f32>() / s.len() as f32).sqrt();
            for part in y.chunks(RATE as usize / 10) {
                assert!((rms(part) / rms(&x) - 1.0).abs() < 0.1, "{factor}");
            }
        }
    }

    #[test]
    fn events_move_with_the_tempo() {
        // A burst of tone at 1.0 s in 2 s of silence: at 0.75 of the
        // length it starts at 0.75 s.
        let mut x = vec![0f32; 2 * RATE as usize];
        let burst = tone(220.0, 0.2);
        x[RATE as usize..RATE as usize + burst.len()].copy_from_slice(&burst);
        let y = stretch(&x, RATE, x.len() * 3 / 4);
        let onset = y.iter().position(|v| v.abs() > 0.1).unwrap();
        let seconds = onset as f64 / f64::from(RATE);
        assert!((seconds - 0.75).abs() < 0.03, "{seconds}");
    }

    #[test]
    fn edges() {
        assert_eq!(stretch(&[], RATE, 5), vec![0.0; 5]);
        assert!(stretch(&[0.5; 100], RATE, 0).is_empty());
        assert_eq!(stretch(&[0.25; 10], RATE, 10), vec![0.25; 10]);
        assert_eq!(stretch(&[0.25; 10], RATE, 20).len(), 20);
    }
}
