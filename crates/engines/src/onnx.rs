//! The ONNX Runtime environment, loaded once from the shared library that
//! setup installs from the `onnxruntime` PyPI wheel into the models
//! directory (`onnxruntime/libonnxruntime.so.*`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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
/// ([`crate::onnx_graph`]: Snake activations, sines, transposed
/// convolutions and vocoder residual convolutions by our own operators, on
/// every intra-op thread): the same numbers to within a float rounding,
/// faster.
pub fn session_rewritten(
    env: &ort::environment::Environment,
    model: &Path,
    threads: usize,
) -> Result<ort::session::Session, String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let rewritten = crate::onnx_graph::rewrite(&bytes).unwrap_or_else(|e| {
        tracing::warn!(model = %model.display(), "graph not rewritten: {e}");
        None
    });
    builder(env, threads)
        .and_then(|b| match &rewritten {
            Some(_) => b
                .with_operators(crate::onnx_ops::domain()?)
                .map_err(Into::into),
            None => Ok(b),
        })
        .and_then(|mut b| b.commit_from_memory(rewritten.as_deref().unwrap_or(&bytes)))
        .map_err(|e| format!("{}: {e}", model.display()))
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
