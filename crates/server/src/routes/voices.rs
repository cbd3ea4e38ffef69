use std::cmp::Ordering;

use axum::extract::{FromRequest, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mediagen_core::form::from_fields;
use mediagen_core::VoiceId;
use mediagen_core::{ApiError, Page};
use mediagen_jobs::voice_clone::{
    samples_out_of_range, CloneRequest, VoiceCloneForm, MAX_SAMPLE_SECONDS, MIN_SAMPLE_SECONDS,
};
use mediagen_store::VoiceChanges;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{ApiResult, Error};
use crate::extract::{ApiJson, ApiQuery, Auth, JobOptions, PathId};
use crate::jobs::{make_resource, JobSpec, Made};
use mediagen_jobs::MediaRequest;

use crate::media_input::{probe_upload, save};
use crate::routes::{described, form_labels, page_params, ListEnvelope};
use crate::state::AppState;
use crate::upload::MultipartForm;
pub use crate::voices::VoiceView;
use crate::voices::{all_voices, cloned_view, matches, quality_rank, voice_not_found, VoiceQuery};

/// List voices
///
/// The spec's voice listing (read-only keys may call it; it is the suggested
/// key test): the catalog and the account's cloned voices. Filters:
/// `language` (BCP-47 prefix: `en` matches `en-US`), `gender`, `engine`,
/// `category` (premade, cloned), `q` (name, description, labels). `sort`:
/// `name` or `language`; default: best quality first, then name.
#[utoipa::path(get, path = "/v1/voices", tag = "voice", security(("bearer" = ["read"])),
    params(("language" = Option<String>, Query), ("gender" = Option<String>, Query), ("engine" = Option<String>, Query),
           ("category" = Option<String>, Query), ("q" = Option<String>, Query), ("sort" = Option<String>, Query),
           ("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<VoiceView>), (status = 400)))]
pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<VoiceQuery>,
) -> ApiResult<Json<Page<VoiceView>>> {
    let params = page_params(&q.page)?;
    if let Some(g) = q.gender.as_deref() {
        if !["male", "female", "neutral"].contains(&g) {
            return Err(
                ApiError::invalid_parameter("gender", "must be male, female or neutral").into(),
            );
        }
    }
    if let Some(c) = q.category.as_deref() {
        if !LIST_CHOICES[0].1.contains(&c) {
            let allowed = LIST_CHOICES[0].1.join(" or ");
            return Err(
                ApiError::invalid_parameter("category", format!("must be {allowed}")).into(),
            );
        }
    }
    let order: fn(&VoiceView, &VoiceView) -> Ordering = match q.sort.as_deref() {
        None => |a, b| {
            quality_rank(&a.quality)
                .cmp(&quality_rank(&b.quality))
                .then_with(|| a.name.cmp(&b.name))
        },
        Some("name") => |a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        Some("language") => |a, b| {
            a.language
                .cmp(&b.language)
                .then_with(|| a.name.cmp(&b.name))
        },
        Some(_) => {
            let allowed = LIST_CHOICES[1].1.join(" or ");
            return Err(ApiError::invalid_parameter("sort", format!("must be {allowed}")).into());
        }
    };
    let mut voices: Vec<VoiceView> = all_voices(&state, &auth.account_id)
        .await?
        .into_iter()
        .filter(|v| matches(v, &q))
        .collect();
    voices.sort_by(order);
    let total = voices.len() as u64;
    let data = voices
        .into_iter()
        .skip(params.offset() as usize)
        .take(params.limit as usize)
        .collect();
    Ok(Json(Page::new(data, params, total)))
}

/// Get a voice
#[utoipa::path(get, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["read"])),
    params(("id" = String, Path)), responses((status = 200, body = VoiceView), (status = 404, description = "`voice_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<VoiceId>,
) -> ApiResult<Json<VoiceView>> {
    if let Some(voice) = state.catalog.voices.voice(&id) {
        return Ok(Json(VoiceView::new(&state, voice)));
    }
    let v = state
        .db
        .voice(&auth.account_id, &id)
        .await?
        .ok_or_else(|| voice_not_found(&id))?;
    Ok(Json(cloned_view(&state, v)))
}

/// The values the voice list's filters take (also written into the
/// document's parameters).
pub const LIST_CHOICES: [(&str, &[&str]); 2] = [
    ("category", &["premade", "cloned"]),
    ("sort", &["name", "language"]),
];

/// Clone a voice
///
/// `multipart/form-data`: `name` (required), one or more `files` parts of
/// the target speaker (audio or video, 10 s to 5 min in total), `consent`
/// (required, `true`: the speaker agreed to having their voice cloned),
/// optional `description`, `labels` (comma-separated or a JSON list),
/// `language` (BCP-47; omitted or `auto`: detected by the recogniser on
/// the first sample), `method` and `quality`. The samples are probed here
/// and kept as account files (`GET /v1/files`); a worker then decodes and
/// checks each one (silent, clipped or not speech → 422
/// `unprocessable_entity` naming the file in `details.index`; too little
/// or too much in total → 422) and analyses them into a voice profile
/// (median pitch and its spread, spectral centroid, speaking rate, a
/// gender estimate), returned as `profile`. `method: neural` (default)
/// then searches for a Kokoro style table whose speech sounds like the
/// samples, for `quality`'s time (`fast` 90 s, `standard` 170 s, `best`
/// 480 s, priced at `costs."voice.clone"` credits a second), judges it on
/// the last part of the samples, which the search never heard, and keeps
/// it when it is more alike there than the best stock voice (else the
/// stock voice's table: `similarity.heldOut` says which); where no Kokoro
/// voice speaks the language it makes a WORLD clone. `method: world`
/// (20 credits and a fifth of a credit a second of samples) picks the closest catalog voice of its language as its
/// `baseVoiceId`, converted toward the profile. The answer is 201 with the
/// voice when the worker is done within `sync_wait_seconds` (a
/// `voice.clone` job); otherwise (or with `Prefer: respond-async`) 202 with
/// the job, whose `result.voiceId` names the voice once it completes.
/// `Idempotency-Key` is honoured. The voice joins the account's `GET
/// /v1/voices` as `category: cloned`, visible to its keys only, and is a
/// `voiceId` for `POST /v1/text-to-speech` (batch and streamed) and `POST
/// /v1/voice-changer`.
///
/// Or, as JSON (`VoiceFromDesign`): `designId` (a preview of `POST
/// /v1/voices/design`), `name`, optional `description` and `labels`: the
/// designed voice is kept as the account's (201 with it, at once, free).
#[utoipa::path(post, path = "/v1/voices", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((VoiceCloneForm = "multipart/form-data"), (mediagen_jobs::voice_design::KeepBody = "application/json"))),
    responses((status = 201, body = VoiceView),
              (status = 202, body = crate::jobs::JobView, description = "The `voice.clone` job, still running"),
              (status = 400), (status = 404, description = "`resource_not_found`: a `designId` that is not one of the account's"),
              (status = 415), (status = 422)))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    req: axum::extract::Request,
) -> ApiResult<Response> {
    if crate::extract::is_json(req.headers()) {
        let ApiJson(body) = ApiJson::from_request(req, &state).await?;
        let record = crate::voices::keep_design(&state, &auth.account_id, body).await?;
        return Ok((StatusCode::CREATED, Json(cloned_view(&state, record))).into_response());
    }
    let form = MultipartForm::from_request(req, &state).await?;
    clone(state, auth, opts, form).await
}

/// A voice cloned from the samples of a form.
async fn clone(
    state: AppState,
    auth: Auth,
    opts: JobOptions,
    mut form: MultipartForm,
) -> ApiResult<Response> {
    let fields: VoiceCloneForm = from_fields(&form.fields)?;
    let labels = fields.labels.as_deref().map(form_labels).transpose()?;
    let meta = described(
        fields.name.as_deref(),
        fields.description.as_deref(),
        labels,
        true,
    )?;
    let options = fields.options()?;
    let uploads = form.files.remove("files").unwrap_or_default();
    let (samples, sample_seconds) = kept_samples(&state, &auth, &uploads).await?;
    let request = CloneRequest {
        voice_id: VoiceId::random(),
        name: meta.name.unwrap_or_default(),
        description: meta.description.unwrap_or_default(),
        labels: meta.labels.unwrap_or_default(),
        language: options.language,
        samples,
        method: options.method,
        quality: options.quality,
        sample_seconds,
    };
    let spec = JobSpec::of(&request, false)?;
    let job = match make_resource(&state, &auth, opts, spec).await? {
        Made::Done(job) => job,
        Made::Pending(response) => return Ok(response),
    };
    // A retried Idempotency-Key finds the voice its first request made.
    let made: CloneRequest = serde_json::from_value(job.payload).map_err(Error::internal)?;
    let record = state
        .db
        .voice(&auth.account_id, &made.voice_id)
        .await?
        .ok_or_else(|| voice_not_found(&made.voice_id))?;
    Ok((StatusCode::CREATED, Json(cloned_view(&state, record))).into_response())
}

/// A clone's samples, kept as the account's files: every one is probed
/// and their total length checked before any is kept (a worker decodes
/// them, stopping at the length the probe gave). Their storage keys and
/// that length.
async fn kept_samples(
    state: &AppState,
    auth: &Auth,
    uploads: &[crate::upload::Upload],
) -> ApiResult<(Vec<String>, f64)> {
    if uploads.is_empty() {
        return Err(
            ApiError::invalid_parameter("files", "one or more sample files are required").into(),
        );
    }
    let mut probed = Vec::new();
    for upload in uploads {
        probed.push(probe_upload(upload, "files", &CloneRequest::LIMITS).await?);
    }
    let seconds: f64 = probed.iter().map(|p| p.duration).sum();
    if !(MIN_SAMPLE_SECONDS - 1.0..=MAX_SAMPLE_SECONDS + 1.0).contains(&seconds) {
        return Err(samples_out_of_range(seconds).into());
    }
    let mut samples = Vec::new();
    for (upload, p) in uploads.iter().zip(&probed) {
        samples.push(save(state, &auth.account_id, upload, p).await?.blob_key);
    }
    Ok((samples, seconds))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoicePatch {
    #[serde(flatten)]
    #[schema(inline)]
    meta: super::MetaPatch,
}

/// Update a cloned voice
///
/// Renames a cloned voice or changes its `description` or `labels`
/// (catalog voices cannot be changed: 404).
#[utoipa::path(patch, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["write"])),
    params(("id" = String, Path)), request_body = VoicePatch,
    responses((status = 200, body = VoiceView), (status = 400), (status = 404)))]
pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<VoiceId>,
    ApiJson(body): ApiJson<VoicePatch>,
) -> ApiResult<Json<VoiceView>> {
    let meta = body.meta.checked()?;
    let changes = VoiceChanges {
        name: meta.name,
        description: meta.description,
        labels: meta.labels,
    };
    let v = state
        .db
        .update_voice(&auth.account_id, &id, changes)
        .await?
        .ok_or_else(|| voice_not_found(&id))?;
    Ok(Json(cloned_view(&state, v)))
}

/// Delete a cloned voice
#[utoipa::path(delete, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["write"])),
    params(("id" = String, Path)),
    responses((status = 200, description = "`{id, deleted: true}`"), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<VoiceId>,
) -> ApiResult<Json<Value>> {
    let v = state
        .db
        .delete_voice(&auth.account_id, &id)
        .await?
        .ok_or_else(|| voice_not_found(&id))?;
    super::deleted(&state, &v.id, &[&v.preview_key]).await
}
