//! Pipelines: the work behind each job kind, composed from the engines.
//! Each validates its payload into a typed request shared with the HTTP
//! layer, so a job is checked before credits are held and again when it runs.

pub mod image;
pub mod sound;
pub mod stt;
pub mod tts;
pub mod video;
