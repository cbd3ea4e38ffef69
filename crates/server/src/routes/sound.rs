use axum::extract::State;
use axum::response::Response;
use axum::Json;
use mediagen_jobs::sound::{SoundBody, SoundRequest};
use serde_json::Value;

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{submit, JobSpec};
use crate::state::AppState;

/// The request body, for the OpenAPI document.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(as = SoundGenerationRequest)]
pub struct SoundBodyDoc {
    /// What to hear, 1–1000 characters: sources ("rain", "footsteps",
    /// "door knock", "piano melody"), modifiers ("distant", "heavy", "fast",
    /// "deep") and a tempo ("120 bpm"). See `GET /v1/sound-generation/vocabulary`.
    #[schema(min_length = 1, max_length = 1000, pattern = "\\S")]
    prompt: String,
    /// Seconds, 0.5–30. Omitted: chosen from the prompt (a beep 0.5 s, rain 8 s,
    /// music 12 s).
    #[schema(minimum = 0.5, maximum = 30.0)]
    duration: Option<f64>,
    /// `true`: the end flows into the start (a seamless loop).
    #[schema(rename = "loop")]
    looped: Option<bool>,
    /// The same prompt, seed and options give the same audio. Omitted: a random
    /// seed, returned in the result.
    seed: Option<u64>,
    /// `mp3` (default), `wav`, `ogg` (Opus), `flac`, `pcm` (s16le mono),
    /// `aac` (ADTS).
    #[schema(schema_with = super::audio_format_schema)]
    format: Option<String>,
    /// Hz; default 44100 (48000 for ogg); with a neural model, its own rate
    /// (or the format's nearest above it).
    #[schema(rename = "sampleRate", schema_with = super::sample_rate_schema)]
    sample_rate: Option<u32>,
    /// `embedded` (default) or the name of a neural text-to-audio model
    /// under `models/sound/` (AudioLDM-shaped ONNX; listed by `GET
    /// /v1/models`, layout in docs/models.md). A neural model's default
    /// duration is 10 s. A model this server lacks: 422.
    #[schema(min_length = 1)]
    model: Option<String>,
    /// Neural models only (422 otherwise): denoising steps, 1–150.
    #[schema(minimum = 1, maximum = 150)]
    steps: Option<u32>,
    /// Neural models only (422 otherwise): classifier-free guidance, 0–30.
    #[schema(rename = "guidanceScale", minimum = 0.0, maximum = 30.0)]
    guidance_scale: Option<f32>,
    /// Neural models only (422 otherwise): what to guide away from.
    #[schema(rename = "negativePrompt")]
    negative_prompt: Option<String>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

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
    request_body = SoundBodyDoc,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming prompt, duration, format, sampleRate, model, steps, guidanceScale or negativePrompt"),
              (status = 402), (status = 422, description = "`unsupported_prompt`")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(mut body): ApiJson<SoundBody>,
) -> ApiResult<Response> {
    let opts = opts.with_webhook(&state, body.webhook_url.take())?;
    let dry_run = body.dry_run;
    let req = SoundRequest::parse(body, state.catalog.as_ref())?;
    let spec = JobSpec::sound(&req, dry_run)?;
    submit(&state, &auth, opts, spec).await
}

/// What the sound generator understands
///
/// Every concept (`name`, `kind`: ambience, effect or music, the `keywords`
/// that name it, `defaultDuration` in seconds) and every modifier (its
/// `words` and `effect`).
#[utoipa::path(get, path = "/v1/sound-generation/vocabulary", tag = "content", security(("bearer" = ["read"])),
    responses((status = 200, description = "`{concepts: [...], modifiers: [...]}`")))]
pub async fn vocabulary(State(state): State<AppState>, _auth: Auth) -> Json<Value> {
    Json(state.catalog.sound_vocabulary())
}
