//! Video expansion: a clip made exactly as long as asked.
//!
//! `seamless` is a video texture (Schödl, Szeliski, Salesin and Essa,
//! "Video Textures", SIGGRAPH 2000): every frame is shrunk to a grey
//! thumbnail, the distance between frames is filtered along diagonals (so a
//! jump is only cheap where the motion before and after it matches too),
//! the cheapest backward jumps become candidate loops, and a planner strings
//! forward runs and jumps together to hit the exact frame count, ending on
//! the clip's own last frame, with a growing penalty on reusing a loop (and
//! never the same loop more than three times in a row) so no period shows.
//! Each jump is crossfaded over a few frames. `loop`, `pingpong` and
//! `freeze` are the plain alternatives.
//!
//! Frames are decoded on demand, run by run, by ffmpeg and streamed through
//! to the encoder: memory holds thumbnails and a few frames, whatever the
//! length.

mod plan;
mod render;

pub use plan::*;
pub use render::*;
