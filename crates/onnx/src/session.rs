//! The ONNX Runtime environment, loaded once from the shared library that
//! setup installs from the `onnxruntime` PyPI wheel into the models
//! directory (`onnxruntime/libonnxruntime.so.*`).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

static ENV: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// The library file under `models_dir`, if present.
pub fn library_path(models_dir: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::env::var("ORT_DYLIB_PATH") {
        return Some(PathBuf::from(p));
    }
    let dir = models_dir.join("onnxruntime");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// The process-wide environment (the first call decides the library).
pub fn environment(models_dir: &Path) -> Result<&'static ort::environment::Environment, String> {
    ENV.get_or_init(|| {
        let path = library_path(models_dir).ok_or_else(|| {
            format!(
                "ONNX Runtime not found under {}/onnxruntime (run scripts/models.sh)",
                models_dir.display()
            )
        })?;
        let builder =
            ort::init_from(&path).map_err(|e| format!("loading {}: {e}", path.display()))?;
        builder
            .with_name("mediagen")
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// A session for the model file `model`: every graph optimisation,
/// `threads` intra-op threads.
pub fn session(
    env: &ort::environment::Environment,
    model: &Path,
    threads: usize,
) -> Result<ort::session::Session, String> {
    builder(env, threads)
        .and_then(|mut b| b.commit_from_file(model))
        .map_err(|e| format!("{}: {e}", model.display()))
}

/// [`session`], with the model's graph rewritten as it loads
/// ([`crate::rewrite`]: Snake activations, sines, transposed
/// convolutions and vocoder residual convolutions by our own operators, on
/// every intra-op thread): the same numbers to within a float rounding,
/// faster.
pub fn session_rewritten(
    env: &ort::environment::Environment,
    model: &Path,
    threads: usize,
) -> Result<ort::session::Session, String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    rewritten_from_memory(env, &bytes, threads).map_err(|e| format!("{}: {e}", model.display()))
}

/// [`session_rewritten`] on a model's bytes.
fn rewritten_from_memory(
    env: &ort::environment::Environment,
    bytes: &[u8],
    threads: usize,
) -> Result<ort::session::Session, String> {
    let rewritten = crate::rewrite::rewrite(bytes).unwrap_or_else(|e| {
        tracing::warn!("graph not rewritten: {e}");
        None
    });
    builder(env, threads)
        .and_then(|b| match &rewritten {
            Some(_) => b.with_operators(crate::ops::domain()?).map_err(Into::into),
            None => Ok(b),
        })
        .and_then(|mut b| b.commit_from_memory(rewritten.as_deref().unwrap_or(bytes)))
        .map_err(|e| e.to_string())
}

fn builder(
    env: &ort::environment::Environment,
    threads: usize,
) -> ort::Result<ort::session::builder::SessionBuilder> {
    ort::session::Session::builder(env)
        .and_then(|b| {
            b.with_optimization_level(ort::session::builder::GraphOptimizationLevel::All)
                .map_err(Into::into)
        })
        .and_then(|b| b.with_intra_threads(threads.max(1)).map_err(Into::into))
}

/// A rewritten session ([`session_rewritten`]) built on first use, so a
/// process that never runs the model (an API process without workers)
/// never loads it. A failed load is kept and reported on every use.
pub struct LazySession {
    models_dir: PathBuf,
    model: PathBuf,
    threads: usize,
    /// Makes the model's bytes, for a model built in code from weights
    /// read elsewhere (`model` then only names it in logs).
    build: Option<Builder>,
    /// Whether built bytes get the graph rewrites (as files always do).
    rewrite: bool,
    session: OnceLock<Result<Mutex<ort::session::Session>, String>>,
}

type Builder = Box<dyn Fn() -> Result<Vec<u8>, String> + Send + Sync>;

impl LazySession {
    /// Checks that the runtime library and the model file are there
    /// (cheap); the session itself is built by the first [`Self::get`].
    pub fn new(models_dir: &Path, model: &Path, threads: usize) -> Result<Self, String> {
        if library_path(models_dir).is_none() {
            return Err(format!(
                "ONNX Runtime not found under {}/onnxruntime (run scripts/models.sh)",
                models_dir.display()
            ));
        }
        if !model.is_file() {
            return Err(format!(
                "{} not found (run scripts/models.sh)",
                model.display()
            ));
        }
        Ok(Self {
            models_dir: models_dir.to_owned(),
            model: model.to_owned(),
            threads,
            build: None,
            rewrite: true,
            session: OnceLock::new(),
        })
    }

    /// A session for a model that `build` makes in code when it is first
    /// used (from weights in `source`, a file that must be there now).
    pub fn built(
        models_dir: &Path,
        source: &Path,
        threads: usize,
        build: impl Fn() -> Result<Vec<u8>, String> + Send + Sync + 'static,
    ) -> Result<Self, String> {
        let mut lazy = Self::new(models_dir, source, threads)?;
        lazy.build = Some(Box::new(build));
        lazy.rewrite = false;
        Ok(lazy)
    }

    /// A session for a model that `build` derives from the model file
    /// `source` when it is first used (a part of it: [`crate::split`]),
    /// rewritten as model files are.
    pub fn derived(
        models_dir: &Path,
        source: &Path,
        threads: usize,
        build: impl Fn() -> Result<Vec<u8>, String> + Send + Sync + 'static,
    ) -> Result<Self, String> {
        let mut lazy = Self::built(models_dir, source, threads, build)?;
        lazy.rewrite = true;
        Ok(lazy)
    }

    /// The session, built now if this is its first use.
    pub fn get(&self) -> Result<MutexGuard<'_, ort::session::Session>, String> {
        let loaded = self.session.get_or_init(|| {
            let env = environment(&self.models_dir)?;
            let started = std::time::Instant::now();
            let session = match &self.build {
                None => session_rewritten(env, &self.model, self.threads)?,
                Some(build) => {
                    let bytes = build()?;
                    let made = if self.rewrite {
                        rewritten_from_memory(env, &bytes, self.threads)
                    } else {
                        builder(env, self.threads)
                            .and_then(|mut b| b.commit_from_memory(&bytes))
                            .map_err(|e| e.to_string())
                    };
                    made.map_err(|e| format!("{}: {e}", self.model.display()))?
                }
            };
            tracing::info!(model = %self.model.display(), ms = started.elapsed().as_millis() as u64, "model loaded");
            Ok(Mutex::new(session))
        });
        match loaded {
            Ok(session) => Ok(session.lock().unwrap_or_else(|e| e.into_inner())),
            Err(e) => Err(e.clone()),
        }
    }

    /// Builds the session now (a worker warming up); the error, if any.
    pub fn load(&self) -> Result<(), String> {
        self.get().map(drop)
    }
}
