//! Building and running the application: services, router, workers.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::Context;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use mediagen_core::ids::random_base62;
use mediagen_core::{ErrorCode, Level};
use mediagen_generate::diffusion::{DiffusionModels, Medium};
use mediagen_generate::image::icons::Icons;
use mediagen_media::avatar;
use mediagen_pipelines::avatar::ExpandPipeline;
use mediagen_pipelines::avatar_upload::AvatarUploadPipeline;
use mediagen_pipelines::dub::{DubEditPipeline, DubLanguages, DubPipeline};
use mediagen_pipelines::image::ImagePipeline;
use mediagen_pipelines::sound::SoundPipeline;
use mediagen_pipelines::stt::SttPipeline;
use mediagen_pipelines::tts::{PreviewPipeline, TtsPipeline};
use mediagen_pipelines::video::TrimPipeline;
use mediagen_pipelines::voice::VoiceChangePipeline;
use mediagen_pipelines::voice_clone::VoiceClonePipeline;
use mediagen_speech::stt::SttCatalog;
use mediagen_speech::translate::{Apertium, Translator};
use mediagen_speech::tts::TtsCatalog;
use mediagen_store::{BlobStore, Db, Signer};
use mediagen_worker::testing::SleepPipeline;
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
    account, accounts, avatars, blobs, dubbing, files, image, jobs, keys, models, previews, sound,
    stt, system, test_jobs, tts, video, voice_changer, voices,
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

/// The engines every pipeline draws on.
#[derive(Clone)]
pub struct Engines {
    pub tts: Arc<TtsCatalog>,
    pub stt: Arc<SttCatalog>,
    /// The image engine's icon set (`None` when not installed).
    pub icons: Option<Arc<Icons>>,
    /// Neural image and sound models (folders under the models directory,
    /// loaded on first use).
    pub diffusion: Arc<DiffusionModels>,
    /// Text translation (Apertium's installed pairs).
    pub translator: Arc<dyn Translator>,
    /// The language pairs dubbing can do with these engines.
    pub dubbing: Arc<DubLanguages>,
}

/// Which engines a process loads: an API process validates requests
/// against every engine's voices and models, while a worker loads only
/// what the kinds it claims run (a trim worker loads no model at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Needs {
    /// Text-to-speech voices (Kokoro, Piper, espeak-ng).
    pub tts: bool,
    /// Speech recognisers.
    pub stt: bool,
}

impl Needs {
    pub const ALL: Needs = Needs {
        tts: true,
        stt: true,
    };

    /// What the job kinds `kinds` run on (every kind when empty).
    pub fn of_kinds(kinds: &[String]) -> Needs {
        if kinds.is_empty() {
            return Needs::ALL;
        }
        let any = |of: &[&str]| kinds.iter().any(|k| of.contains(&k.as_str()));
        Needs {
            tts: any(&[
                "tts",
                "voice.change",
                "dubbing",
                "dubbing.edit",
                "voice.preview",
                "voice.clone",
            ]),
            stt: any(&["tts", "stt", "voice.change", "dubbing", "voice.clone"]),
        }
    }
}

impl Engines {
    /// Loads the models now, in the background: a process with workers
    /// warms up so its first job does not wait for a model to load (an API
    /// process without workers never loads one).
    pub fn warm_in_background(&self) {
        let (tts, stt) = (self.tts.clone(), self.stt.clone());
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let failed: Vec<String> = tts.warm().into_iter().chain(stt.warm()).collect();
            for problem in &failed {
                tracing::warn!("model not loaded: {problem}");
            }
            tracing::info!(ms = started.elapsed().as_millis() as u64, "models loaded");
        });
    }
}

/// The engines found under the models directory (those `needs` asks for;
/// the others are empty), loaded once per process and directory (loading
/// takes a moment and the models are large).
pub async fn engines(config: &Config, needs: Needs) -> anyhow::Result<Engines> {
    type Loaded = Mutex<HashMap<(PathBuf, usize, usize, Needs), Engines>>;
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    let key = (
        config.models_dir.clone(),
        config.engine_threads,
        config.stt_concurrency,
        needs,
    );
    let cache = LOADED.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(found.clone());
    }
    let (dir, threads, decodes, _) = key.clone();
    let loaded = tokio::task::spawn_blocking(move || {
        let tts = Arc::new(if needs.tts {
            TtsCatalog::discover(&dir, threads)
        } else {
            TtsCatalog::default()
        });
        let stt = Arc::new(if needs.stt {
            SttCatalog::discover(&dir, threads, decodes)
        } else {
            SttCatalog::default()
        });
        let apertium = Apertium::discover();
        let translator: Arc<dyn Translator> = Arc::new(apertium);
        let dubbing = Arc::new(DubLanguages::new(&stt, &tts, translator.as_ref()));
        if needs.tts && needs.stt {
            if translator.pairs().is_empty() {
                tracing::warn!("dubbing: Apertium is not installed (scripts/setup.sh installs it); only dubbing into English works");
            }
            tracing::info!(pairs = dubbing.pairs.len(), "dubbing: language pairs ready");
        }
        let diffusion = Arc::new(DiffusionModels::new(&dir, threads));
        for medium in [Medium::Image, Medium::Sound] {
            let found: Vec<String> = diffusion.found(medium).into_iter().map(|f| f.name).collect();
            tracing::info!(medium = medium.folder(), models = ?found, "neural generation models found (loaded on first use)");
        }
        Engines {
        tts,
        stt,
        translator,
        dubbing,
        diffusion,
        icons: match Icons::discover(&dir) {
            Some(icons) => {
                tracing::info!(icons = icons.len(), "image generation: Twemoji icons found");
                Some(Arc::new(icons))
            }
            None => {
                tracing::warn!(dir = %dir.join("emoji").display(), "image generation: no icon set (run scripts/models.sh); the endpoint answers 503");
                None
            }
        },
    }
    })
    .await?;
    Ok(cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_insert(loaded)
        .clone())
}

/// Renders the built-in avatars into `<models>/avatars` where missing (once
/// per machine: about 10 s for all of them).
fn render_avatars(models: &std::path::Path) -> (PathBuf, Vec<&'static str>) {
    let dir = models.join("avatars");
    let mut ready = Vec::new();
    for look in avatar::CATALOG {
        match avatar::ensure_rendered(&dir, look) {
            Ok(()) => ready.push(look.id),
            Err(e) => tracing::warn!(avatar = look.id, error = %e, "avatar not rendered"),
        }
    }
    tracing::info!(avatars = ready.len(), dir = %dir.display(), "built-in avatars ready");
    (dir, ready)
}

/// Renders the built-in avatars where missing and copies their clips and
/// posters into the blob store (so signed URLs serve them). Only the API
/// server does this; workers never need them. Returns the ids ready.
async fn publish_avatars(
    blobs: &BlobStore,
    models: &std::path::Path,
) -> anyhow::Result<Vec<&'static str>> {
    // One render per directory and process: servers starting together wait
    // for the first instead of rendering side by side.
    type Rendered = tokio::sync::Mutex<HashMap<PathBuf, Vec<&'static str>>>;
    static RENDERED: OnceLock<Rendered> = OnceLock::new();
    let mut rendered = RENDERED.get_or_init(Default::default).lock().await;
    let ready = match rendered.get(models) {
        Some(ready) => ready.clone(),
        None => {
            let dir = models.to_owned();
            let (_, ready) = tokio::task::spawn_blocking(move || render_avatars(&dir)).await?;
            rendered.insert(models.to_owned(), ready.clone());
            ready
        }
    };
    drop(rendered);
    let dir = models.join("avatars");
    for look in avatar::CATALOG.iter().filter(|l| ready.contains(&l.id)) {
        let (video, poster) = avatar::files(&dir, look);
        for (file, key) in [
            (video, crate::routes::avatars::video_key(look.id)),
            (poster, crate::routes::avatars::poster_key(look.id)),
        ] {
            if !blobs.exists(&key).await? {
                blobs.put_file(&key, &file).await?;
            }
        }
    }
    Ok(ready)
}

/// The pipelines this process's workers run: every kind this build has,
/// or those of `worker_kinds`.
pub fn registry(config: &Config, engines: &Engines, db: &Db) -> anyhow::Result<Registry> {
    all_pipelines(config, engines, db)
        .only(&config.worker_kinds())
        .map_err(|e| anyhow::anyhow!("worker_kinds: {e}"))
}

/// The pipelines this build can run.
fn all_pipelines(config: &Config, engines: &Engines, db: &Db) -> Registry {
    let mut registry = Registry::new();
    registry.register(Arc::new(TtsPipeline {
        catalog: engines.tts.clone(),
        stt: engines.stt.clone(),
    }));
    registry.register(Arc::new(PreviewPipeline {
        catalog: engines.tts.clone(),
    }));
    registry.register(Arc::new(VoiceClonePipeline {
        tts: engines.tts.clone(),
        stt: engines.stt.clone(),
        db: db.clone(),
    }));
    registry.register(Arc::new(SttPipeline {
        catalog: engines.stt.clone(),
    }));
    registry.register(Arc::new(TrimPipeline));
    registry.register(Arc::new(ExpandPipeline));
    registry.register(Arc::new(AvatarUploadPipeline { db: db.clone() }));
    registry.register(Arc::new(VoiceChangePipeline {
        tts: engines.tts.clone(),
        stt: engines.stt.clone(),
    }));
    registry.register(Arc::new(SoundPipeline {
        models: engines.diffusion.clone(),
    }));
    registry.register(Arc::new(DubPipeline {
        tts: engines.tts.clone(),
        stt: engines.stt.clone(),
        translator: engines.translator.clone(),
        languages: engines.dubbing.clone(),
    }));
    registry.register(Arc::new(DubEditPipeline {
        tts: engines.tts.clone(),
    }));
    registry.register(Arc::new(ImagePipeline {
        icons: engines.icons.clone(),
        models: engines.diffusion.clone(),
    }));
    if config.enable_test_jobs {
        registry.register(Arc::new(SleepPipeline));
    }
    registry
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
async fn relayed_events(db: &Db) -> Events {
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
    pub async fn build(config: Config) -> anyhow::Result<Self> {
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
        let engines = engines(&config, Needs::ALL).await?;
        let avatars = publish_avatars(&services.blobs, &config.models_dir).await?;
        if config.workers > 0 {
            engines.warm_in_background();
        }
        let worker = match config.workers {
            0 => None,
            n => Some(Worker::new(
                services.db.clone(),
                services.blobs.clone(),
                registry(&config, &engines, &services.db)?,
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
            tts: engines.tts.clone(),
            stt: engines.stt.clone(),
            icons: engines.icons.clone(),
            diffusion: engines.diffusion.clone(),
            translator: engines.translator.clone(),
            dubbing: engines.dubbing.clone(),
            avatars,
            base_url,
            config,
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
        let worker = self.worker.map(|w| tokio::spawn(w.run(stop_rx)));
        tracing::info!(addr = %self.listener.local_addr()?, base_url = %self.state.base_url, "listening");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await?;
        let _ = stop_tx.send(true);
        if let Some(w) = worker {
            let _ = w.await;
        }
        self.state.db.close().await;
        Ok(())
    }
}

fn router(state: AppState) -> Router {
    let mut v1 = Router::new()
        .route("/account", get(account::get_account))
        .route("/files", post(files::upload).get(files::list))
        .route("/files/{id}", get(files::get).delete(files::delete))
        .route("/text-to-speech", post(tts::create))
        .route("/text-to-speech/stream", post(tts::stream))
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
        .route("/jobs", get(jobs::list_jobs))
        .route("/jobs/{id}", get(jobs::get_job).delete(jobs::cancel_job))
        .route("/keys", post(keys::create_key).get(keys::list_keys))
        .route("/keys/{id}", delete(keys::revoke_key))
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
    Router::new()
        .nest("/v1", v1)
        .route("/v1/openapi.json", get(system::openapi))
        .route("/docs", get(system::docs))
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
pub async fn run_worker(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let services = Services::open(&config).await?;
    let engines = engines(&config, Needs::of_kinds(&config.worker_kinds())).await?;
    engines.warm_in_background();
    let worker = Worker::new(
        services.db.clone(),
        services.blobs,
        registry(&config, &engines, &services.db)?,
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
