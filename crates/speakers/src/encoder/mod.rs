//! Speaker embeddings: Resemblyzer's GE2E encoder (Apache-2.0), read from
//! the PyTorch file its wheel ships (`<models>/speakers/ge2e.pt`) and run on
//! ONNX Runtime.
//!
//! As Resemblyzer computes them: audio raised to -30 dBFS (never lowered),
//! 40-channel mel power frames (25 ms Hann windows every 10 ms, zero-padded
//! at the ends, not logarithmic), partial utterances of 160 frames (1.6 s)
//! 1.3 a second, each embedded by the network, and their mean
//! L2-normalised. Two embeddings compare by their dot product (both have
//! unit length): [`Embedding::similarity`].

pub(crate) mod graph;
pub mod torch;

use std::path::Path;

use mediagen_media::spectrum::{mel_energies, mel_filters, Stft};
use mediagen_onnx::LazySession;
use ort::value::Tensor;

use crate::RATE;
pub use graph::{MELS, WIDTH};

/// The weights' file under the models directory.
pub const MODEL: &str = "speakers/ge2e.pt";
const N_FFT: usize = 400;
/// Samples per mel frame (10 ms).
pub const HOP: usize = 160;
/// Frames per partial utterance (1.6 s).
pub const PARTIAL: usize = 160;
/// Partials per call (bounds memory on long spans).
const BATCH: usize = 64;

#[derive(Debug, thiserror::Error)]
#[error("speaker embedding failed: {0}")]
pub struct EncoderError(pub String);

/// A unit-length speaker embedding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Embedding(pub Vec<f32>);

impl Embedding {
    /// The cosine similarity of two embeddings: 1 for the same direction.
    pub fn similarity(&self, other: &Embedding) -> f32 {
        self.0.iter().zip(&other.0).map(|(a, b)| a * b).sum()
    }

    /// The normalised mean of `embeddings` (a voice from several spans);
    /// `None` for none.
    pub fn mean<'a>(embeddings: impl IntoIterator<Item = &'a Embedding>) -> Option<Embedding> {
        let mut sum: Option<Vec<f32>> = None;
        for e in embeddings {
            match &mut sum {
                None => sum = Some(e.0.clone()),
                Some(s) => s.iter_mut().zip(&e.0).for_each(|(a, b)| *a += b),
            }
        }
        sum.map(normalised)
    }
}

/// `v` scaled to unit length (zeros stay zeros): the one normalisation of
/// every embedding here (GE2E's, CAM++'s, a cluster's centroid).
pub(crate) fn normalised(mut v: Vec<f32>) -> Embedding {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    Embedding(v)
}

/// The GE2E encoder.
pub struct SpeakerEncoder {
    session: LazySession,
    stft: Stft,
    filters: Vec<f32>,
}

impl SpeakerEncoder {
    /// The encoder, if its weights and the ONNX Runtime are installed; the
    /// weights are read and the network built on first use.
    pub fn load(models_dir: &Path, threads: usize) -> Result<Self, String> {
        let file = models_dir.join(MODEL);
        let source = file.clone();
        let session = LazySession::built(models_dir, &file, threads, move || {
            let bytes = std::fs::read(&source).map_err(|e| e.to_string())?;
            let weights = torch::state_dict(&bytes, "model_state")?;
            graph::build(&weights)
        })?;
        Ok(Self {
            session,
            stft: Stft::new(N_FFT),
            filters: mel_filters(RATE as u32, N_FFT, MELS),
        })
    }

    /// Loads the network now (a worker warming up).
    pub fn warm(&self) -> Result<(), String> {
        self.session.load()
    }

    /// Mel power frames of `audio` (`[frames][40]`), one every 10 ms
    /// centred on its sample, the audio zero-padded at both ends (librosa's
    /// `melspectrogram` with `center=True`).
    pub fn frames(&self, audio: &[f32]) -> Vec<f32> {
        let frames = 1 + audio.len() / HOP;
        let power = self.stft.power(frames, HOP, |i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| audio.get(i))
                .copied()
                .unwrap_or(0.0)
        });
        mel_energies(&self.filters, &power, self.stft.bins())
    }

    /// The embeddings of partial utterances of `length` frames (Resemblyzer's
    /// are [`PARTIAL`]): `starts` are frame numbers in `frames` (from
    /// [`Self::frames`]); frames past the end count as silence.
    pub fn partials(
        &self,
        frames: &[f32],
        starts: &[usize],
        length: usize,
    ) -> Result<Vec<Embedding>, EncoderError> {
        let fail = |e: ort::Error| EncoderError(e.to_string());
        let mut out = Vec::with_capacity(starts.len());
        let mut session = self.session.get().map_err(EncoderError)?;
        for batch in starts.chunks(BATCH) {
            let mut input = vec![0f32; batch.len() * length * MELS];
            for (k, &s) in batch.iter().enumerate() {
                let from = (s * MELS).min(frames.len());
                let to = ((s + length) * MELS).min(frames.len());
                input[k * length * MELS..][..to - from].copy_from_slice(&frames[from..to]);
            }
            let shape = vec![batch.len() as i64, length as i64, MELS as i64];
            let x = Tensor::from_array((shape, input)).map_err(fail)?;
            let stop = mediagen_onnx::Stoppable::here().map_err(EncoderError)?;
            let outputs = session
                .run_with_options(ort::inputs!["mels" => x], stop.options())
                .map_err(fail)?;
            let (_, e) = outputs["embeddings"]
                .try_extract_tensor::<f32>()
                .map_err(fail)?;
            out.extend(e.chunks_exact(WIDTH).map(|v| Embedding(v.to_vec())));
        }
        Ok(out)
    }

    /// The embedding of one utterance (Resemblyzer's `embed_utterance` on
    /// audio raised to -30 dBFS); `None` when it is silent.
    pub fn embed(&self, audio: &[f32]) -> Result<Option<Embedding>, EncoderError> {
        let Some(audio) = raised(audio) else {
            return Ok(None);
        };
        let (starts, padded) = partial_starts(audio.len());
        let mut audio = audio;
        audio.resize(padded.max(audio.len()), 0.0);
        let frames = self.frames(&audio);
        let partials = self.partials(&frames, &starts, PARTIAL)?;
        Ok(Embedding::mean(&partials))
    }
}

impl SpeakerEncoder {
    /// The embedding of speech at any sample `rate` (resampled to 16 kHz,
    /// then [`Self::embed`]); silence is an error.
    pub fn embed_at(&self, audio: &[f32], rate: u32) -> Result<Embedding, EncoderError> {
        let audio = mediagen_media::audio::resample(audio, rate, RATE as u32);
        self.embed(&audio)?
            .ok_or_else(|| EncoderError("the audio is silent".into()))
    }
}

/// `audio` raised to -30 dBFS if it is quieter (Resemblyzer's
/// `normalize_volume(increase_only=True)`); `None` when it is silent.
pub fn raised(audio: &[f32]) -> Option<Vec<f32>> {
    if audio.is_empty() {
        return None;
    }
    let ms = audio.iter().map(|&s| (s as f64) * (s as f64)).sum::<f64>() / audio.len() as f64;
    if ms <= 0.0 {
        return None;
    }
    let dbfs = 10.0 * ms.log10();
    let change = -30.0 - dbfs;
    let gain = if change > 0.0 {
        10f64.powf(change / 20.0) as f32
    } else {
        1.0
    };
    Some(audio.iter().map(|s| s * gain).collect())
}

/// Where Resemblyzer's partials start (frame numbers) for audio of `n`
/// samples at 1.3 partials a second, a last partial kept when it is at
/// least three quarters covered; and the samples to pad the audio to.
pub fn partial_starts(n: usize) -> (Vec<usize>, usize) {
    let frames = (n + 1).div_ceil(HOP);
    let step = ((RATE as f64 / 1.3) / HOP as f64).round() as usize;
    let steps = (frames + step + 1).saturating_sub(PARTIAL).max(1);
    let mut starts: Vec<usize> = (0..steps).step_by(step).collect();
    let last = *starts.last().unwrap_or(&0);
    let coverage = (n as f64 - (last * HOP) as f64) / (PARTIAL * HOP) as f64;
    if coverage < 0.75 && starts.len() > 1 {
        starts.pop();
    }
    let padded = (starts.last().unwrap_or(&0) + PARTIAL) * HOP;
    (starts, padded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partials_follow_resemblyzer() {
        // 3 s: 301 frames, step 77: starts 0, 77, 154 (covered 0.94: kept).
        assert_eq!(partial_starts(48_000), (vec![0, 77, 154], 314 * HOP));
        // 1 s: one partial, padded to 1.6 s.
        assert_eq!(partial_starts(16_000), (vec![0], 160 * HOP));
        // 2 s: starts 0 and 77 (the last covered 0.77: kept); 1.875 s:
        // the second covered 0.69: dropped.
        assert_eq!(partial_starts(32_000).0, vec![0, 77]);
        assert_eq!(partial_starts(30_000).0, vec![0]);
    }

    #[test]
    fn similarity_and_mean() {
        let a = Embedding(vec![1.0, 0.0]);
        let b = Embedding(vec![0.0, 1.0]);
        assert_eq!(a.similarity(&a), 1.0);
        assert_eq!(a.similarity(&b), 0.0);
        let m = Embedding::mean([&a, &b]).unwrap();
        assert!((m.similarity(&a) - 0.5f32.sqrt()).abs() < 1e-6);
    }
}
