//! What the benches' examples share.

use std::path::Path;
use std::process::Command;

/// An audio file as mono f32 samples at `rate`, decoded by ffmpeg.
pub fn decode(path: &Path, rate: u32) -> Vec<f32> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "f32le", "-ac", "1", "-ar"])
        .arg(rate.to_string())
        .arg("pipe:1")
        .output()
        .expect("ffmpeg");
    out.stdout
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
