//! Pipelines: the work behind each job kind, composed from the engines.
//! Each runs a typed request of `mediagen-jobs` (checked by the HTTP layer
//! before credits are held), and `catalog` answers what the API asks of the
//! engines without loading a model.

pub mod avatar;
pub mod avatar_upload;
pub mod catalog;
pub mod dub;
pub mod encoders;
pub mod engines;
pub mod failure;
pub mod image;
pub mod kinds;
pub mod neural;
pub mod output;
pub mod previews;
pub mod respeak;
pub mod sound;
pub mod stt;
pub mod stt_realtime;
pub mod tts;
pub mod tts_job;
pub mod tts_realtime;
pub mod tts_stream;
pub mod video;
pub mod voice;
pub mod voice_clone;
pub mod voice_design;

pub use engines::{EngineSettings, Engines, Needs};

/// Adds `extra`'s fields to the JSON object `into` (a result's
/// engine-specific part).
pub fn merge(into: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(into), serde_json::Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}
