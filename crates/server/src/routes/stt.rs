use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::stt::SttRequest;

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::media_input::MediaJob;
use crate::state::AppState;

/// Speech to text
///
/// `multipart/form-data` with a `file` part (any audio or video ffmpeg reads:
/// wav, mp3, m4a, ogg/opus, flac, webm, mp4, mov…) and the options as text
/// parts, or a JSON body with the `fileId` of an uploaded file and the same
/// options. Options: `language` (ISO 639-1, or `auto`/omitted to detect; the
/// detected language and its probability are returned), `task`
/// (`transcribe` or `translate` into English), `prompt` (biases the
/// vocabulary), `responseFormat` (`json` default, `text`, `srt`, `vtt`,
/// `verbose_json`), `timestampGranularities` (`segment`, `word`: words need
/// `verbose_json`), `model` (a speech-to-text name from `GET /v1/models`;
/// default `base`, whisper base on CTranslate2 int8; `ggml-base` is the same
/// model on whisper.cpp), `diarize` (`true`: who speaks when, overlapped
/// speech kept), `numSpeakers` (how many, when known; needs `diarize`) or
/// `minSpeakers`/`maxSpeakers` (bounds; need `diarize`).
///
/// The job's `result`: `{text, language, languageProbability, duration
/// (seconds), segments: [{id, start, end, text, avgLogprob, noSpeechProb,
/// speaker}], words: [{word, start, end, probability, speaker}] (when
/// asked), speakers: [{id, seconds}] (diarized), overlaps: [{start, end,
/// speakers}] (diarized: where two or more speak at once), model, task,
/// responseFormat}`, plus `subtitles` and `subtitlesUrl` for `srt`/`vtt` and
/// `transcriptUrl` (plain text) for `text`. Always the job object, also for
/// `text`/`srt`/`vtt` (the bare file is at the URL). Long files are decoded
/// as a stream and recognised in voice-activity chunks of at most 30 s:
/// `progress` advances chunk by chunk, the time limit grows with the
/// length, and requests take turns chunk by chunk on the shared engine.
/// Not media → 415; unreadable media → 422. Price: `costs.stt` credits per
/// second of audio, rounded up.
#[utoipa::path(post, path = "/v1/speech-to-text", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::stt::SpeechToTextForm = "multipart/form-data"))),
    responses((status = 200, body = crate::jobs::JobView), (status = 202, body = crate::jobs::JobView),
              (status = 400, description = "`invalid_parameter` naming language, task, responseFormat, model, diarize, numSpeakers…"),
              (status = 404, description = "No file with that `fileId`"), (status = 415, description = "Not audio or video"),
              (status = 422, description = "`unreadable_media`")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    input: MediaJob<SttRequest>,
) -> ApiResult<Response> {
    let options = SttRequest::parse(input.fields(), state.catalog.recognisers.as_ref())?;
    input
        .submit(&state, &auth, |file| options.with_file(file))
        .await
}

/// A language the recogniser hears.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RecognisedLanguage {
    /// ISO 639-1 (what `language` takes).
    code: &'static str,
    /// Its English name, lower case (as OpenAI's transcriptions report it).
    name: Option<&'static str>,
}

/// The languages speech-to-text hears.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RecognisedLanguages {
    languages: Vec<RecognisedLanguage>,
}

/// Speech-to-text languages
///
/// Every language the recogniser hears (the codes `language` takes on
/// `POST /v1/speech-to-text`), so clients can offer them by name.
#[utoipa::path(get, path = "/v1/speech-to-text/languages", tag = "voice", security(("bearer" = ["read"])),
    responses((status = 200, body = RecognisedLanguages)))]
pub async fn languages(
    State(state): State<AppState>,
    _auth: Auth,
) -> axum::Json<RecognisedLanguages> {
    let catalog = state.catalog.recognisers.as_ref();
    let languages = catalog
        .recognised_languages()
        .into_iter()
        .map(|code| RecognisedLanguage {
            code,
            name: catalog.language_name(code),
        })
        .collect();
    axum::Json(RecognisedLanguages { languages })
}
