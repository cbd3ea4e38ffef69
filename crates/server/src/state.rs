//! Shared state of the HTTP layer.

use std::ops::Deref;
use std::sync::Arc;

use mediagen_speech::stt::SttCatalog;
use mediagen_speech::tts::TtsCatalog;
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
    /// The voices of every text-to-speech engine found at start-up.
    pub tts: Arc<TtsCatalog>,
    /// The speech recognisers found at start-up.
    pub stt: Arc<SttCatalog>,
    /// The built-in avatars that were rendered (their ids).
    pub avatars: Vec<&'static str>,
    /// The image engine's icon set, when installed.
    pub icons: Option<Arc<mediagen_generate::image::icons::Icons>>,
    /// Neural image and sound models under the models directory.
    pub diffusion: Arc<mediagen_generate::diffusion::DiffusionModels>,
    /// The language pairs dubbing can do.
    pub dubbing: Arc<mediagen_pipelines::dub::DubLanguages>,
    /// Text translation (reported by `GET /v1/models`).
    pub translator: Arc<dyn mediagen_speech::translate::Translator>,
    pub limiter: RateLimiter,
    pub keys: KeyCache,
    pub metrics: Metrics,
    /// Absolute base of result URLs, without a trailing slash.
    pub base_url: String,
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    /// The job kinds claimed by a worker seen within a lease (a worker
    /// silent longer is presumed dead, as its jobs are).
    pub async fn live_kinds(
        &self,
    ) -> Result<std::collections::BTreeSet<String>, mediagen_store::StoreError> {
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
