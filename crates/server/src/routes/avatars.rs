//! The avatar catalog: the built-in presenters (rendered at the first
//! start) and each account's own uploads (`category: custom`); avatar
//! expansion.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mediagen_core::form::from_fields;
use mediagen_core::{ApiError, ErrorCode, Page};
use mediagen_core::{AvatarId, FileId, TypedId};
use mediagen_jobs::avatar::{not_a_video, ExpandOptions, ExpandRequest};
use mediagen_jobs::avatar_upload::{AvatarUpload, AvatarUploadForm};
use mediagen_jobs::MediaRequest;
use mediagen_store::AvatarChanges;
use serde::Deserialize;
use serde_json::Value;

use crate::avatars::{
    choices, custom_view, matches, one_of, premade, premade_view, AvatarQuery, GENDERS,
};
pub use crate::avatars::{poster_key, video_key, AvatarView, LIST_CHOICES};
use crate::error::{ApiResult, Error};
use crate::extract::{client_id, ApiJson, ApiQuery, Auth, JobOptions, PathId};
use crate::jobs::{make_resource, JobSpec, Made};
use crate::media_input::{probe_upload, read_input, Input};
use crate::routes::{described, form_labels, page_params, ListEnvelope};
use crate::state::AppState;
use crate::submission::Submission;
use crate::upload::MultipartForm;

/// Length limits of an uploaded avatar clip, seconds.
const MIN_SECONDS: f64 = 1.0;
const MAX_SECONDS: f64 = 300.0;

/// List avatars
///
/// The spec's list envelope of the built-in avatars and the account's own,
/// filtered by `q` (name, description or label), `gender` (female, male,
/// neutral), `style` (illustrated, photo), `category` (premade, custom),
/// `orientation` (square, landscape, portrait), sorted by `sort` (`name`
/// (default), `-name`, `createdAt`, `-createdAt`), paged by `page` and
/// `limit`.
#[utoipa::path(get, path = "/v1/avatars", tag = "avatars", security(("bearer" = ["read"])),
    params(("q" = Option<String>, Query), ("gender" = Option<String>, Query), ("style" = Option<String>, Query),
           ("category" = Option<String>, Query), ("orientation" = Option<String>, Query), ("sort" = Option<String>, Query),
           ("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<AvatarView>), (status = 400)))]
pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<AvatarQuery>,
) -> ApiResult<Json<Page<AvatarView>>> {
    let params = page_params(&q.page)?;
    one_of("gender", q.gender.as_deref(), &GENDERS)?;
    one_of("style", q.style.as_deref(), choices("style"))?;
    one_of("category", q.category.as_deref(), choices("category"))?;
    one_of(
        "orientation",
        q.orientation.as_deref(),
        choices("orientation"),
    )?;
    one_of("sort", q.sort.as_deref(), choices("sort"))?;
    let sort = q.sort.as_deref().unwrap_or("name");
    let (key, descending) = match sort.strip_prefix('-') {
        Some(k) => (k, true),
        None => (sort, false),
    };
    let custom = state.db.avatars(&auth.account_id).await?;
    let mut all: Vec<AvatarView> = state
        .catalog
        .avatars
        .avatars()
        .iter()
        .filter(|l| state.avatars.contains(&l.id))
        .map(|l| premade_view(&state, l))
        .chain(custom.into_iter().map(|a| custom_view(&state, a)))
        .filter(|a| matches(a, &q))
        .collect();
    all.sort_by(|a, b| {
        let order = match key {
            "createdAt" => a.created_at.cmp(&b.created_at),
            _ => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        }
        .then_with(|| a.id.cmp(&b.id));
        if descending {
            order.reverse()
        } else {
            order
        }
    });
    let total = all.len() as u64;
    let data = all
        .into_iter()
        .skip(params.offset() as usize)
        .take(params.limit as usize)
        .collect();
    Ok(Json(Page::new(data, params, total)))
}

/// Get an avatar
#[utoipa::path(get, path = "/v1/avatars/{id}", tag = "avatars", security(("bearer" = ["read"])),
    params(("id" = String, Path)),
    responses((status = 200, body = AvatarView), (status = 404, description = "`resource_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<AvatarId>,
) -> ApiResult<Json<AvatarView>> {
    if let Some(look) = premade(&state, &id) {
        return Ok(Json(premade_view(&state, &look)));
    }
    let a = state
        .db
        .avatar(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("avatar", &id))?;
    Ok(Json(custom_view(&state, a)))
}

/// An avatar's name, description, gender and labels, checked.
fn check_meta(
    name: Option<&str>,
    description: Option<&str>,
    gender: Option<String>,
    labels: Option<Vec<String>>,
    creating: bool,
) -> Result<AvatarChanges, ApiError> {
    let meta = described(name, description, labels, creating)?;
    one_of("gender", gender.as_deref(), &GENDERS)?;
    Ok(AvatarChanges {
        name: meta.name,
        description: meta.description,
        gender,
        labels: meta.labels,
    })
}

/// Upload an avatar
///
/// `multipart/form-data`: `file` (a video of a person or character, 1 s to
/// 5 min, any container ffmpeg reads), `name` (required), optional
/// `description`, `gender` (female, male, neutral (default)) and `labels`
/// (comma-separated or a JSON list). The clip is probed here and kept as
/// uploaded; a worker (an `avatar.create` job, free) reads its picture and
/// cuts the first frame as the poster. It joins the account's catalog as
/// `category: custom`, `style: photo`, visible to the account's keys only.
/// No picture stream, an unreadable clip, or a clip shorter or longer than
/// allowed → 422 `unprocessable_entity`; not media → 415. 201 with the
/// avatar when the worker is done within `sync_wait_seconds`; otherwise
/// (or with `Prefer: respond-async`) 202 with the job, whose
/// `result.avatarId` names the avatar once it completes.
#[utoipa::path(post, path = "/v1/avatars", tag = "avatars", security(("bearer" = ["write"])),
    request_body(content((AvatarUploadForm = "multipart/form-data"))),
    responses((status = 201, body = AvatarView),
              (status = 202, body = crate::jobs::JobView, description = "The `avatar.create` job, still running"),
              (status = 400), (status = 415), (status = 422)))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    mut form: MultipartForm,
) -> ApiResult<Response> {
    let fields: AvatarUploadForm = from_fields(&form.fields)?;
    let labels = fields.labels.as_deref().map(form_labels).transpose()?;
    let meta = check_meta(
        fields.name.as_deref(),
        fields.description.as_deref(),
        fields.gender,
        labels,
        true,
    )?;
    let upload = form.take_file("file")?;
    let probed = probe_upload(&upload, "file", &AvatarUpload::LIMITS).await?;
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&probed.duration) {
        return Err(ApiError::unprocessable(
            "file",
            format!(
                "an avatar clip must last {MIN_SECONDS} s to {MAX_SECONDS} s (this one: {:.2} s)",
                probed.duration
            ),
        )
        .into());
    }
    let id = AvatarId::random();
    let ext = match upload.sniffed_type() {
        "video/quicktime" => "mov",
        "video/webm" => "webm",
        "video/x-matroska" => "mkv",
        "video/mp4" => "mp4",
        _ => "bin",
    };
    let account = &auth.account_id;
    let request = AvatarUpload {
        video_key: format!("avatars/{account}/{id}.{ext}"),
        poster_key: format!("avatars/{account}/{id}.png"),
        avatar_id: id,
        name: meta.name.unwrap_or_default(),
        description: meta.description.unwrap_or_default(),
        gender: meta.gender.unwrap_or_else(|| "neutral".to_owned()),
        labels: meta.labels.unwrap_or_default(),
        content_type: upload.sniffed_type().to_owned(),
        duration: probed.duration,
    };
    state
        .blobs
        .put_file(&request.video_key, upload.file.path())
        .await?;
    let spec = JobSpec::of(&request, false)?;
    let job = match make_resource(&state, &auth, opts, spec).await? {
        Made::Done(job) => job,
        Made::Pending(response) => return Ok(response),
    };
    // A retried Idempotency-Key finds the avatar its first request made.
    let made: AvatarUpload = serde_json::from_value(job.payload).map_err(Error::internal)?;
    let record = state
        .db
        .avatar(account, &made.avatar_id)
        .await?
        .ok_or_else(|| ApiError::not_found("avatar", &made.avatar_id))?;
    Ok((StatusCode::CREATED, Json(custom_view(&state, record))).into_response())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AvatarPatch {
    #[serde(flatten)]
    #[schema(inline)]
    meta: super::MetaPatch,
    #[schema(schema_with = super::gender_schema)]
    gender: Option<String>,
}

/// Update an avatar
///
/// Changes the `name`, `description`, `gender` or `labels` of one of the
/// account's own avatars (the built-in ones cannot be changed: 404).
#[utoipa::path(patch, path = "/v1/avatars/{id}", tag = "avatars", security(("bearer" = ["write"])),
    params(("id" = String, Path)), request_body = AvatarPatch,
    responses((status = 200, body = AvatarView), (status = 400), (status = 404)))]
pub async fn update(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<AvatarId>,
    ApiJson(body): ApiJson<AvatarPatch>,
) -> ApiResult<Json<AvatarView>> {
    let meta = body.meta.checked()?;
    one_of("gender", body.gender.as_deref(), &GENDERS)?;
    let changes = AvatarChanges {
        name: meta.name,
        description: meta.description,
        gender: body.gender,
        labels: meta.labels,
    };
    let a = state
        .db
        .update_avatar(&auth.account_id, &id, changes)
        .await?
        .ok_or_else(|| ApiError::not_found("avatar", &id))?;
    Ok(Json(custom_view(&state, a)))
}

/// Delete an avatar
///
/// Deletes one of the account's own avatars and its files.
#[utoipa::path(delete, path = "/v1/avatars/{id}", tag = "avatars", security(("bearer" = ["write"])),
    params(("id" = String, Path)),
    responses((status = 200, description = "`{id, deleted: true}`"), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<AvatarId>,
) -> ApiResult<Json<Value>> {
    let a = state
        .db
        .delete_avatar(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("avatar", &id))?;
    super::deleted(&state, &a.id, &[&a.video_key, &a.poster_key]).await
}

/// Expand an avatar
///
/// Makes a video exactly `duration` seconds long (at most 600) from an
/// avatar (`avatarId`, built-in or the account's own) or any video (a
/// `file` part, or a `fileId`); or, with `audioFileId` instead of
/// `duration`, exactly as long as that audio, which is put under the
/// picture. A built-in presenter with `audioFileId` is drawn talking: its
/// mouth follows the voice's loudness.
///
/// `mode`: `seamless` (default: a video texture that jumps back where the
/// picture and its motion match, crossfaded, never repeating one loop more
/// than three times in a row), `loop`, `pingpong` or `freeze` (hold the last
/// frame). `format`: mp4 (default), webm, mov, mkv. `seed` varies the
/// seamless plan.
///
/// The job's `result`: `{videoUrl, duration, frames, fps, width, height,
/// mode, jumps, seamScore, format, contentType, avatarId, fileId,
/// audioFileId}`; `seamScore` is the worst jolt in motion at a seam, in
/// units of the clip's mean frame-to-frame change (0 without seams; lower is
/// better). Without `audioFileId` the output is silent. A duration ≤ 0 or
/// over 600 s, or a source without a picture → 422 `unprocessable_entity`.
/// Price: `costs.avatar.expand` credits per output second, rounded up.
#[utoipa::path(post, path = "/v1/avatar-expansion", tag = "avatars", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::avatar::AvatarExpansionForm = "multipart/form-data"))),
    responses((status = 200, body = crate::jobs::JobView), (status = 202, body = crate::jobs::JobView),
              (status = 400), (status = 404, description = "No such avatar or file"),
              (status = 415), (status = 422, description = "`unprocessable_entity` naming duration, audioFileId or the source")))]
pub async fn expand(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    req: Request,
) -> ApiResult<Response> {
    let mut input = read_input(&state, &auth, req, &ExpandRequest::LIMITS).await?;
    let fields = match &mut input {
        Input::Media(m) => &mut m.fields,
        Input::Fields(f) => f,
    };
    let job = Submission::from_fields(&state, opts, fields)?;
    let options = ExpandOptions::parse(fields)?;
    let avatar_id = fields.get("avatarId").cloned();
    let audio = audio_track(&state, &auth, options.audio_file_id.as_deref()).await?;
    let seconds = options
        .duration
        .or(audio.as_ref().map(|a| a.1))
        .unwrap_or_default();
    let request =
        |source: String, avatar: Option<String>, file: Option<FileId>, talking| ExpandRequest {
            source,
            avatar_id: avatar,
            file_id: file,
            talking,
            seconds,
            audio: audio.as_ref().map(|a| a.0.blob_key.clone()),
            audio_file_id: options.audio_file_id.clone(),
            mode: options.mode,
            format: options.format,
            seed: options.seed,
        };
    match (input, avatar_id) {
        (Input::Media(media), None) if media.may_have_video() => {
            media
                .submit(&state, &auth, job, |file| {
                    request(file.key, None, Some(file.id), None)
                })
                .await
        }
        (Input::Media(media), None) => Err(not_a_video(media.parameter()).into()),
        (Input::Fields(_), Some(id)) => {
            let (video, talking) = avatar_video(&state, &auth, &id, audio.is_some()).await?;
            job.submit(&state, &auth, &request(video, Some(id), None, talking))
                .await
        }
        (input, _) => Err(no_one_source(matches!(input, Input::Media(_)))),
    }
}

/// An expansion given both an avatar and a video (`both`), or neither.
fn no_one_source(both: bool) -> Error {
    let message = if both {
        "send either `avatarId` or a video (`file` or `fileId`), not both"
    } else {
        "send an `avatarId`, a `fileId` or a `file` part"
    };
    ApiError::invalid_parameter("avatarId", message).into()
}

/// The account's audio file `audioFileId` names, with its length (checked
/// as an expansion's duration is): 404 for a file that is not the
/// account's, 415 for one that is not audio or video.
async fn audio_track(
    state: &AppState,
    auth: &Auth,
    id: Option<&str>,
) -> ApiResult<Option<(mediagen_store::FileRecord, f64)>> {
    let Some(id) = id else {
        return Ok(None);
    };
    let file = state
        .db
        .file(&auth.account_id, &client_id::<FileId>(id)?)
        .await?
        .ok_or_else(|| FileId::not_found(id))?;
    let seconds = file.duration.ok_or_else(|| {
        Error::from(
            ApiError::new(ErrorCode::UnsupportedMediaType)
                .with_message("The audio file is not audio or video.")
                .with_detail("parameter", "audioFileId"),
        )
    })?;
    ExpandOptions::check_seconds("audioFileId", seconds)?;
    Ok(Some((file, seconds)))
}

/// The video of avatar `id` (a built-in one, or the account's: 404
/// otherwise), and the presenter drawn talking when a voice track is put
/// under a built-in one.
async fn avatar_video(
    state: &AppState,
    auth: &Auth,
    id: &str,
    with_audio: bool,
) -> ApiResult<(String, Option<String>)> {
    if let Some(look) = premade(state, id) {
        let talking = with_audio.then(|| look.id.to_owned());
        return Ok((video_key(look.id), talking));
    }
    let a = state
        .db
        .avatar(&auth.account_id, &client_id::<AvatarId>(id)?)
        .await?
        .ok_or_else(|| ApiError::not_found("avatar", id))?;
    Ok((a.video_key, None))
}
