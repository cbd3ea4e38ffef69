//! The `mediagen` command's wiring: the engines, found and loaded through
//! the pipelines, handed to the server as its [`EngineHost`]. This is the
//! one crate that sees both the HTTP layer and the engines.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use mediagen_core::JobKind;
use mediagen_jobs::Catalog;
use mediagen_pipelines::engines::{avatar_files, render_avatars};
use mediagen_pipelines::{EngineSettings, Engines, Needs};
use mediagen_server::app::EngineHost;
use mediagen_server::routes::avatars::{poster_key, video_key};
use mediagen_server::{Application, Config};
use mediagen_store::{BlobStore, Db};
use mediagen_worker::Registry;

/// The engines under the configured models directory.
#[derive(Debug, Default, Clone, Copy)]
pub struct Host;

fn settings(config: &Config) -> EngineSettings {
    EngineSettings {
        models_dir: config.models_dir.clone(),
        threads: config.engine_threads,
        stt_concurrency: config.stt_concurrency,
    }
}

/// Stores each of `files` (a local file and its key) the store lacks.
async fn store_missing(
    blobs: &BlobStore,
    files: &[(PathBuf, String)],
) -> Result<(), mediagen_store::BlobError> {
    for (file, key) in files {
        if !blobs.exists(key).await? {
            blobs.put_file(key, file).await?;
        }
    }
    Ok(())
}

/// The engines `needs` asks for (found once per process and settings).
async fn engines(config: &Config, needs: Needs) -> anyhow::Result<Engines> {
    let settings = settings(config);
    Ok(tokio::task::spawn_blocking(move || Engines::discover(&settings, needs)).await?)
}

#[async_trait::async_trait]
impl EngineHost for Host {
    async fn catalog(&self, config: &Config) -> anyhow::Result<Catalog> {
        Ok(Catalog::of(Arc::new(engines(config, Needs::ALL).await?)))
    }

    async fn publish_avatars(
        &self,
        config: &Config,
        blobs: &BlobStore,
    ) -> anyhow::Result<Vec<&'static str>> {
        // One render per directory and process: servers starting together
        // wait for the first instead of rendering side by side.
        type Rendered = tokio::sync::Mutex<HashMap<PathBuf, Vec<&'static str>>>;
        static RENDERED: OnceLock<Rendered> = OnceLock::new();
        let models = &config.models_dir;
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
        let files: Vec<(PathBuf, String)> = ready
            .iter()
            .filter_map(|id| avatar_files(&dir, id).map(|files| (id, files)))
            .flat_map(|(id, (video, poster))| [(video, video_key(id)), (poster, poster_key(id))])
            .collect();
        // A file store that does not answer does not stop the start: the
        // process serves (answering 503 where files are needed) and
        // publishes the clips once the store is back.
        if let Err(e) = store_missing(blobs, &files).await {
            tracing::warn!(error = %e, "file store unreachable: built-in avatars are published when it answers");
            let blobs = blobs.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                    if store_missing(&blobs, &files).await.is_ok() {
                        tracing::info!("built-in avatars published");
                        break;
                    }
                }
            });
        }
        Ok(ready)
    }

    async fn make_previews(&self, config: &Config, blobs: &BlobStore) -> anyhow::Result<()> {
        let loaded = engines(config, Needs::of_kinds(&[JobKind::Tts])).await?;
        let (blobs, cache) = (blobs.clone(), config.models_dir.join(".previews"));
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let stored =
                mediagen_pipelines::previews::publish(loaded.tts.clone(), &blobs, &cache).await;
            tracing::info!(
                stored,
                ms = started.elapsed().as_millis() as u64,
                "voice previews ready"
            );
        });
        Ok(())
    }

    async fn registry(&self, config: &Config, db: &Db) -> anyhow::Result<Registry> {
        let kinds = config.worker_kinds()?;
        let loaded = engines(config, Needs::of_kinds(&kinds)).await?;
        let registry = loaded
            .registry(db, config.enable_test_jobs)
            .only(&kinds)
            .map_err(|e| anyhow::anyhow!("worker_kinds: {e}"))?;
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            for problem in loaded.warm() {
                tracing::warn!("model not loaded: {problem}");
            }
            tracing::info!(ms = started.elapsed().as_millis() as u64, "models loaded");
        });
        Ok(registry)
    }
}

/// The HTTP server on these engines, with its in-process workers.
pub async fn application(config: Config) -> anyhow::Result<Application> {
    Application::build(config, &Host).await
}

/// Workers only (`mediagen worker`), until `shutdown` completes.
pub async fn run_worker(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    mediagen_server::app::run_worker(config, &Host, shutdown).await
}
