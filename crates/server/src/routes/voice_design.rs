use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::voice_design::{DesignBody, DesignRequest};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;
use crate::submission::JobJson;

/// Design a voice from a description
///
/// Three voices made from what `description` says (gender, age, accent
/// and language, pitch, pace, timbre: docs/voice.md, Designed voices),
/// each a different blend of the stock Kokoro voices whose measured
/// profiles fit, spoken at pitch, formant and pace factors, and each heard
/// saying `text`. The job's `result`: `{description, text, seed,
/// attributes: {gender, age, language, pitch, pace, brightness, rough},
/// understood, ignoredTerms, previews: [{designId, audioUrl, duration,
/// baseVoiceId, gender, language, pitch, formant, pace, blend: [{voiceId,
/// weight}], profile}]}`. Keep one with `POST /v1/voices {designId, name}`
/// (while the job is kept). A description naming nothing the designer
/// reads → 422 `unsupported_prompt` with `details.understood`; `text` is
/// plain text (SSML: 400). Price: `costs."voice.design"` credits per
/// spoken character of `text`, three times (one preview each).
#[utoipa::path(post, path = "/v1/voices/design", tag = "voice", security(("bearer" = ["write"])),
    request_body = DesignBody,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming description, text or seed"),
              (status = 402), (status = 422, description = "`unsupported_prompt`, or no voice of the language is installed")))]
pub async fn design(
    State(state): State<AppState>,
    auth: Auth,
    JobJson { body, job }: JobJson<DesignBody>,
) -> ApiResult<Response> {
    let req = DesignRequest::parse(body, state.catalog.voices.as_ref())?;
    job.submit(&state, &auth, &req).await
}
