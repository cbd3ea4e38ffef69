use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::image::{ImageBody, ImageRequest};

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{submit, JobSpec};
use crate::state::AppState;

/// The request body, for the OpenAPI document.
fn image_styles() -> utoipa::openapi::schema::Object {
    super::one_of_strings(&["flat", "watercolor", "pixel"])
}

fn image_formats() -> utoipa::openapi::schema::Object {
    super::one_of_strings(&["png", "jpeg", "webp"])
}

#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(as = ImageGenerationRequest)]
pub struct ImageBodyDoc {
    /// What to draw, 1–1000 characters: objects (any emoji name or keyword)
    /// with colours, sizes and counts ("two small red birds", "a dozen eggs",
    /// at most 12), relations ("under", "above", "on", "in", "in front of",
    /// "behind", "next to", "to the left of", "between … and …", "around",
    /// "near", "far from", "wearing", "in the background", docs/image.md), a
    /// setting (beach, forest, city, snow, desert, room, sky, mountains,
    /// meadow), a time of day (day, sunset, night) and a style word
    /// (watercolor, pixel art).
    #[schema(min_length = 1, max_length = 1000, pattern = "\\S")]
    prompt: String,
    /// Pixels, a multiple of 8 from 64 to 2048; default 1024.
    #[schema(minimum = 64, maximum = 2048, multiple_of = 8)]
    width: Option<u32>,
    /// Pixels, a multiple of 8 from 64 to 2048; default 1024.
    #[schema(minimum = 64, maximum = 2048, multiple_of = 8)]
    height: Option<u32>,
    /// Images to make, 1–4 (seeds `seed`, `seed + 1`, …); default 1.
    #[schema(minimum = 1, maximum = 4)]
    n: Option<u32>,
    /// The same request and seed give the same bytes. Omitted: random, returned.
    seed: Option<u64>,
    /// `flat` (default), `watercolor`, `pixel`; wins over style words in the prompt.
    #[schema(schema_with = image_styles)]
    style: Option<String>,
    /// Objects named here are left out.
    #[schema(rename = "negativePrompt")]
    negative_prompt: Option<String>,
    /// `png` (default), `jpeg`, `webp` (lossless).
    #[schema(schema_with = image_formats)]
    format: Option<String>,
    /// `embedded` (default: the scene composer) or the name of a neural
    /// model under `models/image/` (Stable Diffusion / SD-Turbo ONNX;
    /// listed by `GET /v1/models`, layout in docs/models.md). With a neural
    /// model `style` is added to the prompt in words and `negativePrompt`
    /// guides away from what it names. A model this server lacks: 422.
    #[schema(min_length = 1)]
    model: Option<String>,
    /// Neural models only (422 otherwise): denoising steps, 1–150 (default:
    /// the model's `mediagen.json`, else 25).
    #[schema(minimum = 1, maximum = 150)]
    steps: Option<u32>,
    /// Neural models only (422 otherwise): classifier-free guidance, 0–30;
    /// 1 or less runs without guidance (default: the model's
    /// `mediagen.json`, else 7.5).
    #[schema(rename = "guidanceScale", minimum = 0.0, maximum = 30.0)]
    guidance_scale: Option<f32>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

/// Generate images from a text description
///
/// The embedded engine composes the scene the prompt describes from vector
/// icons (Twemoji, CC-BY 4.0) over a painted setting, places objects by
/// their relations and applies the style; it reports what it drew. The
/// job's `result`: `{imageUrl (the first), images: [{imageUrl, width,
/// height, seed, objects: [{object, emoji, icon, bbox: {x, y, width,
/// height}, color, relation}] (back to front), relations: [{subject,
/// relation, objects, met, reason?}], groundLine}], format, contentType,
/// setting, timeOfDay, style, ignoredTerms, adjustments: [{object,
/// reason}], attribution, model: "embedded"}`: every relation the prompt
/// states is reported with whether the picture honours it. A prompt naming
/// nothing drawable → 422 `unsupported_prompt`. With a neural `model`:
/// `{imageUrl, images: [{imageUrl, width, height, seed, timings:
/// {textEncoder, denoise, steps, evaluationsPerStep, perStep, decode}
/// (ms)}], format, contentType, model, steps, guidanceScale}`; a model that
/// cannot load fails the job with `model_unavailable` (refunded). Price:
/// `costs.image` credits per image per started megapixel (1024×1024 or
/// less is one, 2048×2048 four).
#[utoipa::path(post, path = "/v1/image-generation", tag = "content", security(("bearer" = ["write"])),
    request_body = ImageBodyDoc,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming prompt, width, height, n, style, format, model, steps or guidanceScale"),
              (status = 402), (status = 422, description = "`unsupported_prompt`"),
              (status = 503, description = "`engine_unavailable`: the icon set is not installed")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(mut body): ApiJson<ImageBody>,
) -> ApiResult<Response> {
    let opts = opts.with_webhook(&state, body.webhook_url.take())?;
    let dry_run = body.dry_run;
    let req = ImageRequest::parse(body, state.catalog.as_ref())?;
    let spec = JobSpec::image(&req, dry_run)?;
    submit(&state, &auth, opts, spec).await
}
