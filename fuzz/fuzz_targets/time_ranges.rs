//! Trim ranges as a client sends them: any text as `ranges`, with and
//! without clamping. Accepted ranges always lie inside the media, each
//! starting before it ends.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use mediagen_jobs::video::{parse_time, TrimOptions};

const DURATION: f64 = 60.0;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_time(&serde_json::Value::String(text.to_owned()));
    for clamp in ["false", "true"] {
        let fields = HashMap::from([
            ("ranges".to_owned(), text.to_owned()),
            ("clamp".to_owned(), clamp.to_owned()),
        ]);
        if let Ok(options) = TrimOptions::parse(&fields, DURATION, 20) {
            assert!(!options.ranges.is_empty() && options.ranges.len() <= 20);
            for r in &options.ranges {
                assert!(
                    0.0 <= r.start && r.start < r.end && r.end <= DURATION,
                    "{r:?} from {text:?}"
                );
            }
            assert!(options.output_seconds() <= DURATION * 20.0);
        }
    }
});
