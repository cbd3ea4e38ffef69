//! Integration tests of the HTTP API. Every test runs on SQLite and on
//! PostgreSQL (see `on_both_backends!`).

mod helpers;
mod hostile_media;
mod sdk;

mod attacks;
mod auth;
mod avatars;
mod bounded;
mod cli;
mod contract;
mod credits;
mod diarize;
mod dubbing;
mod elevenlabs;
mod errors;
mod expansion;
mod faults;
mod files;
mod idempotency;
mod image;
mod isolation;
mod jobs;
mod limits;
mod metering;
mod neural;
mod openai;
mod openai_images;
mod openai_node;
mod openai_transcribe;
mod pagination;
mod process;
mod retention;
mod scale;
mod scale_out;
mod sound;
mod storage;
mod stt;
mod stt_long;
mod system;
mod tts;
mod video;
mod voice_clone;
mod voices;
mod webhooks;
mod worker_kinds;
