//! `POST /v1/audio/speech`: OpenAI's speech on our text-to-speech job.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use base64::Engine;
use futures::StreamExt;
use mediagen_core::format::AudioFormat;
use mediagen_jobs::openai::openai_names;
use mediagen_jobs::openai::speech::{SpeechBody, NAMES};
use mediagen_jobs::tts::TtsRequest;
use serde_json::json;

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::state::AppState;
use crate::voices::cloned_voice;

/// Speech, as OpenAI's API makes it
///
/// OpenAI's `POST /v1/audio/speech`: answers `200` with the audio itself,
/// sent as it is made (as `POST /v1/text-to-speech/stream`, whose job,
/// price and `X-Job-Id` it shares), or with `stream_format: "sse"` as
/// server-sent events. FLAC is answered whole, once made, so that its
/// header carries its length (players show a duration and seek). Errors carry OpenAI's `type` and `param` beside our
/// `code`, naming OpenAI's parameters.
#[utoipa::path(post, path = "/v1/audio/speech", tag = "voice", security(("bearer" = ["write"])),
    request_body = SpeechBody,
    responses((status = 200, description = "The audio, chunked", content_type = "audio/mpeg"),
              (status = 400, description = "`invalid_parameter` naming model, input, voice, response_format, speed or stream_format"),
              (status = 402), (status = 404, description = "`voice_not_found`"),
              (status = 422, description = "`unprocessable_entity`: nothing to say, or an engine not installed"),
              (status = 503, description = "`service_unavailable`: no worker began the speech in time (`Retry-After`)")))]
pub async fn speech(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(body): ApiJson<SpeechBody>,
) -> ApiResult<Response> {
    let speech = body.parse(&state.catalog)?;
    let cloned = cloned_voice(&state, &auth.account_id, &speech.body.voice_id).await?;
    let req = TtsRequest::parse(speech.body, state.catalog.voices.as_ref(), cloned)
        .map_err(|e| openai_names(e, &NAMES))?;
    let characters = req.characters();
    if req.format == AudioFormat::Flac && !speech.sse {
        // Whole, so that its header says how long it is.
        let response = crate::streaming::whole_tts(state, &auth, opts, req).await?;
        return Ok(crate::routes::with_ignored(response, &speech.ignored));
    }
    let mut response = crate::streaming::stream_tts(state, &auth, opts, req).await?;
    if speech.sse {
        response = as_events(response, characters);
    }
    Ok(crate::routes::with_ignored(response, &speech.ignored))
}

/// A streamed answer's audio as OpenAI's server-sent events: a
/// `speech.audio.delta` event (base64) for each piece as it comes, then
/// `speech.audio.done` with the usage (characters, our billing unit, as
/// input tokens). Any other answer (a retried request's job) as it is.
fn as_events(response: Response, characters: usize) -> Response {
    let audio = response.status() == StatusCode::OK
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"audio/"));
    if !audio {
        return response;
    }
    let event = |data: serde_json::Value| Bytes::from(format!("data: {data}\n\n"));
    let (mut parts, body) = response.into_parts();
    let deltas = body.into_data_stream().map(move |piece| {
        piece.map(|bytes| {
            let audio = base64::engine::general_purpose::STANDARD.encode(&bytes);
            event(json!({"type": "speech.audio.delta", "audio": audio}))
        })
    });
    let usage = json!({
        "input_tokens": characters,
        "output_tokens": 0,
        "total_tokens": characters,
    });
    let done = futures::stream::once(async move {
        Ok(event(json!({"type": "speech.audio.done", "usage": usage})))
    });
    let headers = &mut parts.headers;
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Response::from_parts(parts, Body::from_stream(deltas.chain(done)))
}
