//! What clients send, read at the edge with no server state: the Bearer
//! key of a request and multipart forms. The server's extractors wrap these;
//! the fuzz targets (fuzz/) call them directly, so changing a route does not
//! rebuild the fuzzers.

pub mod auth;
pub mod form;
pub mod json;

pub use auth::bearer;
pub use form::{safe_filename, FormError, FormLimits, MultipartForm, Upload};
