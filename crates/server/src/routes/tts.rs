use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::tts::{TtsBody, TtsRequest};

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{dry_run, submit, JobSpec};
use crate::state::AppState;
use crate::voices::cloned_voice;

/// The request body, for the OpenAPI document.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(as = TextToSpeechRequest)]
pub struct TtsBodyDoc {
    /// Not only white space; trimmed, 1–5000 characters (400 otherwise),
    /// with something to say (a letter or a digit in any script; otherwise
    /// 422, as for SSML errors).
    #[schema(min_length = 1, max_length = 5000, pattern = "\\S")]
    text: String,
    /// A voice id from `GET /v1/voices`: a catalog voice, or one of the
    /// account's cloned voices (spoken by its `baseVoiceId` and converted
    /// toward its profile; audio at 24 kHz).
    #[schema(rename = "voiceId")]
    voice_id: String,
    /// `mp3` (default, 128 kbit/s), `wav` (16-bit PCM), `ogg` (Opus, 64 kbit/s),
    /// `flac` (16-bit), `pcm` (raw s16le mono, no header), `aac` (AAC-LC
    /// in ADTS, 128 kbit/s).
    #[schema(schema_with = super::audio_format_schema)]
    format: Option<String>,
    /// Hz. mp3/wav/flac/pcm/aac: 8000, 16000, 22050, 24000, 32000, 44100, 48000;
    /// ogg: 8000, 12000, 16000, 24000, 48000. Default: the voice's native rate
    /// (or the next allowed rate above it). A rate the format does not
    /// take: 422.
    #[schema(rename = "sampleRate", schema_with = super::sample_rate_schema)]
    sample_rate: Option<u32>,
    /// 0.5–2.0, default 1.0.
    #[schema(minimum = 0.5, maximum = 2.0)]
    speed: Option<f32>,
    /// `true` adds `result.words: [{word, start, end}]` (seconds), aligned by
    /// the speech recogniser. Not for the streaming endpoint.
    timestamps: Option<bool>,
    /// ISO 639-1: the language the text is read in. A neural clone
    /// (`engine: kokoro` in its voice) speaks every language Kokoro has
    /// (en, es, fr, hi, it, pt): its own style table with the phonemes of a
    /// Kokoro voice of that language. Any other voice must speak it already
    /// (422 otherwise). Default: the voice's language.
    #[schema(rename = "languageCode", pattern = "^[A-Za-z]{2}([-_][A-Za-z0-9]+)*$")]
    language_code: Option<String>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

/// Text to speech
///
/// Synthesizes `text` with a catalog voice or a cloned voice of the
/// account. Answers the job object; when finished within the server's sync
/// wait (the usual case) with `status: "completed"` and `result: {audioUrl,
/// duration (seconds), format, sampleRate, characters, voiceId}` (and
/// `baseVoiceId` for a cloned voice). Numbers, currency, dates, times and
/// abbreviations are read out (English and Spanish rules; espeak-ng's for
/// other languages); long text is synthesized sentence by sentence. Price:
/// `costs.tts` credits per character (default 1).
#[utoipa::path(post, path = "/v1/text-to-speech", tag = "voice", security(("bearer" = ["write"])),
    request_body = TtsBodyDoc,
    responses((status = 200, body = crate::jobs::JobView, description = "Completed"),
              (status = 202, body = crate::jobs::JobView, description = "Still running: poll Location"),
              (status = 400, description = "`invalid_parameter` naming text, format, sampleRate or speed"),
              (status = 402), (status = 404, description = "`voice_not_found`")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(mut body): ApiJson<TtsBody>,
) -> ApiResult<Response> {
    let opts = opts.with_webhook(&state, body.webhook_url.take())?;
    let dry_run = body.dry_run;
    let cloned = cloned_voice(&state, &auth.account_id, &body.voice_id).await?;
    let req = TtsRequest::parse(body, state.catalog.as_ref(), cloned)?;
    let spec = JobSpec::tts(&req, dry_run)?;
    submit(&state, &auth, opts, spec).await
}

/// Text to speech, streamed
///
/// The same body as `POST /v1/text-to-speech`; answers `200` with the audio
/// itself (chunked), starting as soon as the first sentence is synthesized.
/// `X-Job-Id` names the job, which ends `completed` with an `audioUrl` of the
/// whole audio. Closing the connection early stops the job: it is charged
/// for the sentences sent in full and the rest is refunded. A worker makes
/// the audio and this process relays it; when no worker begins it within
/// `sync_wait_seconds` the job is cancelled (nothing charged): 503
/// `service_unavailable` with `Retry-After`. Streams best as `mp3`, `ogg`,
/// `pcm` or `wav` (whose header then gives no length).
#[utoipa::path(post, path = "/v1/text-to-speech/stream", tag = "voice", security(("bearer" = ["write"])),
    request_body = TtsBodyDoc,
    responses((status = 200, description = "Chunked audio in the requested format", content_type = "audio/mpeg"),
              (status = 400), (status = 402), (status = 404, description = "`voice_not_found`"),
              (status = 503, description = "`service_unavailable`: no worker began the speech in time (`Retry-After`)")))]
pub async fn stream(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(mut body): ApiJson<TtsBody>,
) -> ApiResult<Response> {
    let opts = opts.with_webhook(&state, body.webhook_url.take())?;
    let dry = body.dry_run;
    let cloned = cloned_voice(&state, &auth.account_id, &body.voice_id).await?;
    let req = TtsRequest::parse(body, state.catalog.as_ref(), cloned)?;
    if dry {
        return dry_run(&state, &auth, &JobSpec::tts(&req, true)?).await;
    }
    crate::streaming::stream_tts(state, &auth, opts, req).await
}
