//! OpenAI's audio API on our engines, for clients written for it
//! (`OpenAI(base_url="http://host:8080/v1", api_key=KEY)`; docs/compatibility.md).

use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::Response;
use mediagen_jobs::openai::{openai_names, SpeechBody};
use mediagen_jobs::tts::TtsRequest;

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions, Write};
use crate::state::AppState;
use crate::voices::cloned_voice;

/// The request body, for the OpenAPI document.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(as = OpenAiSpeechRequest)]
pub struct SpeechBodyDoc {
    /// `tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`, or one of our text-to-speech
    /// engines (`kokoro`, `piper`, `espeak`; 422 when not installed). The
    /// voice decides who speaks; the model picks nothing more.
    #[schema(schema_with = model_schema)]
    model: String,
    /// Not only white space; trimmed, at most 4096 characters, with
    /// something to say (as `text` of `POST /v1/text-to-speech`: 422
    /// otherwise).
    #[schema(min_length = 1, max_length = 4096, pattern = "\\S")]
    input: String,
    /// An OpenAI voice (`alloy`, `ash`, `ballad`, `coral`, `echo`, `fable`,
    /// `nova`, `onyx`, `sage`, `shimmer`, `verse`, `marin`, `cedar`: each
    /// a catalog voice of matching character), or any voice id of
    /// `GET /v1/voices`, the account's cloned voices included (404
    /// `voice_not_found` otherwise).
    #[schema(min_length = 1)]
    voice: String,
    /// `mp3` (default), `opus` (Ogg), `flac`, `wav`, `pcm` (24 kHz 16-bit
    /// little-endian mono). `aac` is not supported (400).
    #[schema(schema_with = response_format_schema)]
    response_format: Option<String>,
    /// 0.5–2.0 (OpenAI takes 0.25–4.0; outside ours: 400), default 1.0.
    #[schema(minimum = 0.5, maximum = 2.0)]
    speed: Option<f32>,
    /// Accepted and ignored: the response then carries
    /// `X-Mediagen-Ignored: instructions`.
    instructions: Option<String>,
    /// `audio` (default). `sse` is not supported (400).
    #[schema(schema_with = stream_format_schema)]
    stream_format: Option<String>,
}

fn model_schema() -> utoipa::openapi::schema::Object {
    let models: Vec<&str> = mediagen_jobs::openai::speech_models().collect();
    super::one_of_strings(&models)
}

fn response_format_schema() -> utoipa::openapi::schema::Object {
    let formats: Vec<&str> = mediagen_jobs::openai::FORMATS
        .iter()
        .map(|(theirs, _)| *theirs)
        .collect();
    super::one_of_strings(&formats)
}

fn stream_format_schema() -> utoipa::openapi::schema::Object {
    super::one_of_strings(&["audio"])
}

/// Speech, as OpenAI's API makes it
///
/// OpenAI's `POST /v1/audio/speech`: answers `200` with the audio itself,
/// sent as it is made (as `POST /v1/text-to-speech/stream`, whose job,
/// price and `X-Job-Id` it shares). Errors carry OpenAI's `type` and
/// `param` beside our `code`, naming OpenAI's parameters.
#[utoipa::path(post, path = "/v1/audio/speech", tag = "voice", security(("bearer" = ["write"])),
    request_body = SpeechBodyDoc,
    responses((status = 200, description = "The audio, chunked", content_type = "audio/mpeg"),
              (status = 400, description = "`invalid_parameter` naming model, input, voice, response_format, speed or stream_format"),
              (status = 402), (status = 404, description = "`voice_not_found`"),
              (status = 422, description = "`unprocessable_entity`: nothing to say, or an engine not installed"),
              (status = 503, description = "`service_unavailable`: no worker began the speech in time (`Retry-After`)")))]
pub async fn speech(
    State(state): State<AppState>,
    auth: Auth<Write>,
    opts: JobOptions,
    ApiJson(body): ApiJson<SpeechBody>,
) -> ApiResult<Response> {
    let speech = body.parse(state.catalog.as_ref())?;
    let cloned = cloned_voice(&state, &auth.account_id, &speech.body.voice_id).await?;
    let req =
        TtsRequest::parse(speech.body, state.catalog.as_ref(), cloned).map_err(openai_names)?;
    let mut response = crate::streaming::stream_tts(state, &auth, opts, req).await?;
    if !speech.ignored.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&speech.ignored.join(", ")) {
            response.headers_mut().insert("x-mediagen-ignored", v);
        }
    }
    Ok(response)
}
