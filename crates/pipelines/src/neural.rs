//! What image and sound generation share when a request names a neural
//! model (`model`, `steps`, `guidanceScale`): validation against the models
//! on disk, loading, progress and failures.

use mediagen_core::ErrorCode;
use std::sync::Arc;

use mediagen_core::ApiError;
use mediagen_generate::diffusion::{
    DiffusionError, DiffusionModel, DiffusionModels, Found, Generate, Medium,
};
use mediagen_worker::{JobContext, JobFailure};
use serde::{Deserialize, Serialize};

/// The name that selects the embedded engine (also the default).
pub const EMBEDDED: &str = "embedded";
pub const MAX_STEPS: u32 = 150;
pub const MAX_GUIDANCE: f32 = 30.0;

/// A validated neural-model choice (part of the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Neural {
    pub model: String,
    pub steps: Option<u32>,
    pub guidance_scale: Option<f32>,
}

impl Neural {
    /// `None` for the embedded engine, else the choice and the model as
    /// found on disk. Errors name the parameter: an unknown model lists
    /// what the models directory holds.
    pub fn parse(
        model: Option<String>,
        steps: Option<u32>,
        guidance_scale: Option<f32>,
        medium: Medium,
        models: &DiffusionModels,
    ) -> Result<Option<(Self, Found)>, ApiError> {
        let model = model.filter(|m| m != EMBEDDED);
        let Some(model) = model else {
            for (name, given) in [
                ("steps", steps.is_some()),
                ("guidanceScale", guidance_scale.is_some()),
            ] {
                if given {
                    return Err(ApiError::unprocessable(
                        name,
                        "applies to neural models only (see `model`)",
                    ));
                }
            }
            return Ok(None);
        };
        let on_disk = match models.find(medium, &model) {
            Ok(f) => f,
            Err(e) => {
                let mut names = vec![EMBEDDED.to_owned()];
                if let DiffusionError::NotFound { found, .. } = e {
                    names.extend(found);
                }
                // Which models exist is this server's, not the document's:
                // a well-formed name it lacks is 422.
                return Err(ApiError::unprocessable(
                    "model",
                    format!(
                        "must be one of: {} (neural models are folders under models/{}/, see docs/models.md)",
                        names.join(", "),
                        medium.folder()
                    ),
                ));
            }
        };
        if steps.is_some_and(|s| !(1..=MAX_STEPS).contains(&s)) {
            return Err(ApiError::invalid_parameter(
                "steps",
                format!("must be 1 to {MAX_STEPS}"),
            ));
        }
        if guidance_scale.is_some_and(|g| !(0.0..=MAX_GUIDANCE).contains(&g)) {
            return Err(ApiError::invalid_parameter(
                "guidanceScale",
                format!("must be 0 to {MAX_GUIDANCE}"),
            ));
        }
        Ok(Some((
            Self {
                model,
                steps,
                guidance_scale,
            },
            on_disk,
        )))
    }

    pub fn request<'a>(
        &self,
        prompt: &'a str,
        negative: Option<&'a str>,
        seed: u64,
    ) -> Generate<'a> {
        Generate {
            prompt,
            negative_prompt: negative,
            steps: self.steps.map(|s| s as usize),
            guidance_scale: self.guidance_scale,
            seed,
        }
    }

    /// The model, loaded on first use (blocking).
    pub fn load(
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
