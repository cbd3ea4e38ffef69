//! An image generation request (`POST /v1/image-generation`, also the
//! `image` job's payload).

use mediagen_core::format::{ImageFormat, Style};
use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, Medium};
use crate::neural::Neural;

/// Longest prompt, characters.
pub const MAX_PROMPT: usize = 1000;
/// Canvas sides, pixels.
pub const MIN_SIDE: u32 = 64;
pub const MAX_SIDE: u32 = 2048;
pub const MAX_IMAGES: u32 = 4;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageBody {
    pub prompt: String,
    #[serde(default)]
    pub width: Option<u32>,
    #[serde(default)]
    pub height: Option<u32>,
    #[serde(default)]
    pub n: Option<u32>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub style: Option<String>,
    #[serde(default)]
    pub negative_prompt: Option<String>,
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub steps: Option<u32>,
    #[serde(default)]
    pub guidance_scale: Option<f32>,
    #[serde(default)]
    pub dry_run: bool,
    /// This job's own webhook (the API checks it and takes it out; it is
    /// not part of the job's payload).
    #[serde(default)]
    pub webhook_url: Option<String>,
}

/// A validated request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageRequest {
    pub prompt: String,
    pub width: u32,
    pub height: u32,
    pub n: u32,
    pub seed: u64,
    pub style: Option<String>,
    pub negative_prompt: Option<String>,
    pub format: ImageFormat,
    /// A neural model; `None`: the embedded engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neural: Option<Neural>,
}

impl mediagen_core::JobRequest for ImageRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::Image;
}

fn side(name: &str, v: Option<u32>) -> Result<u32, ApiError> {
    let v = v.unwrap_or(1024);
    if (MIN_SIDE..=MAX_SIDE).contains(&v) && v.is_multiple_of(8) {
        Ok(v)
    } else {
        Err(ApiError::invalid_parameter(
            name,
            format!("must be a multiple of 8 from {MIN_SIDE} to {MAX_SIDE} (got {v})"),
        ))
    }
}

impl ImageRequest {
    /// Validates a body; errors name the parameter. The embedded engine
    /// (no `model`) needs the icon set (503 otherwise) and a prompt naming
    /// something it can draw (422 `unsupported_prompt`); a neural model must
    /// be in the models directory.
    pub fn parse(body: ImageBody, catalog: &dyn Catalog) -> Result<Self, ApiError> {
        let prompt = crate::prompt(&body.prompt, MAX_PROMPT)?;
        let (width, height) = (side("width", body.width)?, side("height", body.height)?);
        let n = body.n.unwrap_or(1);
        if !(1..=MAX_IMAGES).contains(&n) {
            return Err(ApiError::invalid_parameter(
                "n",
                format!("must be 1 to {MAX_IMAGES}"),
            ));
        }
        // Checked here; the embedded engine reads it again from `style`.
        if body
            .style
            .as_deref()
            .is_some_and(|s| Style::parse(s).is_none())
        {
            return Err(ApiError::invalid_parameter(
                "style",
                "must be one of flat, watercolor, pixel",
            ));
        }
        let format = match body.format.as_deref() {
            None => ImageFormat::Png,
            Some(f) => ImageFormat::parse(f).ok_or_else(|| {
                ApiError::invalid_parameter("format", "must be one of png, jpeg, webp")
            })?,
        };
        let neural = Neural::parse(
            body.model,
            body.steps,
            body.guidance_scale,
            Medium::Image,
            catalog,
        )?
        .map(|(n, _)| n);
        let req = Self {
            prompt,
            width,
            height,
            n,
            seed: body.seed.unwrap_or_else(|| rand::random::<u32>().into()),
            style: body.style,
            negative_prompt: body.negative_prompt,
            format,
            neural,
        };
        if req.neural.is_some() {
            return Ok(req);
        }
        catalog.check_image_prompt(&req)?;
        Ok(req)
    }

    /// Billable units: images, each counted per started megapixel
    /// (1024×1024 or less is one).
    pub fn units(&self) -> f64 {
        let pixels = u64::from(self.width) * u64::from(self.height);
        f64::from(self.n) * pixels.div_ceil(1 << 20) as f64
    }
}
