//! Silero VAD (MIT): the 16 kHz sequence model from the `silero-vad` wheel,
//! which runs many 32-ms windows in one call and carries its LSTM state
//! from window to window, giving the same numbers as the streaming model
//! fed one window at a time.

use std::borrow::Cow;
use std::path::Path;

use mediagen_onnx::LazySession;
use ort::session::SessionInputValue;
use ort::value::Tensor;

use super::{Vad, VadError, FRAME};

/// The model file under the models directory.
pub const MODEL: &str = "vad/silero_vad_16k_sequence.onnx";
/// Samples of the previous window each window is given before its own.
const CONTEXT: usize = 64;
/// Windows per call (about 33 s of audio).
const BLOCK: usize = 1024;
/// The LSTM state's width.
const STATE: usize = 128;

pub struct Silero {
    session: LazySession,
}

impl Silero {
    /// The detector, if its model and the ONNX Runtime are installed (the
    /// session itself loads on first use).
    pub fn load(models_dir: &Path, threads: usize) -> Result<Self, String> {
        let session = LazySession::new(models_dir, &models_dir.join(MODEL), threads)?;
        Ok(Self { session })
    }
}

impl Vad for Silero {
    fn name(&self) -> &'static str {
        "silero"
    }

    fn probabilities(&self, audio: &[f32]) -> Result<Vec<f32>, VadError> {
        let fail = |e: ort::Error| VadError(e.to_string());
        let frames = audio.len() / FRAME;
        let mut out = Vec::with_capacity(frames);
        let (mut h, mut c) = (vec![0f32; STATE], vec![0f32; STATE]);
        let mut session = self.session.get().map_err(VadError)?;
        for first in (0..frames).step_by(BLOCK) {
            let n = BLOCK.min(frames - first);
            let mut input = Vec::with_capacity(n * (CONTEXT + FRAME));
            for k in first..first + n {
                let at = k * FRAME;
                match at.checked_sub(CONTEXT) {
                    Some(from) => input.extend_from_slice(&audio[from..at]),
                    None => input.extend(std::iter::repeat_n(0.0, CONTEXT)),
                }
                input.extend_from_slice(&audio[at..at + FRAME]);
            }
            let state = |v: Vec<f32>| Tensor::from_array((vec![1i64, 1, STATE as i64], v));
            let inputs: Vec<(Cow<str>, SessionInputValue)> = vec![
                (
                    "input".into(),
                    Tensor::from_array((vec![n as i64, (CONTEXT + FRAME) as i64], input))
                        .map_err(fail)?
                        .into(),
                ),
                ("h".into(), state(h).map_err(fail)?.into()),
                ("c".into(), state(c).map_err(fail)?.into()),
            ];
            let outputs = session.run(inputs).map_err(fail)?;
            let (_, probs) = outputs["speech_probs"]
                .try_extract_tensor::<f32>()
                .map_err(fail)?;
            if probs.len() != n {
                return Err(VadError(format!(
                    "{} probabilities for {n} windows",
                    probs.len()
                )));
            }
            out.extend_from_slice(probs);
            h = outputs["hn"]
                .try_extract_tensor::<f32>()
                .map_err(fail)?
                .1
                .to_vec();
            c = outputs["cn"]
                .try_extract_tensor::<f32>()
                .map_err(fail)?
                .1
                .to_vec();
        }
        Ok(out)
    }
}
