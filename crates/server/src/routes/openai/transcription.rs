//! `POST /v1/audio/transcriptions` and `POST /v1/audio/translations`:
//! OpenAI's transcription forms on our speech-to-text job, answered when
//! the job ends, in the `response_format` asked for.

use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mediagen_jobs::openai::transcription::{Rendered, Task, Transcription};
use mediagen_jobs::stt::SttRequest;
use mediagen_jobs::MediaRequest;

use crate::error::ApiResult;
use crate::extract::{Auth, JobOptions};
use crate::media_input::media_input;
use crate::middleware::Principal;
use crate::state::AppState;

/// Transcription, as OpenAI's API makes it
///
/// OpenAI's `POST /v1/audio/transcriptions`: a `multipart/form-data` form
/// with the `file` and OpenAI's parameters, validated by OpenAI's rules. A
/// speech-to-text job of the account (same price: `costs.stt` credits per
/// second; `X-Job-Id` names it; `Idempotency-Key` works), answered when it
/// ends: `json` `{text, usage}`, `verbose_json` `{task, language (its
/// English name), duration, text, segments, words, usage}`, or the text,
/// SubRip or WebVTT as `text/plain`. Errors carry OpenAI's `type` and
/// `param` beside our `code`.
#[utoipa::path(post, path = "/v1/audio/transcriptions", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::openai::transcription::TranscriptionForm = "multipart/form-data"))),
    responses((status = 200, description = "The transcript: JSON, or text/plain for text, srt and vtt"),
              (status = 400, description = "`invalid_parameter` naming file, model, language, response_format, timestamp_granularities[], temperature or stream"),
              (status = 402), (status = 415, description = "Not audio or video"),
              (status = 422, description = "`unreadable_media`"),
              (status = 503, description = "`service_unavailable`: the job had not ended in its time limit (it goes on)")))]
pub async fn transcriptions(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    req: Request,
) -> ApiResult<Response> {
    recognise(&state, &auth, opts, req, Task::Transcribe).await
}

/// Translation into English, as OpenAI's API makes it
///
/// OpenAI's `POST /v1/audio/translations`: as transcriptions, with
/// `model`, `prompt`, `response_format` and `temperature`; the text is
/// English whatever was spoken.
#[utoipa::path(post, path = "/v1/audio/translations", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::openai::transcription::TranslationForm = "multipart/form-data"))),
    responses((status = 200, description = "The English transcript: JSON, or text/plain for text, srt and vtt"),
              (status = 400, description = "`invalid_parameter` naming file, model, response_format or temperature"),
              (status = 402), (status = 415, description = "Not audio or video"),
              (status = 422, description = "`unreadable_media`"),
              (status = 503, description = "`service_unavailable`: the job had not ended in its time limit (it goes on)")))]
pub async fn translations(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    req: Request,
) -> ApiResult<Response> {
    recognise(&state, &auth, opts, req, Task::Translate).await
}

async fn recognise(
    state: &AppState,
    who: &Principal,
    opts: JobOptions,
    req: Request,
    task: Task,
) -> ApiResult<Response> {
    let input = media_input(state, who, req, &SttRequest::LIMITS).await?;
    let asked = Transcription::parse(task, &input.fields, state.catalog.recognisers.as_ref())?;
    let options = asked.options.clone();
    let job = input
        .run_to_end(state, who, opts, |file| options.with_file(file))
        .await?;
    let result = job.result.unwrap_or_default();
    let response = match asked.render(&result, state.catalog.recognisers.as_ref()) {
        Rendered::Json(body) => Json(body).into_response(),
        Rendered::Text(text) => {
            ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
        }
    };
    Ok(crate::routes::with_ignored(
        crate::routes::with_job(response, &job.id),
        &asked.ignored,
    ))
}
