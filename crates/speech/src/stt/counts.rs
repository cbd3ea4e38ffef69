//! What the recogniser did, counted for the benchmarks (`stt_bench` prints
//! the counts of a run beside its time, `bench/stt_real.sh` beside the
//! peer's): windows decoded, text tokens generated, decodings redone at a
//! higher temperature, windows begun with a lead-in, encodings, and the
//! seconds spent encoding and decoding (summed over threads). Process-wide
//! and cheap (relaxed atomics); read as the difference of two snapshots.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A snapshot of the counters, or the difference of two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeCounts {
    pub windows: u64,
    pub tokens: u64,
    pub fallbacks: u64,
    pub lead_ins: u64,
    pub encodings: u64,
    pub encode_micros: u64,
    pub decode_micros: u64,
}

impl DecodeCounts {
    /// What happened between `earlier` and this snapshot.
    pub fn since(self, earlier: DecodeCounts) -> DecodeCounts {
        DecodeCounts {
            windows: self.windows - earlier.windows,
            tokens: self.tokens - earlier.tokens,
            fallbacks: self.fallbacks - earlier.fallbacks,
            lead_ins: self.lead_ins - earlier.lead_ins,
            encodings: self.encodings - earlier.encodings,
            encode_micros: self.encode_micros - earlier.encode_micros,
            decode_micros: self.decode_micros - earlier.decode_micros,
        }
    }
}

static WINDOWS: AtomicU64 = AtomicU64::new(0);
static TOKENS: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);
static LEAD_INS: AtomicU64 = AtomicU64::new(0);
static ENCODINGS: AtomicU64 = AtomicU64::new(0);
static ENCODE_MICROS: AtomicU64 = AtomicU64::new(0);
static DECODE_MICROS: AtomicU64 = AtomicU64::new(0);

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// The counters now.
pub fn counts() -> DecodeCounts {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    DecodeCounts {
        windows: get(&WINDOWS),
        tokens: get(&TOKENS),
        fallbacks: get(&FALLBACKS),
        lead_ins: get(&LEAD_INS),
        encodings: get(&ENCODINGS),
        encode_micros: get(&ENCODE_MICROS),
        decode_micros: get(&DECODE_MICROS),
    }
}

/// One encoding that took `took`.
pub(crate) fn encoded(took: Duration) {
    add(&ENCODINGS, 1);
    add(&ENCODE_MICROS, took.as_micros() as u64);
}

/// One window decoded: `tokens` text tokens in the decoding kept, after
/// `fallbacks` decodings redone hotter, in `took` (all of its decodings);
/// `lead_in` when it began with one.
pub(crate) fn decoded(tokens: usize, fallbacks: usize, lead_in: bool, took: Duration) {
    add(&WINDOWS, 1);
    add(&TOKENS, tokens as u64);
    add(&FALLBACKS, fallbacks as u64);
    add(&LEAD_INS, u64::from(lead_in));
    add(&DECODE_MICROS, took.as_micros() as u64);
}
