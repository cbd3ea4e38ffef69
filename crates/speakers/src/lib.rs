//! Who speaks when.
//!
//! - [`vad`]: voice activity, by Silero's neural detector where its model
//!   is installed and by frame energy otherwise, behind one trait.
//! - [`encoder`]: GE2E speaker embeddings (Resemblyzer's pretrained
//!   encoder, read from its PyTorch file), and the cosine similarity of two
//!   voices.
//! - [`segmentation`]: pyannote's frame-level speakers with overlap.
//! - [`campplus`]: CAM++ embeddings of real voices (3D-Speaker's).
//! - [`diarize`]: who speaks when, from voice activity and GE2E.
//! - [`sliding`]: who speaks when on real conversations, overlap kept,
//!   from the segmentation network and CAM++ (pyannote 3.x's shape).
//! - [`spectral`]: spectral clustering of speaker embeddings.
//!
//! Audio is 16 kHz mono throughout. Engines are synchronous: callers run
//! them on blocking threads.

pub mod campplus;
pub mod diarize;
pub mod encoder;
pub mod segmentation;
pub mod sliding;
pub mod spectral;
pub mod vad;

/// Samples per second of all audio here.
pub const RATE: usize = 16_000;
