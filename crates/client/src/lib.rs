//! The command-line client built into `mediagen`: `mediagen tts`, `stt`,
//! `trim`, `dub`, `clone`, `change`, `expand`, `voices`, `avatars`,
//! `sound`, `image`, `jobs`, `keys` and `account` call a Mediagen server's
//! public API (docs/cli.md). It knows nothing of the server's code: only
//! the HTTP API, as any client would.

mod api;
mod args;
mod command;
mod connection;
mod error;
mod output;
mod voices;

pub use command::Command;
pub use connection::{Connection, DEFAULT_URL};
pub use error::CliError;
