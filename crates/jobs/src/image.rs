//! An image generation request (`POST /v1/image-generation`, also the
//! `image` job's payload).

use mediagen_core::format::{ImageFormat, Style};
use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::bounds::Bound;
use crate::catalog::{Generators, Medium};
use crate::neural::{Neural, NeuralBounds};

/// The body of `POST /v1/image-generation`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = ImageGenerationRequest)]
pub struct ImageBody {
    /// What to draw, 1–1000 characters: objects (any emoji name or keyword)
    /// with colours, sizes and counts ("two small red birds", "a dozen eggs",
    /// at most 12), relations ("under", "above", "on", "in", "in front of",
    /// "behind", "next to", "to the left of", "between … and …", "around",
    /// "near", "far from", "wearing", "in the background"), a
    /// setting (beach, forest, city, snow, desert, room, sky, mountains,
    /// meadow), a time of day (day, sunset, night) and a style word
    /// (watercolor, pixel art).
    #[schema(min_length = 1, max_length = 1000, pattern = "\\S")]
    pub prompt: String,
    /// Pixels, a multiple of 8 from 64 to 2048; default 1024.
    #[serde(default)]
    #[schema(minimum = 64, maximum = 2048, multiple_of = 8)]
    pub width: Option<u32>,
    /// Pixels, a multiple of 8 from 64 to 2048; default 1024.
    #[serde(default)]
    #[schema(minimum = 64, maximum = 2048, multiple_of = 8)]
    pub height: Option<u32>,
    /// Images to make, 1–4 (seeds `seed`, `seed + 1`, …); default 1.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 4)]
    pub n: Option<u32>,
    /// The same request and seed give the same bytes. Omitted: random, returned.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `flat` (default), `watercolor`, `pixel`; wins over style words in the prompt.
    #[serde(default)]
    #[schema(schema_with = image_styles)]
    pub style: Option<String>,
    /// Objects named here are left out.
    #[serde(default)]
    pub negative_prompt: Option<String>,
    /// `png` (default), `jpeg`, `webp` (lossless).
    #[serde(default)]
    #[schema(schema_with = image_formats)]
    pub format: Option<String>,
    /// `embedded` (default: the scene composer) or the name of a neural
    /// model under `models/image/` (Stable Diffusion / SD-Turbo ONNX;
    /// listed by `GET /v1/models`). With a neural
    /// model `style` is added to the prompt in words and `negativePrompt`
    /// guides away from what it names. A model this server lacks: 422.
    #[serde(default)]
    #[schema(min_length = 1)]
    pub model: Option<String>,
    /// Neural models only (422 otherwise): denoising steps, 1–150 (default:
    /// the model's `mediagen.json`, else 25).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 150)]
    pub steps: Option<u32>,
    /// Neural models only (422 otherwise): classifier-free guidance, 0–30;
    /// 1 or less runs without guidance (default: the model's
    /// `mediagen.json`, else 7.5).
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 30.0)]
    pub guidance_scale: Option<f32>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

/// The styles `style` takes, for the document.
fn image_styles() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["flat", "watercolor", "pixel"])
}

/// The formats `format` takes, for the document.
fn image_formats() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["png", "jpeg", "webp"])
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

    /// Images, each counted per started megapixel (1024×1024 or less is
    /// one).
    fn units(&self) -> f64 {
        let pixels = u64::from(self.width) * u64::from(self.height);
        f64::from(self.n) * pixels.div_ceil(1 << 20) as f64
    }

    fn media_seconds(&self) -> f64 {
        0.0
    }
}

/// A side of the canvas, in pixels, within its member's bounds.
fn side(name: &'static str, v: Option<u32>) -> Result<u32, ApiError> {
    let v = v.unwrap_or(1024);
    let bound = Bound::of::<ImageBody>(name);
    if bound.counts(v) {
        Ok(v)
    } else {
        Err(ApiError::invalid_parameter(
            name,
            format!(
                "must be a multiple of {} from {} to {} (got {v})",
                bound.multiple_of.unwrap_or(1.0),
                bound.min_count(),
                bound.max_count()
            ),
        ))
    }
}

impl ImageRequest {
    /// Validates a body; errors name the parameter. The embedded engine
    /// (no `model`) needs the icon set (503 otherwise) and a prompt naming
    /// something it can draw (422 `unsupported_prompt`); a neural model must
    /// be in the models directory.
    pub fn parse(body: ImageBody, catalog: &dyn Generators) -> Result<Self, ApiError> {
        let prompt = crate::prompt(&body.prompt, Bound::of::<ImageBody>("prompt").max_length())?;
        let (width, height) = (side("width", body.width)?, side("height", body.height)?);
        let n = body.n.unwrap_or(1);
        let images = Bound::of::<ImageBody>("n");
        if !images.counts(n) {
            return Err(ApiError::invalid_parameter(
                "n",
                format!("must be {} to {}", images.min_count(), images.max_count()),
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
            NeuralBounds::of::<ImageBody>(),
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
        catalog.check_image_prompt(
            &req.prompt,
            req.negative_prompt.as_deref(),
            req.style.as_deref(),
        )?;
        Ok(req)
    }
}
