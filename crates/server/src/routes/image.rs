use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::image::{ImageBody, ImageRequest};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;
use crate::submission::JobJson;

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
    request_body = ImageBody,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming prompt, width, height, n, style, format, model, steps or guidanceScale"),
              (status = 402), (status = 422, description = "`unsupported_prompt`"),
              (status = 503, description = "`engine_unavailable`: the icon set is not installed")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    JobJson { body, job }: JobJson<ImageBody>,
) -> ApiResult<Response> {
    let req = ImageRequest::parse(body, state.catalog.generators.as_ref())?;
    job.submit(&state, &auth, &req).await
}
