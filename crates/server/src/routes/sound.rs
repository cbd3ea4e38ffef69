use axum::extract::State;
use axum::response::Response;
use axum::Json;
use mediagen_jobs::sound::{SoundBody, SoundRequest};
use serde_json::Value;

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;
use crate::submission::JobJson;

/// Generate a sound from a text prompt
///
/// The embedded engine reads the prompt into a sound plan (the sources it
/// names, each with its modifiers, and the room) and synthesizes it: no
/// model download, the same audio for the same seed. The job's `result`:
/// `{audioUrl, duration (seconds), format, sampleRate, seed, loop, layers:
/// [{concept, kind, matched, intensity, rate, pitch, distant}], room, bpm,
/// ignoredTerms, model: "embedded"}` (`ignoredTerms`: the prompt's words it
/// did not use). A prompt naming nothing it can make → 422
/// `unsupported_prompt` with `details.understood`. With a neural `model`:
/// `{audioUrl, duration, format, sampleRate, seed, loop, model, steps,
/// guidanceScale, modelSampleRate, timings}`. Price: `costs.sound` credits
/// per second, rounded up.
#[utoipa::path(post, path = "/v1/sound-generation", tag = "content", security(("bearer" = ["write"])),
    request_body = SoundBody,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming prompt, duration, format, sampleRate, model, steps, guidanceScale or negativePrompt"),
              (status = 402), (status = 422, description = "`unsupported_prompt`")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    JobJson { body, job }: JobJson<SoundBody>,
) -> ApiResult<Response> {
    let req = SoundRequest::parse(body, state.catalog.generators.as_ref())?;
    job.submit(&state, &auth, &req).await
}

/// What the sound generator understands
///
/// Every concept (`name`, `kind`: ambience, effect or music, the `keywords`
/// that name it, `defaultDuration` in seconds) and every modifier (its
/// `words` and `effect`).
#[utoipa::path(get, path = "/v1/sound-generation/vocabulary", tag = "content", security(("bearer" = ["read"])),
    responses((status = 200, description = "`{concepts: [...], modifiers: [...]}`")))]
pub async fn vocabulary(State(state): State<AppState>, _auth: Auth) -> Json<Value> {
    Json(state.catalog.generators.sound_vocabulary())
}
