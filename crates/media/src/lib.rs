//! Media tools: ffprobe and ffmpeg (always subprocesses: untrusted media and a
//! GPL build never run in our process), audio buffers and PCM files, video
//! keyframes and trimming, avatar rendering and expansion, and the power
//! spectra and mel filters that speech models read.

pub mod audio;
pub mod avatar;
pub mod draw;
pub mod expand;
pub mod frames;
pub mod media;
pub mod pcm;
pub use mediagen_probe::process;
pub mod spectrum;
pub mod stretch;
#[cfg(test)]
mod test_signals;
pub mod video;

pub use audio::Audio;
pub use media::AudioFormat;
