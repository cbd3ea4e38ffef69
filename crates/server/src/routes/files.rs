//! Input files: upload once, then refer to them by `fileId` in any request
//! that takes media.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::time::iso8601;
use mediagen_core::FileId;
use mediagen_core::{ApiError, Page};
use mediagen_store::FileRecord;
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::{ApiQuery, Auth, PathId};
use mediagen_jobs::limits;

use crate::media_input::{probe_upload, save};
use crate::routes::{page_of, page_params, ListEnvelope};
use crate::state::AppState;
use crate::upload::MultipartForm;

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    /// `file_…`
    pub id: String,
    pub filename: String,
    /// Found from the content, not from the name or the request headers.
    pub content_type: String,
    /// Bytes.
    pub size: i64,
    /// Seconds, for media.
    pub duration: Option<f64>,
    pub created_at: String,
}

impl From<FileRecord> for FileView {
    fn from(f: FileRecord) -> Self {
        Self {
            id: f.id.into(),
            filename: f.filename,
            content_type: f.content_type,
            size: f.size,
            duration: f.duration,
            created_at: iso8601(f.created_at),
        }
    }
}

/// `POST /v1/files`.
#[derive(utoipa::ToSchema)]
pub struct FileUploadForm {
    /// Audio or video (probed; anything else: 415).
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// Upload a file
///
/// `multipart/form-data` with one `file` part: audio or video. Streamed to
/// disk (larger than `upload_body_limit` → 413), sniffed and probed with
/// ffprobe: not media → 415, unreadable media → 422 `unreadable_media`.
#[utoipa::path(post, path = "/v1/files", tag = "files", security(("bearer" = ["write"])),
    request_body(content((FileUploadForm = "multipart/form-data"))),
    responses((status = 201, body = FileView), (status = 400), (status = 413), (status = 415)))]
pub async fn upload(
    State(state): State<AppState>,
    auth: Auth,
    mut form: MultipartForm,
) -> ApiResult<(StatusCode, Json<FileView>)> {
    let upload = form.take_file("file")?;
    let probed = probe_upload(&upload, "file", &limits::FILES).await?;
    let record = save(&state, &auth.account_id, &upload, &probed).await?;
    Ok((StatusCode::CREATED, Json(record.into())))
}

/// List files
#[utoipa::path(get, path = "/v1/files", tag = "files", security(("bearer" = ["read"])),
    params(("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<FileView>)))]
pub async fn list(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<RawPageQuery>,
) -> ApiResult<Json<Page<FileView>>> {
    let params = page_params(&q)?;
    let rows = state
        .db
        .list_files(&auth.account_id, params.limit.into(), params.offset())
        .await?;
    Ok(Json(page_of(rows, params, FileView::from)))
}

/// Get a file's record
#[utoipa::path(get, path = "/v1/files/{id}", tag = "files", security(("bearer" = ["read"])),
    params(("id" = String, Path)), responses((status = 200, body = FileView), (status = 404)))]
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<FileId>,
) -> ApiResult<Json<FileView>> {
    let file = state
        .db
        .file(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("file", &id))?;
    Ok(Json(file.into()))
}

/// Delete a file
#[utoipa::path(delete, path = "/v1/files/{id}", tag = "files", security(("bearer" = ["write"])),
    params(("id" = String, Path)), responses((status = 200, description = "`{id, deleted: true}`"), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<FileId>,
) -> ApiResult<Json<Value>> {
    let file = state
        .db
        .delete_file(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("file", &id))?;
    state.blobs.delete(&file.blob_key).await?;
    Ok(Json(json!({ "id": file.id, "deleted": true })))
}
