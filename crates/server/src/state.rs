//! Shared state of the HTTP layer.

use std::ops::Deref;
use std::sync::Arc;

use mediagen_jobs::Catalog;
use mediagen_store::{BlobStore, Db, Signer};
use mediagen_worker::Events;

use crate::config::Config;
use crate::keycache::KeyCache;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;

/// Cheap to clone: one `Arc` around everything handlers need.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    pub db: Db,
    pub blobs: BlobStore,
    pub signer: Signer,
    pub events: Events,
    /// The engines installed, as requests are checked against them (voices,
    /// recognisers, models, dubbing's pairs, the embedded generators).
    pub catalog: Catalog,
    /// The built-in avatars that were rendered (their ids).
    pub avatars: Vec<&'static str>,
    pub limiter: RateLimiter,
    pub keys: KeyCache,
    pub metrics: Metrics,
    /// Absolute base of result URLs, without a trailing slash.
    pub base_url: String,
    /// When this server started, Unix seconds (`created` of the models it
    /// loaded, in OpenAI's form of `GET /v1/models`).
    pub started: i64,
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    /// The job kinds claimed by a worker seen within a lease (a worker
    /// silent longer is presumed dead, as its jobs are).
    pub async fn live_kinds(
        &self,
    ) -> Result<std::collections::BTreeSet<mediagen_core::JobKind>, mediagen_store::StoreError>
    {
        let within = (self.config.lease_seconds * 1000.0) as i64;
        self.db.live_kinds(within.max(1000)).await
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}
