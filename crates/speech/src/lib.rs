//! Speech engines behind traits: synthesis (`tts`: Kokoro, Piper,
//! espeak-ng), recognition (`stt`: CTranslate2, whisper.cpp), voice
//! conversion (`voice`: WORLD) and translation (`translate`: Apertium).
//!
//! Engines are synchronous: callers run them on blocking threads. GPL tools
//! (espeak-ng, apertium) only ever run as subprocesses.

pub mod clone;
pub mod design;
pub mod stt;
pub mod translate;
pub mod tts;
pub mod voice;
