//! Building and running the application: services, router, workers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use mediagen_core::ids::random_base62;
use mediagen_core::{ErrorCode, Level};
use mediagen_jobs::Catalog;
use mediagen_store::{BlobStore, Db, Signer};
use mediagen_worker::{Events, Registry, Worker, WorkerConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::catch_panic::CatchPanicLayer;

use crate::config::Config;
use crate::error::Error;
use crate::keycache::KeyCache;
use crate::metrics::Metrics;
use crate::middleware;
use crate::ratelimit::RateLimiter;
use crate::routes::{
    account, accounts, avatars, blobs, console, dubbing, elevenlabs, files, image, jobs, keys,
    models, openai, previews, reference, sound, stt, system, test_jobs, tts, video, voice_changer,
    voices, webhooks,
};
use crate::state::{AppState, Inner};

/// The database, blob store and URL signer every command needs.
pub struct Services {
    pub db: Db,
    pub blobs: BlobStore,
    pub signer: Signer,
}

impl Services {
    pub async fn open(config: &Config) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
        let url = config.database_url();
        let db = Db::connect(&url)
            .await
            .with_context(|| format!("opening database {}", redact(&url)))?
            .with_idempotency_ttl(std::time::Duration::from_secs_f64(
                config.idempotency_ttl_seconds.max(1.0),
            ));
        let upgraded = db.register_legacy_outputs().await?;
        if upgraded > 0 {
            tracing::info!(
                jobs = upgraded,
                "registered the outputs of jobs from before 0005_outputs"
            );
        }
        let blobs = BlobStore::open(
            &config.storage_url,
            &config.storage_dir(),
            &config.storage_options,
        )
        .context("opening blob storage")?;
        let secret = if config.signing_secret.0.is_empty() {
            db.setting_or_init("url_signing_secret", || random_base62(64))
                .await?
        } else {
            config.signing_secret.0.clone()
        };
        Ok(Self {
            db,
            blobs,
            signer: Signer::new(secret.as_bytes()),
        })
    }
}

/// A database URL without its password, for logs.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_owned(),
    }
}

/// What a process's engines bring to its API and in-process workers. The
/// `mediagen` binary provides it over the pipelines; the server never
/// imports an engine crate.
#[async_trait::async_trait]
pub trait EngineHost: Send + Sync {
    /// The catalog requests are checked against (found on disk: no model
    /// is loaded).
    async fn catalog(&self, config: &Config) -> anyhow::Result<Arc<dyn Catalog>>;

    /// Renders the built-in avatars where missing and copies their clips
    /// and posters into the blob store (so signed URLs serve them). Returns
    /// the ids ready.
    async fn publish_avatars(
        &self,
        config: &Config,
        blobs: &BlobStore,
    ) -> anyhow::Result<Vec<&'static str>>;

    /// The pipelines of this process's workers (the kinds of
    /// `worker_kinds`), their models loading in the background.
    async fn registry(&self, config: &Config, db: &Db) -> anyhow::Result<Registry>;
}

pub fn worker_config(config: &Config, concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        concurrency,
        lease: Duration::from_secs_f64(config.lease_seconds),
        heartbeat: Duration::from_secs_f64(config.heartbeat_seconds),
        poll: Duration::from_secs_f64(config.poll_seconds),
        retention: config.retention(),
    }
}

/// The rate limiter `rate_limit_store` asks for.
fn rate_limiter(config: &Config, db: &Db) -> anyhow::Result<RateLimiter> {
    let (minute, hour) = (config.rate_limit_per_minute, config.rate_limit_per_hour);
    let shared = match config.rate_limit_store.as_str() {
        "" => db.backend() == mediagen_store::Backend::Postgres,
        "database" => true,
        "memory" => false,
        other => anyhow::bail!("rate_limit_store: `{other}` is not database or memory"),
    };
    Ok(if shared {
        RateLimiter::shared(minute, hour, db.clone())
    } else {
        RateLimiter::new(minute, hour)
    })
}

/// Events that also hear the other processes (PostgreSQL's `NOTIFY`); a
/// listener that cannot start leaves polling to do the work.
pub async fn relayed_events(db: &Db) -> Events {
    let events = Events::default();
    match events.relay(db).await {
        Ok(true) => tracing::info!("wake-ups: listening for other processes' jobs"),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "wake-ups: cannot listen; polling instead"),
    }
    events
}

/// Creates the operator account and its first admin key when the database
/// has none. Returns the key (to print once), or `None` when set up before.
/// Safe when several processes start at once: one of them wins.
pub async fn ensure_operator(db: &Db, credits: i64) -> anyhow::Result<Option<String>> {
    if db.operator_account().await?.is_some() {
        return Ok(None);
    }
    let token = random_base62(20);
    if db
        .setting_or_init("bootstrap_owner", || token.clone())
        .await?
        != token
    {
        return Ok(None);
    }
    let account = db.create_account("admin", true, credits).await?;
    let (_, secret) = db
        .create_key(&account.id, "bootstrap admin key", Level::Admin, None)
        .await?;
    Ok(Some(secret.expose().to_owned()))
}

/// The HTTP server with its in-process workers.
pub struct Application {
    listener: TcpListener,
    router: Router,
    state: AppState,
    bootstrap_key: Option<String>,
    worker: Option<Worker>,
}

impl Application {
    pub async fn build(config: Config, host: &dyn EngineHost) -> anyhow::Result<Self> {
        let services = Services::open(&config).await?;
        let bootstrap_key = ensure_operator(&services.db, config.initial_credits).await?;
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("binding {}", config.bind))?;
        let local = listener.local_addr()?;
        let base_url = if config.public_base_url.is_empty() {
            format!("http://{local}")
        } else {
            config.public_base_url.trim_end_matches('/').to_owned()
        };
        let events = relayed_events(&services.db).await;
        let catalog = host.catalog(&config).await?;
        let avatars = host.publish_avatars(&config, &services.blobs).await?;
        let worker = match config.workers {
            0 => None,
            n => Some(Worker::new(
                services.db.clone(),
                services.blobs.clone(),
                host.registry(&config, &services.db).await?,
                worker_config(&config, n),
                events.clone(),
            )),
        };
        let state = AppState::new(Inner {
            limiter: rate_limiter(&config, &services.db)?,
            metrics: Metrics::default(),
            keys: KeyCache::new(Duration::from_secs_f64(config.auth_cache_seconds)),
            db: services.db,
            blobs: services.blobs,
            signer: services.signer,
            events,
            catalog,
            avatars,
            base_url,
            config,
            started: mediagen_core::time::now_ms() / 1000,
        });
        let router = router(state.clone());
        Ok(Self {
            listener,
            router,
            state,
            bootstrap_key,
            worker,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The operator's admin key when this start created it.
    pub fn bootstrap_key(&self) -> Option<&str> {
        self.bootstrap_key.as_deref()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then stops the workers.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let dispatcher = tokio::spawn(crate::webhooks::run(self.state.clone(), stop_rx.clone()));
        let worker = self.worker.map(|w| tokio::spawn(w.run(stop_rx)));
        tracing::info!(addr = %self.listener.local_addr()?, base_url = %self.state.base_url, "listening");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await?;
        let _ = stop_tx.send(true);
        if let Some(w) = worker {
            let _ = w.await;
        }
        let _ = dispatcher.await;
        self.state.db.close().await;
        Ok(())
    }
}

fn router(state: AppState) -> Router {
    let mut v1 = Router::new()
        .route("/account", get(account::get_account))
        .route("/account/ledger", get(account::ledger))
        .route("/files", post(files::upload).get(files::list))
        .route("/files/{id}", get(files::get).delete(files::delete))
        .route("/text-to-speech", post(tts::create))
        .route("/text-to-speech/stream", post(tts::stream))
        .route("/audio/speech", post(openai::speech))
        .route("/audio/transcriptions", post(openai::transcriptions))
        .route("/audio/translations", post(openai::translations))
        .route("/images/generations", post(openai::generations))
        .route("/speech-to-text", post(stt::create))
        .route("/video/trim", post(video::trim))
        .route("/sound-generation", post(sound::create))
        .route("/sound-generation/vocabulary", get(sound::vocabulary))
        .route("/image-generation", post(image::create))
        .route("/avatars", get(avatars::list).post(avatars::create))
        .route(
            "/avatars/{id}",
            get(avatars::get)
                .patch(avatars::update)
                .delete(avatars::delete),
        )
        .route("/avatar-expansion", post(avatars::expand))
        .route("/voices", get(voices::list).post(voices::create))
        .route(
            "/voices/{id}",
            get(voices::get)
                .patch(voices::update)
                .delete(voices::delete),
        )
        .route("/voice-changer", post(voice_changer::change))
        .route("/dubbing", post(dubbing::create))
        .route("/dubbing/languages", get(dubbing::languages))
        .route("/dubbing/{id}/segments", post(dubbing::edit_segments))
        .route("/models", get(models::list))
        .route("/models/{id}", get(models::get))
        .route("/jobs", get(jobs::list_jobs))
        .route("/jobs/{id}", get(jobs::get_job).delete(jobs::cancel_job))
        .route("/keys", post(keys::create_key).get(keys::list_keys))
        .route("/keys/{id}", delete(keys::revoke_key))
        .route("/webhooks", post(webhooks::create).get(webhooks::list))
        .route(
            "/webhooks/{id}",
            get(webhooks::get).delete(webhooks::delete),
        )
        .route(
            "/webhooks/default/secret",
            get(webhooks::request_secret).post(webhooks::rotate_request_secret),
        )
        .route("/webhooks/{id}/deliveries", get(webhooks::deliveries))
        .route(
            "/webhooks/{id}/deliveries/{deliveryId}/redeliver",
            post(webhooks::redeliver),
        )
        .route(
            "/accounts",
            post(accounts::create_account).get(accounts::list_accounts),
        )
        .route("/accounts/{id}", get(accounts::get_account))
        .route("/accounts/{id}/credits", post(accounts::grant_credits))
        .route("/accounts/{id}/keys", post(accounts::create_account_key));
    if state.config.enable_test_jobs {
        v1 = v1.route("/test-jobs", post(test_jobs::create));
    }
    let v1 = v1
        .route_layer(from_fn_with_state(state.clone(), middleware::idempotency))
        .route_layer(from_fn_with_state(state.clone(), middleware::authenticate));
    let tts = "/text-to-speech/{voice_id}";
    let eleven = Router::new()
        .route(tts, post(elevenlabs::speech::speech))
        .route(&format!("{tts}/stream"), post(elevenlabs::speech::speech))
        .route(
            &format!("{tts}/with-timestamps"),
            post(elevenlabs::speech::with_timestamps),
        )
        .route(
            &format!("{tts}/stream/with-timestamps"),
            post(elevenlabs::speech::with_timestamps),
        )
        .route("/speech-to-text", post(elevenlabs::speech::transcribe))
        .route("/sound-generation", post(elevenlabs::speech::sound))
        .route("/voices", get(elevenlabs::voices::list))
        .route("/voices/{voice_id}", get(elevenlabs::voices::get))
        .route("/user", get(elevenlabs::account::user))
        .route("/user/subscription", get(elevenlabs::account::subscription))
        .route_layer(from_fn_with_state(state.clone(), middleware::idempotency))
        .route_layer(from_fn_with_state(state.clone(), middleware::authenticate))
        .route_layer(from_fn(elevenlabs::xi_api_key));
    Router::new()
        .nest("/v1", v1)
        .nest("/elevenlabs/v1", eleven)
        .route("/v1/openapi.json", get(system::openapi))
        .route("/docs", get(reference::page))
        .route("/docs/{name}", get(reference::asset))
        .route("/console", get(console::page))
        .route("/console/{name}", get(console::asset))
        .route("/healthz", get(system::healthz))
        .route("/readyz", get(system::readyz))
        .route("/metrics", get(system::metrics))
        .route("/blobs/{*key}", get(blobs::download))
        .route("/previews/{file}", get(previews::get))
        .fallback(|| async { Error::new(ErrorCode::RouteNotFound) })
        .method_not_allowed_fallback(|| async { Error::new(ErrorCode::MethodNotAllowed) })
        .layer(from_fn_with_state(
            state.clone(),
            middleware::record_metrics,
        ))
        .layer(DefaultBodyLimit::disable())
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| -> Response {
                Error::internal("handler panicked").into_response()
            },
        ))
        .layer(from_fn(middleware::request_id))
        .with_state(state)
}

/// Runs workers only (`mediagen worker`) until `shutdown` completes.
pub async fn run_worker(
    config: Config,
    host: &dyn EngineHost,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let services = Services::open(&config).await?;
    let worker = Worker::new(
        services.db.clone(),
        services.blobs,
        host.registry(&config, &services.db).await?,
        worker_config(&config, config.worker_concurrency),
        relayed_events(&services.db).await,
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let handle = tokio::spawn(worker.run(stop_rx));
    shutdown.await;
    let _ = stop_tx.send(true);
    let _ = handle.await;
    services.db.close().await;
    Ok(())
}
