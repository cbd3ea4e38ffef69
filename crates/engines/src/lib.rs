//! Engines behind traits, and the media tools they need.
//!
//! Engines are synchronous: callers run them on blocking threads. Untrusted
//! media and GPL tools (ffmpeg, espeak-ng) only ever run as subprocesses.

pub mod audio;
pub mod avatar;
pub mod bpe;
pub mod diffusion;
mod draw;
pub mod expand;
pub mod image;
pub mod media;
pub mod onnx;
pub mod onnx_graph;
pub mod onnx_ops;
pub mod pcm;
pub mod process;
mod protobuf;
pub mod sound;
pub mod stt;
pub mod translate;
pub mod tts;
pub mod video;
pub mod voice;

pub use audio::Audio;
pub use media::AudioFormat;
