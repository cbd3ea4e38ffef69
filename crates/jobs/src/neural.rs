//! A neural-model choice (`model`, `steps`, `guidanceScale`), shared by
//! image and sound generation, checked against the models on disk.

use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::bounds::Bound;
use crate::catalog::{Generators, Medium, NeuralModel};

/// The name that selects the embedded engine (also the default).
pub const EMBEDDED: &str = "embedded";

/// The bounds of `steps` and `guidanceScale` in the schema of the body
/// they came in.
#[derive(Debug, Clone, Copy)]
pub struct NeuralBounds {
    steps: Bound,
    guidance_scale: Bound,
}

impl NeuralBounds {
    pub fn of<T: utoipa::ToSchema + 'static>() -> Self {
        Self {
            steps: Bound::of::<T>("steps"),
            guidance_scale: Bound::of::<T>("guidanceScale"),
        }
    }
}

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
        bounds: NeuralBounds,
        medium: Medium,
        catalog: &dyn Generators,
    ) -> Result<Option<(Self, NeuralModel)>, ApiError> {
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
        let mut found = catalog.neural_models(medium);
        let on_disk = match found.iter().position(|f| f.name == model) {
            Some(i) => found.swap_remove(i),
            None => {
                let mut names = vec![EMBEDDED.to_owned()];
                names.extend(found.into_iter().map(|f| f.name));
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
        let b = bounds.steps;
        if steps.is_some_and(|s| !b.counts(s)) {
            return Err(ApiError::invalid_parameter(
                "steps",
                format!("must be {} to {}", b.min_count(), b.max_count()),
            ));
        }
        let b = bounds.guidance_scale;
        if guidance_scale.is_some_and(|g| !(b.minimum()..=b.maximum()).contains(&f64::from(g))) {
            return Err(ApiError::invalid_parameter(
                "guidanceScale",
                format!("must be {} to {}", b.minimum(), b.maximum()),
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
}
