//! Persistence for Mediagen.
//!
//! [`Db`] speaks to SQLite (the default) or PostgreSQL (scale-out) through
//! one set of SQL statements; the few places where the dialects differ are
//! chosen by [`Backend`]. The queue is the jobs table. [`BlobStore`] keeps
//! job outputs in a local directory or any `object_store` backend and signs
//! the URLs under which they are served.

mod accounts;
mod avatars;
mod blob;
mod db;
mod files;
mod idempotency;
mod jobs;
mod keys;
mod rate_limits;
mod retention;
mod streams;
mod tokens;
mod voices;
mod wakeups;
mod webhooks;
mod workers;

pub use accounts::{Account, LedgerEntry};
pub use avatars::{AvatarChanges, AvatarRecord};
pub use blob::{
    content_type_for, BlobError, BlobRange, BlobRead, BlobStore, SignedUrlError, Signer,
};
pub use db::{Backend, Db, Outage, StoreError};
pub use files::FileRecord;
pub use idempotency::IdempotencyState;
pub use jobs::{legacy_outputs, CreateJobError, JobFilter, NewJob, Outcome, QueueDepth};
pub use keys::{AuthKey, KeyRecord};
pub use rate_limits::RateCounts;
pub use streams::{Chunk, CHUNK_MAX_AGE_MS};
pub use tokens::MintedToken;
pub use voices::{VoiceChanges, VoiceRecord};
pub use wakeups::Wakeup;
pub use webhooks::{Attempt, DeliveryRecord, Due, WebhookRecord};
