//! A dubbing request, an edit of a finished dub, and the language pairs
//! dubbing can do.

mod edit;
mod languages;
mod options;

pub use edit::{DubEdit, DubbedLine, LineEdit};
pub use languages::{DubLanguages, Pair, Via};
pub use options::{
    DubOptions, DubRequest, DubVoice, DubbingForm, CLONE_SEARCH, CLONE_SEARCH_PER_SPEAKER,
};
