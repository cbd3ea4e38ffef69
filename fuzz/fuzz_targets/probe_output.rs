//! ffprobe's JSON as a hostile file could shape it: any output is read or
//! refused, and what is read names an allowed demuxer and a positive,
//! finite duration.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mediagen_probe::{parse_probe, DEMUXERS};
use mediagen_media::video::parse_info;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = parse_probe(text) {
        assert!(DEMUXERS.contains(&p.demuxer), "{p:?}");
        assert!(p.duration.is_finite() && p.duration > 0.0, "{p:?}");
        assert!(p.has_audio || p.has_video);
    }
    if let Some(info) = parse_info(text) {
        assert!(DEMUXERS.contains(&info.demuxer), "{info:?}");
        assert!(info.fps.is_finite() && info.fps > 0.0, "{info:?}");
    }
});
