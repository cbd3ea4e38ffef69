//! One run of a model that a job's cancel stops in the middle: ONNX
//! Runtime checks a run's terminate flag between operators, so a long
//! run (a sentence of speech, a diffusion step, a minute of segmentation)
//! ends within milliseconds of the cancel instead of at its end.

use std::sync::Arc;

use mediagen_probe::process::{on_cancel_here, OnCancel};
use ort::session::RunOptions;

/// Run options whose terminate flag the calling thread's job scope sets
/// when it is cancelled (none outside a scope), for as long as this lives.
pub struct Stoppable {
    options: Arc<RunOptions>,
    _hook: OnCancel,
}

impl Stoppable {
    /// Options for a run made on this thread.
    pub fn here() -> Result<Self, String> {
        let options = Arc::new(RunOptions::new().map_err(|e| e.to_string())?);
        let flag = options.clone();
        let hook = on_cancel_here(move || {
            // Setting a flag does not fail in practice; a run that misses
            // it still ends at the loop's next check of the scope.
            let _ = flag.terminate();
        });
        Ok(Self {
            options,
            _hook: hook,
        })
    }

    /// For `Session::run_with_options`.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{Dim, Elem, Graph};
    use mediagen_probe::process::Scope;
    use std::time::{Duration, Instant};

    /// A model that takes seconds to run (a long chain of matrix products).
    fn slow_model() -> Vec<u8> {
        let mut g = Graph::new("slow", 1);
        let mut x = g.input("x", Elem::F32, &[Dim::Fixed(512), Dim::Fixed(512)]);
        let w = g.weight(&[512, 512], 0.045);
        for _ in 0..600 {
            x = g.op("MatMul", &[&x, &w], &[]);
        }
        g.output(&x, Elem::F32, &[Dim::Fixed(512), Dim::Fixed(512)]);
        g.model()
    }

    /// A run in a cancelled scope stops within a fraction of its length;
    /// the same run outside a scope goes to its end.
    #[test]
    fn a_cancel_stops_a_run_in_its_middle() {
        let models = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let env =
            crate::session::environment(&models).expect("onnxruntime (run scripts/models.sh)");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slow.onnx");
        std::fs::write(&path, slow_model()).unwrap();
        let mut session = crate::session::session(env, &path, 1).unwrap();
        let input = || ort::value::Tensor::from_array((vec![512i64, 512], vec![0.5f32; 512 * 512]));
        let whole = {
            let started = Instant::now();
            let stop = Stoppable::here().unwrap();
            session
                .run_with_options(ort::inputs!["x" => input().unwrap()], stop.options())
                .unwrap();
            started.elapsed()
        };
        assert!(whole > Duration::from_millis(400), "{whole:?}");
        let scope = Scope::new();
        let cancel = {
            let scope = scope.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                scope.cancel();
            })
        };
        let _entered = scope.enter();
        let started = Instant::now();
        let stop = Stoppable::here().unwrap();
        let result =
            session.run_with_options(ort::inputs!["x" => input().unwrap()], stop.options());
        let stopped = started.elapsed();
        cancel.join().unwrap();
        assert!(result.is_err(), "a cancelled run returns an error");
        assert!(
            stopped < whole / 3 && stopped < Duration::from_millis(300),
            "stopped after {stopped:?} of a {whole:?} run"
        );
    }
}
