//! A neural-model choice (`model`, `steps`, `guidanceScale`), shared by
//! image and sound generation, checked against the models on disk.

use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::catalog::{Generators, Medium, NeuralModel};

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
}
