//! Domain types shared by every Mediagen crate.
//!
//! Nothing here performs I/O: the types are parsed and validated in pure
//! functions so that the HTTP layer, the store and the workers agree on one
//! vocabulary.

pub mod billing;
pub mod capability;
pub mod error;
pub mod form;
pub mod format;
pub mod ids;
pub mod job;
pub mod job_fields;
pub mod keys;
pub mod kind;
pub mod normalize;
pub mod page;
pub mod params;
pub mod rng;
pub mod schema;
pub mod ssml;
pub mod time;
pub mod voice;

pub use capability::Capability;
pub use error::{ApiError, ErrorCode};
pub use ids::{AccountId, AvatarId, DeliveryId, FileId, JobId, KeyId, TypedId, VoiceId, WebhookId};
pub use job::{CreditState, JobStatus};
pub use job_fields::JobFields;
pub use keys::{ApiKeySecret, Level};
pub use kind::{JobKind, JobRequest, Price, TimeLimit};
pub use page::{Page, PageParams, Pagination};
