//! What the speaker tests share: the models directory and the real
//! recording installed in it.

use std::path::PathBuf;

pub fn models_dir() -> PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")))
}

/// The pyannote.audio wheel's sample conversation: 16-bit mono samples at
/// 16 kHz, as floats.
pub fn sample() -> Vec<f32> {
    let bytes = std::fs::read(models_dir().join("diarize/sample.wav"))
        .expect("the sample is installed by scripts/models.sh");
    let data = bytes
        .windows(4)
        .position(|w| w == b"data")
        .expect("a data chunk");
    bytes[data + 8..]
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
        .collect()
}
