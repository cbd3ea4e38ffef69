//! Prices: credits for units of work (characters, seconds, images), and the
//! units a job is finally charged for once its input was measured.

/// Credits for `units` at `per_unit` credits each, rounded up; never
/// negative.
pub fn price(units: f64, per_unit: f64) -> i64 {
    let credits = (units * per_unit).ceil();
    if credits > 0.0 {
        // Saturates: an infinite price is more than any balance.
        credits.min(i64::MAX as f64) as i64
    } else {
        0
    }
}

/// Decoder padding: codecs add silence at the start and end of a stream
/// (MP3 encoders some 50 ms), so this much of a measured length is not
/// charged.
pub const PADDING: f64 = 0.1;

/// How much longer than its estimate a measured length may be and still be
/// charged the estimate (the estimate was rounded up to whole units
/// already).
pub const MEASURE_TOLERANCE: f64 = 0.5;

/// The units to charge for work estimated at `estimated` units (whole
/// seconds, rounded up from a container's header) that measured `measured`
/// while it was done: the measurement less [`PADDING`], rounded up to
/// whole units, except that one within [`MEASURE_TOLERANCE`] over the
/// estimate keeps it.
pub fn measured_units(estimated: f64, measured: f64) -> f64 {
    let measured = measured - PADDING;
    if !measured.is_finite() || measured <= 0.0 {
        return 0.0;
    }
    if measured > estimated && measured <= estimated + MEASURE_TOLERANCE {
        return estimated;
    }
    measured.ceil()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_round_up_and_stay_in_range() {
        assert_eq!(price(3.0, 1.0), 3);
        assert_eq!(price(3.2, 1.0), 4);
        assert_eq!(price(10.0, 0.25), 3);
        assert_eq!(price(0.0, 2.0), 0);
        assert_eq!(price(-4.0, 2.0), 0);
        assert_eq!(price(f64::NAN, 2.0), 0);
        assert_eq!(price(1e300, 1e300), i64::MAX);
    }

    #[test]
    fn measurements_settle_to_whole_units() {
        // Decoder padding over a rounded estimate: the estimate.
        assert_eq!(measured_units(16.0, 16.02), 16.0);
        assert_eq!(measured_units(16.0, 16.6), 16.0);
        // Longer than the header said: what was processed.
        assert_eq!(measured_units(16.0, 121.05), 121.0);
        assert_eq!(measured_units(16.0, 121.3), 122.0);
        assert_eq!(measured_units(16.0, 16.7), 17.0);
        // Shorter: less.
        assert_eq!(measured_units(121.0, 60.2), 61.0);
        assert_eq!(measured_units(5.0, 0.0), 0.0);
    }
}
