//! Signals the unit tests of this crate measure with.

/// A sine of `hz` at half scale, `seconds` long.
pub fn sine(hz: f32, rate: u32, seconds: f32) -> Vec<f32> {
    let n = (rate as f32 * seconds) as usize;
    (0..n)
        .map(|i| (std::f32::consts::TAU * hz * i as f32 / rate as f32).sin() * 0.5)
        .collect()
}

/// Root mean square.
pub fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
}
