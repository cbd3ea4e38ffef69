//! What image and sound generation share when a request names a neural
//! model (`model`, `steps`, `guidanceScale`): validation against the models
//! on disk, loading, progress and failures.

use mediagen_core::ErrorCode;
use std::sync::Arc;

use mediagen_generate::diffusion::{
    DiffusionError, DiffusionModel, DiffusionModels, Generate, Medium,
};
use mediagen_worker::{JobContext, JobFailure};

pub use mediagen_jobs::neural::*;

/// Running a neural-model choice on the engines.
pub trait NeuralRun {
    fn request<'a>(&self, prompt: &'a str, negative: Option<&'a str>, seed: u64) -> Generate<'a>;

    /// The model, loaded on first use (blocking).
    fn load(
        &self,
        medium: Medium,
        models: &DiffusionModels,
    ) -> Result<Arc<DiffusionModel>, JobFailure>;
}

impl NeuralRun for Neural {
    fn request<'a>(&self, prompt: &'a str, negative: Option<&'a str>, seed: u64) -> Generate<'a> {
        Generate {
            prompt,
            negative_prompt: negative,
            steps: self.steps.map(|s| s as usize),
            guidance_scale: self.guidance_scale,
            seed,
        }
    }

    /// The model, loaded on first use (blocking).
    fn load(
        &self,
        medium: Medium,
        models: &DiffusionModels,
    ) -> Result<Arc<DiffusionModel>, JobFailure> {
        models.get(medium, &self.model).map_err(failure)
    }
}

/// How a generation failed, as the job's error.
pub fn failure(e: DiffusionError) -> JobFailure {
    match e {
        DiffusionError::NotFound { .. } | DiffusionError::Load(..) => {
            JobFailure::abort(ErrorCode::ModelUnavailable, e.to_string())
        }
        DiffusionError::Run(_) => JobFailure::abort(ErrorCode::GenerationFailed, e.to_string()),
        DiffusionError::Cancelled => JobFailure::abort(ErrorCode::Cancelled, e.to_string()),
    }
}

/// A step callback for part `part` of `parts` (images of a request): sets
/// the job's progress and stops when the job is cancelled.
pub fn progress(
    ctx: &JobContext,
    part: usize,
    parts: usize,
) -> impl FnMut(usize, usize) -> bool + '_ {
    move |step, steps| {
        let done = part * steps + step;
        ctx.set_progress((done * 100 / (parts * steps).max(1)) as i64);
        !ctx.is_cancelled()
    }
}
