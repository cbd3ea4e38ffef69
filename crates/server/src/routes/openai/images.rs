//! `POST /v1/images/generations`: OpenAI's image generation on our image
//! job, answered when the job ends with the images' URLs or bytes.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use mediagen_jobs::openai::image::ImagesBody;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{run_to_end, JobSpec, JobView};
use crate::state::AppState;

/// Images, as OpenAI's API makes them
///
/// OpenAI's `POST /v1/images/generations`, validated by OpenAI's rules for
/// the model named (sizes, `n`), drawn by the embedded engine (or our
/// model named). An image job of the account (same price as
/// `POST /v1/image-generation`; `X-Job-Id` names it; `Idempotency-Key`
/// works), answered when it ends: `{created, data: [{url} or
/// {b64_json}]}`. URLs are signed and expire as job results do.
#[utoipa::path(post, path = "/v1/images/generations", tag = "content", security(("bearer" = ["write"])),
    request_body = ImagesBody,
    responses((status = 200, description = "`{created, data: [{url} | {b64_json}]}`"),
              (status = 400, description = "`invalid_parameter` naming prompt, model, n, size, response_format or output_format"),
              (status = 402), (status = 422, description = "`unsupported_prompt`"),
              (status = 503, description = "`engine_unavailable`, or the job had not ended in its time limit")))]
pub async fn generations(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(body): ApiJson<ImagesBody>,
) -> ApiResult<Response> {
    let asked = body.parse(state.catalog.generators.as_ref())?;
    let spec = JobSpec::of(&asked.request, false)?;
    let job = run_to_end(&state, &auth, opts, spec).await?;
    let (id, created) = (job.id.clone(), job.created_at / 1000);
    let mut data = Vec::new();
    if asked.b64 {
        let mut outputs: Vec<_> = job
            .outputs
            .iter()
            .filter(|o| o.field.starts_with("/images/"))
            .collect();
        outputs.sort_by_key(|o| image_index(&o.field));
        for output in outputs {
            let bytes = state.blobs.get_bytes(&output.key).await?;
            let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            data.push(json!({ "b64_json": b64 }));
        }
    } else {
        let view = JobView::new(&state, job);
        let images = view.result.as_ref().map(|r| &r["images"]);
        for image in images.and_then(Value::as_array).into_iter().flatten() {
            data.push(json!({ "url": image["imageUrl"] }));
        }
    }
    let response = Json(json!({ "created": created, "data": data })).into_response();
    Ok(crate::routes::with_ignored(
        crate::routes::with_job(response, &id),
        &asked.ignored,
    ))
}

/// The image's place in the result from its output's field
/// (`/images/2/imageUrl` → 2).
fn image_index(field: &str) -> usize {
    field
        .split('/')
        .nth(2)
        .and_then(|i| i.parse().ok())
        .unwrap_or(usize::MAX)
}
