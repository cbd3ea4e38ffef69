//! Building and running the application: services, router, workers.

use std::future::Future;
use std::time::Duration;

use anyhow::Context;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing;
use axum::Router;
use mediagen_core::ids::random_base62;
use mediagen_core::{ErrorCode, JobKind, Level};
use mediagen_jobs::Catalog;
use mediagen_store::{BlobStore, Db, Signer};
use mediagen_worker::session::SessionHub;
use mediagen_worker::{Events, Registry, Worker, WorkerConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::catch_panic::CatchPanicLayer;

use crate::config::Config;
use crate::edge;
use crate::error::Error;
use crate::keycache::KeyCache;
use crate::metrics::Metrics;
use crate::middleware;
use crate::ratelimit::RateLimiter;
use crate::route_table::{self, Family};
use crate::routes::{elevenlabs, reference, system, webapp};
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
            Duration::from_secs_f64(config.storage_retry_seconds.max(0.0)),
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
    async fn catalog(&self, config: &Config) -> anyhow::Result<Catalog>;

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

    /// Starts making, in the background, the preview of every catalog voice
    /// the blob store lacks (a worker that runs `tts`, the kind that loads
    /// the voices, does this as it starts, unless `previews_at_start` is
    /// off).
    async fn make_previews(&self, config: &Config, blobs: &BlobStore) -> anyhow::Result<()>;
}

/// Whether this process's workers make the voice previews.
fn makes_previews(config: &Config) -> bool {
    config.previews_at_start
        && config
            .worker_kinds()
            .is_ok_and(|kinds| kinds.is_empty() || kinds.contains(&JobKind::Tts))
}

pub fn worker_config(config: &Config, concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        concurrency,
        lease: Duration::from_secs_f64(config.lease_seconds),
        heartbeat: Duration::from_secs_f64(config.heartbeat_seconds),
        poll: Duration::from_secs_f64(config.poll_seconds),
        retention: config.retention(),
        retry_backoff: Duration::from_secs_f64(config.retry_backoff_seconds.max(0.0)),
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
    /// `metrics_bind`'s listener, when set.
    metrics_listener: Option<TcpListener>,
    router: Router,
    state: AppState,
    bootstrap_key: Option<String>,
    workers: Vec<Worker>,
}

impl Application {
    pub async fn build(config: Config, host: &dyn EngineHost) -> anyhow::Result<Self> {
        let services = Services::open(&config).await?;
        let bootstrap_key = ensure_operator(&services.db, config.initial_credits).await?;
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("binding {}", config.bind))?;
        let local = listener.local_addr()?;
        let metrics_listener = match config.metrics_bind.trim() {
            "" => None,
            addr => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding metrics_bind {addr}"))?,
            ),
        };
        let base_url = if config.public_base_url.is_empty() {
            format!("http://{local}")
        } else {
            config.public_base_url.trim_end_matches('/').to_owned()
        };
        let events = relayed_events(&services.db).await;
        let catalog = host.catalog(&config).await?;
        let avatars = host.publish_avatars(&config, &services.blobs).await?;
        if config.workers > 0 && makes_previews(&config) {
            host.make_previews(&config, &services.blobs).await?;
        }
        let workers = match config.workers {
            0 => Vec::new(),
            n => {
                let registry = host.registry(&config, &services.db).await?;
                workers(&config, &services, registry, n, &events).await?
            }
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
            metrics_listener,
            router,
            state,
            bootstrap_key,
            workers,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The port of `metrics_bind`'s listener, when set.
    pub fn metrics_port(&self) -> Option<u16> {
        let listener = self.metrics_listener.as_ref()?;
        listener.local_addr().ok().map(|a| a.port())
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
        let workers: Vec<_> = self
            .workers
            .into_iter()
            .map(|w| tokio::spawn(w.run(stop_rx.clone())))
            .collect();
        tracing::info!(addr = %self.listener.local_addr()?, base_url = %self.state.base_url, "listening");
        let (edge_stop_tx, mut edge_stop) = watch::channel(false);
        let metrics = self.metrics_listener.map(|listener| {
            let router = metrics_router(self.state.clone());
            let tracker = edge::Tracker::new(edge_limits(&self.state.config));
            let mut stop = edge_stop.clone();
            tokio::spawn(edge::serve(listener, router, tracker, async move {
                let _ = stop.wait_for(|s| *s).await;
            }))
        });
        let tracker = edge::Tracker::new(edge_limits(&self.state.config));
        let served = edge::serve(self.listener, self.router, tracker, async move {
            shutdown.await;
            let _ = edge_stop_tx.send(true);
        });
        served.await?;
        let _ = edge_stop.wait_for(|s| *s).await;
        if let Some(m) = metrics {
            let _ = m.await;
        }
        let _ = stop_tx.send(true);
        for w in workers {
            let _ = w.await;
        }
        let _ = dispatcher.await;
        self.state.db.close().await;
        Ok(())
    }
}

/// Every route that takes a key, as `(method, full path, level)`: what
/// the router checks, for tests and the OpenAPI document's agreement.
pub fn route_levels(test_jobs: bool) -> Vec<(String, String, Level)> {
    route_table::levels(test_jobs)
}

/// A family's routes, each behind authentication (with the credentials
/// it takes), its level check and then the idempotency replay: a key that
/// may not call a route gets its 403 before any replay, cache or body
/// parsing.
fn family(state: &AppState, family: Family) -> Router<AppState> {
    family.routes.into_iter().fold(Router::new(), |router, r| {
        let level = r.level.expect("a keyed family's route states its level");
        let gate = middleware::Gate {
            state: state.clone(),
            token: r.token,
        };
        let handler = r
            .handler
            .layer(from_fn_with_state(state.clone(), middleware::idempotency))
            .layer(from_fn_with_state(level, middleware::require_level))
            .layer(from_fn_with_state(gate, middleware::authenticate));
        router.route(&r.path, handler)
    })
}

/// The routes without a key (signed URLs).
fn public(family: Family) -> Router<AppState> {
    family
        .routes
        .into_iter()
        .fold(Router::new(), |router, r| router.route(&r.path, r.handler))
}

fn router(state: AppState) -> Router {
    let v1 = family(&state, route_table::v1(state.config.enable_test_jobs));
    let eleven =
        family(&state, route_table::elevenlabs()).route_layer(from_fn(elevenlabs::xi_api_key));
    Router::new()
        .nest("/v1", v1)
        .nest("/elevenlabs/v1", eleven)
        .route("/v1/openapi.json", routing::get(system::openapi))
        .route("/docs", routing::get(reference::page))
        .route("/docs/{name}", routing::get(reference::asset))
        .route("/console", routing::get(webapp::moved))
        .route("/console/{*rest}", routing::get(webapp::moved))
        .route("/app", routing::get(webapp::page))
        .route("/app/", routing::get(webapp::page))
        .route("/app/{*path}", routing::get(webapp::file))
        .route("/healthz", routing::get(system::healthz))
        .route("/readyz", routing::get(system::readyz))
        .route(
            "/metrics",
            routing::get(system::operator_metrics)
                .route_layer(from_fn_with_state(Level::Admin, middleware::require_level))
                .route_layer(from_fn_with_state(
                    middleware::Gate::keys(&state),
                    middleware::authenticate,
                )),
        )
        .merge(public(route_table::public()))
        .fallback(|| async { Error::new(ErrorCode::RouteNotFound) })
        .method_not_allowed_fallback(|| async { Error::new(ErrorCode::MethodNotAllowed) })
        .layer(from_fn_with_state(state.clone(), middleware::database_gate))
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

/// The edge's limits: the configuration's, with the open connections kept
/// 256 below the process's open-file limit (for the database, the blob
/// store and the tools a job starts).
fn edge_limits(config: &Config) -> edge::EdgeLimits {
    let files = edge::open_files_limit().map_or(usize::MAX, |n| n.saturating_sub(256).max(16));
    edge::EdgeLimits {
        max_connections: config.max_connections.min(files).max(1),
        max_anonymous_per_address: config.max_anonymous_connections_per_address.max(1),
        max_per_account: config.max_connections_per_account.max(1),
        header_read_timeout: Duration::from_secs_f64(config.header_read_timeout_seconds.max(0.1)),
    }
}

/// `metrics_bind`'s router: `/metrics` without a key, nothing else.
fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", routing::get(system::metrics))
        .fallback(|| async { Error::new(ErrorCode::RouteNotFound) })
        .with_state(state)
}

/// The workers of a process running `registry`: one with `concurrency`
/// job slots, and one with `session_slots` for the live-session kinds,
/// taking its sessions' relays at `sessions_bind`.
async fn workers(
    config: &Config,
    services: &Services,
    registry: Registry,
    concurrency: usize,
    events: &Events,
) -> anyhow::Result<Vec<Worker>> {
    let (sessions, jobs) = registry.split_sessions();
    let make = |registry, slots| {
        Worker::new(
            services.db.clone(),
            services.blobs.clone(),
            registry,
            worker_config(config, slots),
            events.clone(),
        )
    };
    let mut out = vec![make(jobs, concurrency)];
    if config.session_slots > 0 && !sessions.kinds().is_empty() {
        let hub = SessionHub::start(
            &config.sessions_bind,
            &config.sessions_advertise,
            services.signer.clone(),
        )
        .await
        .with_context(|| format!("binding sessions_bind {}", config.sessions_bind))?;
        out.push(make(sessions, config.session_slots).with_sessions(hub));
    }
    Ok(out)
}

/// Runs workers only (`mediagen worker`) until `shutdown` completes.
pub async fn run_worker(
    config: Config,
    host: &dyn EngineHost,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let services = Services::open(&config).await?;
    if makes_previews(&config) {
        host.make_previews(&config, &services.blobs).await?;
    }
    let registry = host.registry(&config, &services.db).await?;
    let events = relayed_events(&services.db).await;
    let workers = workers(
        &config,
        &services,
        registry,
        config.worker_concurrency,
        &events,
    )
    .await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let handles: Vec<_> = workers
        .into_iter()
        .map(|w| tokio::spawn(w.run(stop_rx.clone())))
        .collect();
    shutdown.await;
    let _ = stop_tx.send(true);
    for handle in handles {
        let _ = handle.await;
    }
    services.db.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OpenAPI document states each route's level too (for clients):
    /// it must say what the router checks, for every operation it lists.
    #[test]
    fn the_document_states_the_levels_the_router_checks() {
        let doc = serde_json::to_value(crate::openapi::document()).unwrap();
        // Path parameters may be named differently in the two.
        let shape = |p: &str| {
            p.split('/')
                .map(|s| if s.starts_with('{') { "{}" } else { s })
                .collect::<Vec<_>>()
                .join("/")
        };
        let routes = route_levels(true);
        let mut documented = 0;
        let mut disagree = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let Some(level) = op["security"][0]["bearer"][0].as_str() else {
                    continue;
                };
                documented += 1;
                let routed = routes
                    .iter()
                    .find(|(m, p, _)| m.eq_ignore_ascii_case(method) && shape(p) == shape(path))
                    .unwrap_or_else(|| panic!("{method} {path} is documented but not routed"));
                if routed.2.as_str() != level {
                    disagree.push(format!("{method} {path}: {level}, routed {:?}", routed.2));
                }
            }
        }
        assert!(disagree.is_empty(), "{disagree:#?}");
        // (The test-jobs route is left out of the document.)
        let v1 = route_levels(false)
            .iter()
            .filter(|(_, p, _)| !p.starts_with("/elevenlabs"))
            .count();
        assert_eq!(
            documented, v1,
            "every /v1 route is documented with its level"
        );
    }
}
