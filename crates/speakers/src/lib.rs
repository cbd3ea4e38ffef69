//! Who speaks when.
//!
//! - [`vad`]: voice activity, by Silero's neural detector where its model
//!   is installed and by frame energy otherwise, behind one trait.
//! - [`encoder`]: GE2E speaker embeddings (Resemblyzer's pretrained
//!   encoder, read from its PyTorch file), and the cosine similarity of two
//!   voices.
//! - [`diarize`]: who speaks when, from the two.
//!
//! Audio is 16 kHz mono throughout. Engines are synchronous: callers run
//! them on blocking threads.

pub mod diarize;
pub mod encoder;
pub mod segmentation;
pub mod vad;

/// Samples per second of all audio here.
pub const RATE: usize = 16_000;
