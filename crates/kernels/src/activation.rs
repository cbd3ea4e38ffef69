//! Activations a vocoder applies to every sample: `sin` in straight-line
//! arithmetic the compiler vectorises, and `Snake` (`x + inv · sin²(αx)`).

/// `sin(x)` in straight-line arithmetic the compiler vectorises: x = kπ + r
/// with |r| ≤ π/2 (π split in three parts, the first two exact in kπ for
/// |k| < 2¹³), sin r by its Taylor series to r¹¹ (the next term is below
/// 6e-8 at π/2), and the sign flipped for odd k, read off the rounding's low
/// bit. Within 2e-7 of the true value for |x| < 2¹³π; larger arguments are
/// left to the exact (scalar) `sin` ([`REDUCED_LIMIT`]).
#[inline(always)]
fn sin_reduced(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    const PI_A: f32 = 3.140_625;
    const PI_B: f32 = 9.675_026e-4;
    const PI_C: f32 = 1.509_958e-7;
    let t = x * std::f32::consts::FRAC_1_PI + ROUND;
    let k = t - ROUND;
    let r = ((x - k * PI_A) - k * PI_B) - k * PI_C;
    let r2 = r * r;
    let p = r + r
        * r2
        * (-1.0 / 6.0
            + r2 * (1.0 / 120.0
                + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362_880.0 + r2 * (-1.0 / 39_916_800.0)))));
    f32::from_bits(p.to_bits() ^ (t.to_bits() << 31))
}

/// Arguments beyond which [`sin_reduced`] is not used (below 2¹³π).
const REDUCED_LIMIT: f32 = 25_000.0;

/// Whether [`sin_reduced`] is exact enough for `v` (false for NaN).
fn reducible(v: f32) -> bool {
    v.abs() < REDUCED_LIMIT
}

/// `out[i] = sin(x[i])`.
pub fn sin_into(x: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = sin_reduced(v);
    }
    // Rare: huge or non-finite arguments, done exactly.
    if !x.iter().all(|&v| reducible(v)) {
        for (o, &v) in out.iter_mut().zip(x) {
            if !reducible(v) {
                *o = v.sin();
            }
        }
    }
}

/// `out[i] = x[i] + inv · sin²(alpha · x[i])`.
pub fn snake_into(x: &[f32], alpha: f32, inv: f32, out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        let s = sin_reduced(alpha * v);
        *o = v + inv * s * s;
    }
    if !x.iter().all(|&v| reducible(alpha * v)) {
        for (o, &v) in out.iter_mut().zip(x) {
            if !reducible(alpha * v) {
                let s = (alpha * v).sin();
                *o = v + inv * s * s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sine_is_within_a_float_step() {
        let xs: Vec<f32> = (-200_000..200_000)
            .map(|i| i as f32 * 0.000_37)
            .chain([
                0.0,
                -0.0,
                24_999.9,
                -25_000.0,
                1e5,
                -3.3e6,
                1e30,
                f32::INFINITY,
                f32::NAN,
            ])
            .collect();
        let mut out = vec![0.0; xs.len()];
        sin_into(&xs, &mut out);
        for (&x, &y) in xs.iter().zip(&out) {
            let want = f64::from(x).sin();
            if want.is_nan() {
                assert!(y.is_nan(), "sin({x}) = {y}");
                continue;
            }
            assert!(
                (f64::from(y) - want).abs() < 2e-7,
                "sin({x}) = {y}, want {want}"
            );
        }
    }

    #[test]
    fn snake_adds_the_scaled_square_of_the_sine() {
        let xs: Vec<f32> = (-1000..1000).map(|i| i as f32 * 0.013).collect();
        let mut out = vec![0.0; xs.len()];
        snake_into(&xs, 1.7, 0.4, &mut out);
        for (&x, &y) in xs.iter().zip(&out) {
            let s = (1.7 * f64::from(x)).sin();
            let want = f64::from(x) + 0.4 * s * s;
            assert!(
                (f64::from(y) - want).abs() < 1e-6,
                "snake({x}) = {y}, want {want}"
            );
        }
    }
}
