//! ElevenLabs' text to speech (`/text-to-speech/{voice_id}`, with
//! `/stream` and `/with-timestamps`), speech to text and sound effects,
//! on our jobs.

use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use mediagen_jobs::elevenlabs::timing::{alignment, timed_words, transcript_words};
use mediagen_jobs::elevenlabs::{
    elevenlabs_names, Granularity, SoundEffectBody, SpeechBody, Transcription,
};
use mediagen_jobs::sound::SoundRequest;
use mediagen_jobs::stt::SttRequest;
use mediagen_jobs::tts::TtsRequest;
use mediagen_jobs::MediaRequest;
use serde_json::json;

use super::FormatQuery;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery, Auth, JobOptions};
use crate::jobs::{output_bytes, run_to_end, JobSpec};
use crate::media_input::media_input;
use crate::routes::{with_ignored, with_job};
use crate::state::AppState;
use crate::voices::cloned_voice;

/// Our text-to-speech request for ElevenLabs' `voice_id` and body.
async fn tts_request(
    state: &AppState,
    auth: &Auth,
    voice_id: &str,
    query: &FormatQuery,
    body: SpeechBody,
    timestamps: bool,
) -> ApiResult<(TtsRequest, Vec<String>)> {
    let catalog = &state.catalog;
    let (body, ignored) = body
        .parse(
            voice_id,
            query.output_format.as_deref(),
            timestamps,
            catalog,
        )
        .map_err(elevenlabs_names)?;
    let cloned = cloned_voice(state, &auth.account_id, &body.voice_id).await?;
    let req = TtsRequest::parse(body, catalog.voices.as_ref(), cloned).map_err(elevenlabs_names)?;
    Ok((req, ignored))
}

/// `POST /text-to-speech/{voice_id}` and `…/stream`: the audio, sent as it
/// is made (our streamed text-to-speech job).
pub async fn speech(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    Path(voice_id): Path<String>,
    ApiQuery(query): ApiQuery<FormatQuery>,
    ApiJson(body): ApiJson<SpeechBody>,
) -> ApiResult<Response> {
    let (req, ignored) = tts_request(&state, &auth, &voice_id, &query, body, false).await?;
    let response = crate::streaming::stream_tts(state, &auth, opts, req).await?;
    Ok(with_ignored(response, &ignored))
}

/// `POST /text-to-speech/{voice_id}/with-timestamps` (and its `/stream`
/// form, answered as one line): the audio in base64 with the time of every
/// character, from our word timestamps.
pub async fn with_timestamps(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    Path(voice_id): Path<String>,
    ApiQuery(query): ApiQuery<FormatQuery>,
    ApiJson(body): ApiJson<SpeechBody>,
) -> ApiResult<Response> {
    let (req, ignored) = tts_request(&state, &auth, &voice_id, &query, body, true).await?;
    let text = req.text.clone();
    let spec = JobSpec::of(&req, false)?;
    let job = run_to_end(&state, &auth, opts, spec).await?;
    let (audio, _) = output_bytes(&state, &job, "/audioUrl").await?;
    let result = job.result.clone().unwrap_or_default();
    let duration = result["duration"].as_f64().unwrap_or(0.0);
    let aligned = alignment(&text, &timed_words(&result["words"]), duration);
    let body = json!({
        "audio_base64": base64::engine::general_purpose::STANDARD.encode(&audio),
        "alignment": aligned,
        "normalized_alignment": aligned,
    });
    let response = with_job(Json(body).into_response(), &job.id);
    Ok(with_ignored(response, &ignored))
}

/// `POST /speech-to-text`: `{language_code, language_probability, text,
/// words}` when the job ends.
pub async fn transcribe(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    req: Request,
) -> ApiResult<Response> {
    let input = media_input(&state, &auth, req, &SttRequest::LIMITS).await?;
    let asked = Transcription::parse(&input.fields, state.catalog.recognisers.as_ref())?;
    let options = asked.options.clone();
    let job = input
        .run_to_end(&state, &auth, opts, |file| options.with_file(file))
        .await?;
    let r = job.result.clone().unwrap_or_default();
    let words = match asked.granularity {
        Granularity::None => json!([]),
        g => transcript_words(&r["words"], g == Granularity::Character),
    };
    let body = json!({
        "language_code": r["language"],
        "language_probability": r["languageProbability"],
        "text": r["text"],
        "words": words,
        "transcription_id": job.id,
    });
    let response = with_job(Json(body).into_response(), &job.id);
    Ok(with_ignored(response, &asked.ignored))
}

/// `POST /sound-generation`: the sound's audio when the job ends.
pub async fn sound(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiQuery(query): ApiQuery<FormatQuery>,
    ApiJson(body): ApiJson<SoundEffectBody>,
) -> ApiResult<Response> {
    let catalog = &state.catalog;
    let (body, ignored) = body
        .parse(query.output_format.as_deref(), catalog.models.as_ref())
        .map_err(elevenlabs_names)?;
    let req = SoundRequest::parse(body, catalog.generators.as_ref()).map_err(elevenlabs_names)?;
    let spec = JobSpec::of(&req, false)?;
    let job = run_to_end(&state, &auth, opts, spec).await?;
    let (audio, content_type) = output_bytes(&state, &job, "/audioUrl").await?;
    let response = ([(header::CONTENT_TYPE, content_type)], audio).into_response();
    Ok(with_ignored(with_job(response, &job.id), &ignored))
}
