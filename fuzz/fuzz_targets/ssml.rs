//! SSML as a client sends it: any text is parsed or refused with a position
//! inside it, and what is parsed holds breaks within the limit and rates
//! that are finite and positive.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mediagen_core::ssml::{parse, plain, Segment, MAX_BREAK};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = plain(text);
    match parse(text) {
        Ok(segments) => {
            for s in segments {
                match s {
                    Segment::Break(seconds) => {
                        assert!((0.0..=MAX_BREAK).contains(&seconds), "{seconds}")
                    }
                    Segment::Text { rate, .. } | Segment::Phonemes { rate, .. } => {
                        assert!(rate.is_finite() && rate > 0.0, "{rate}")
                    }
                }
            }
        }
        Err(e) => assert!(e.position <= text.chars().count() + 1, "{e:?}"),
    }
});
