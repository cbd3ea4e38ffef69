use axum::extract::State;
use axum::response::Response;
use axum::Json;
use mediagen_core::job::JobStatus;
use mediagen_core::JobId;
use mediagen_core::JobKind;
use mediagen_core::{ApiError, ErrorCode};
use mediagen_jobs::dub::{DubEdit, DubOptions, LineEdit, Pair};
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;
use crate::extract::{Auth, PathId};
use crate::media_input::MediaJob;
use crate::state::AppState;
use crate::submission::JobJson;
use crate::voices::cloned_voice;
use mediagen_jobs::dub::DubRequest;

/// Dub a file into another language
///
/// `multipart/form-data` with a `file` part (speech in any audio or video
/// container ffmpeg reads) and the options as text parts, or a JSON body
/// with the `fileId` of an uploaded file. Always asynchronous: answers
/// `202` with the job; poll `GET /v1/jobs/{id}`. Its `progress` moves
/// through the stages: transcribe (to 30), translate (40), the speakers'
/// voices in `clone` mode (50), synthesize and fit each line (85), mix
/// (90), mux and subtitles (100).
///
/// Options: `targetLanguage` (required, ISO 639-1), `sourceLanguage`
/// (omitted or `auto`: detected), `voiceId` (a catalog voice speaking the
/// target language, or a cloned voice of the account: a neural clone
/// speaks the target language itself where Kokoro speaks it; otherwise the
/// closest voice of the target language converted toward it) or
/// `voiceMode` (`auto`, the default: each speaker of the original, told
/// apart by diarization, gets the target-language catalog voice closest to
/// them, a different one for each where the language has enough; `clone`:
/// each speaker who says at least 8 s gets a neural clone of their own
/// voice, searched from their lines (up to 60 s of search each, 120 s for
/// the dub) and spoken in the target language, where Kokoro speaks both
/// languages; any other speaker gets the closest voice converted toward
/// their voice),
/// `keepBackground` (default `true`: the original stays under the dub with
/// its voice band taken out where lines are spoken; `false`: the dubbed
/// part has the new speech only), `startTime`/`endTime` (seconds: only the
/// lines in that part are dubbed, the rest of the file is kept as it was),
/// `maxSpeedup` (1.0–2.0, default 1.3: how much faster than natural a line
/// may be spoken to fit its slot, after borrowing the silence that follows
/// it), `format` and `sampleRate` for audio output (mp3 at 24 kHz by
/// default). An unsupported pair → 422 listing the supported sources and
/// targets (`GET /v1/dubbing/languages` lists the pairs).
///
/// The job's `result`: `{audioUrl or videoUrl (the picture copied, a new
/// sound track), duration (seconds), sourceLanguage, targetLanguage,
/// voiceId (the voice that spoke, the first speaker's), speakers: [{id, clone,
/// voiceId, seconds}] (when the original had several), transcriptUrl (srt
/// of the original), translatedSubtitlesUrl (srt), translatedVttUrl
/// (WebVTT), segments: [{speaker, start, end, sourceText, translatedText,
/// untranslated (words the translator did not know, left in the source
/// language and said as it says them; absent when none), spokenStart,
/// spokenEnd, speedup, overrun}], timings (seconds per stage:
/// transcribe, translate, voice (choosing and measuring it), synthesize,
/// mix, mux)}`, and `clone` (`neural`, `world` or `null`: how the first
/// speaker's voice, and each of `speakers`, was made like the original's).
/// Overlapping speech goes to one speaker. Price: `costs.dubbing` credits per second
/// of the dubbed part, rounded up; `voiceMode: clone` is held for 120 s
/// more (the speakers' voice searches) and settles on the seconds the
/// searches took; refunded if the job fails.
#[utoipa::path(post, path = "/v1/dubbing", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::dub::DubbingForm = "multipart/form-data"))),
    responses((status = 202, body = crate::jobs::JobView),
              (status = 400), (status = 404, description = "`voice_not_found` or no such file"),
              (status = 415), (status = 422, description = "unsupported language pair, or a part outside the file")))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    mut input: MediaJob<DubRequest>,
) -> ApiResult<Response> {
    let duration = input.input.file.duration.unwrap_or(0.0);
    let dubbing = state.catalog.translation.dubbing();
    let options = DubOptions::parse(input.fields(), dubbing, duration)?;
    let cloned = match &options.voice_id {
        Some(id) => cloned_voice(&state, &auth.account_id, id).await?,
        None => None,
    };
    if cloned.is_none() {
        options.check_catalog_voice(state.catalog.voices.as_ref())?;
    }
    input.job.opts.respond_async = true;
    input
        .submit(&state, &auth, |file| options.with(file, cloned))
        .await
}

/// The language pairs dubbing supports.
#[derive(Serialize, utoipa::ToSchema)]
pub struct DubbingLanguages {
    /// `{source, target, translator}` (`apertium`: text translation, maybe
    /// through English or Spanish; `whisper`: the recognizer's translation
    /// into English, from the audio).
    #[schema(value_type = Vec<Object>)]
    pairs: Vec<Pair>,
    sources: Vec<String>,
    targets: Vec<String>,
}

/// Dubbing language pairs
///
/// Every pair that works end to end here (recognizer × translator × voice),
/// so clients need not guess.
#[utoipa::path(get, path = "/v1/dubbing/languages", tag = "voice", security(("bearer" = ["read"])),
    responses((status = 200, body = DubbingLanguages)))]
pub async fn languages(State(state): State<AppState>, _auth: Auth) -> Json<DubbingLanguages> {
    let pairs = state.catalog.translation.dubbing().pairs.clone();
    let mut sources: Vec<String> = pairs.iter().map(|p| p.source.clone()).collect();
    sources.sort();
    sources.dedup();
    let targets = state
        .catalog
        .translation
        .dubbing()
        .targets()
        .into_iter()
        .map(str::to_owned)
        .collect();
    Json(DubbingLanguages {
        pairs,
        sources,
        targets,
    })
}

/// One line of a dub to say differently, for the OpenAPI document.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct SegmentEdit {
    /// The line's index in the dub's `result.segments`.
    #[schema(minimum = 0)]
    index: u32,
    /// Its new text: 1–1000 characters (trimmed); kept when absent.
    #[schema(
        rename = "translatedText",
        min_length = 1,
        max_length = 1000,
        pattern = "\\S"
    )]
    translated_text: Option<String>,
    /// One of the dub's `result.speakers` ids, to say the line in that
    /// speaker's voice; kept when absent. Give this, `translatedText` or
    /// both (400 with neither; 422 for a speaker the dub lacks).
    #[schema(pattern = "^speaker_[0-9]+$")]
    speaker: Option<String>,
}

/// The body of a line edit.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentsBody {
    /// `[{index, translatedText, speaker}]`: the lines (by their index in
    /// `result.segments`) to say differently, each once: new words, another
    /// of the dub's speakers, or both. A line the dub does not have, or one
    /// named twice: 422.
    #[schema(value_type = Vec<SegmentEdit>, min_items = 1)]
    segments: Vec<LineEdit>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

/// Edit lines of a dub
///
/// Changes the `translatedText` or the `speaker` of some lines of a
/// completed dub (its
/// `jobId`: a `dubbing` job or an earlier edit) and makes a new dub in
/// which only those lines are spoken again (fitted into their slots as
/// before) and mixed over the stored bed; every other line keeps the audio
/// it had. Asynchronous: `202` with a new job (kind `dubbing.edit`) whose
/// result has the shape of a dub's, plus `sourceJobId` and
/// `editedSegments`; it can be edited again. Another account's job → 404;
/// a dub not completed → 409. Price: `costs."dubbing.edit"` credits per
/// second of the edited lines' slots, rounded up.
#[utoipa::path(post, path = "/v1/dubbing/{jobId}/segments", tag = "voice", security(("bearer" = ["write"])),
    params(("jobId" = String, Path)), request_body = SegmentsBody,
    responses((status = 202, body = crate::jobs::JobView), (status = 400), (status = 404), (status = 409)))]
pub async fn edit_segments(
    State(state): State<AppState>,
    auth: Auth,
    PathId(job_id): PathId<JobId>,
    JobJson {
        body,
        job: mut submission,
    }: JobJson<SegmentsBody>,
) -> ApiResult<Response> {
    let job = state
        .db
        .job(&auth.account_id, &job_id)
        .await?
        .filter(|j| matches!(j.kind, JobKind::Dubbing | JobKind::DubbingEdit))
        .ok_or_else(|| ApiError::not_found("dub", &job_id))?;
    if job.status != JobStatus::Completed {
        return Err(ApiError::new(ErrorCode::JobNotCompleted)
            .with_message(format!(
                "Dub {job_id} is {}; lines can be edited once it is completed.",
                job.status.as_str()
            ))
            .into());
    }
    let result = job.result.clone().unwrap_or_default();
    let edit = DubEdit::parse(&job_id, job.kind, &job.payload, &result, body.segments)?;
    submission.opts.respond_async = true;
    submission.submit(&state, &auth, &edit).await
}
