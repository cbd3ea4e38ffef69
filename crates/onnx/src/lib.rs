//! ONNX Runtime, as the engines use it: sessions on the runtime that
//! `scripts/models.sh` installs, the graph rewrites applied to models before
//! they load, the operators those rewrites call, model cutting (`split`), runs a job's cancel stops (`stop`), and a writer for models made
//! in code (test models, tiny diffusion models).

pub mod ops;
pub mod protobuf;
pub mod rewrite;
pub mod session;
pub mod split;
pub mod stop;
pub mod writer;

pub use session::{environment, library_path, session, session_rewritten, LazySession};
pub use stop::Stoppable;
