//! Video trimming with ffmpeg and ffprobe, run as subprocesses: files only
//! (`-protocol_whitelist file,pipe`), no stdin, a time limit scaled to the
//! media, and every argument built by us from validated numbers (no
//! user-supplied string reaches a command line or a filter graph).

mod keyframes;
mod mux;
mod probe;
mod trim;

pub use keyframes::*;
pub use mux::*;
pub use probe::*;
pub use trim::*;
