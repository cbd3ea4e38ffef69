//! `dubbing`: speech in audio or video re-spoken in another language.
//!
//! Stages (the job's `progress` moves through them): transcribe (0–30),
//! join the recogniser's segments into sentences and translate (30–40),
//! the speakers' neural clones in `clone` mode (40–50), synthesize and
//! time-fit each line (40 or 50–85), mix over the original with its speech
//! ducked (85–90), mux or encode and store the subtitles (90–100).

mod cast;
mod clones;
mod edit;
mod languages;
mod run;
mod sentences;

pub use edit::DubEditPipeline;
pub use languages::dub_languages;
pub use mediagen_jobs::dub::*;
pub use run::DubPipeline;
