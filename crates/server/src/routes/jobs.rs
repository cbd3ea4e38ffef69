use axum::extract::State;
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::JobId;
use mediagen_core::{ApiError, ErrorCode, JobKind, JobStatus, Page};
use mediagen_store::JobFilter;
use serde::Deserialize;

use crate::error::ApiResult;
use crate::extract::{ApiQuery, Auth, PathId};
use crate::jobs::JobView;
use crate::routes::{page_of, page_params, ListEnvelope};
use crate::state::AppState;

#[derive(Deserialize)]
pub struct JobListQuery {
    status: Option<String>,
    kind: Option<String>,
    #[serde(flatten)]
    page: RawPageQuery,
}

/// Get a job
///
/// Poll this until `status` is `completed`, `failed` or `cancelled`.
#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "jobs", security(("bearer" = ["read"])),
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = JobView), (status = 404, description = "No such job in this account")))]
pub async fn get_job(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<JobId>,
) -> ApiResult<Json<JobView>> {
    let job = state
        .db
        .job(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("job", &id))?;
    Ok(Json(JobView::new(&state, job)))
}

/// List jobs
///
/// Newest first. Filters: `status` (queued, processing, completed, failed,
/// cancelled) and `kind` (a job kind: `tts`, `stt`, `voice.change`,
/// `voice.clone`, `dubbing`, `dubbing.edit`, `video.trim`, `avatar.expand`,
/// `avatar.create`, `sound`, `image`).
#[utoipa::path(get, path = "/v1/jobs", tag = "jobs", security(("bearer" = ["read"])),
    params(("status" = Option<String>, Query), ("kind" = Option<String>, Query),
           ("page" = Option<u32>, Query, description = "From 1"), ("limit" = Option<u32>, Query, description = "1–100, default 20")),
    responses((status = 200, body = ListEnvelope<JobView>), (status = 400, description = "Invalid filter or paging value")))]
pub async fn list_jobs(
    State(state): State<AppState>,
    auth: Auth,
    ApiQuery(q): ApiQuery<JobListQuery>,
) -> ApiResult<Json<Page<JobView>>> {
    let params = page_params(&q.page)?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(JobStatus::parse(s).ok_or_else(|| {
            ApiError::invalid_parameter(
                "status",
                "must be one of queued, processing, completed, failed, cancelled",
            )
        })?),
    };
    let kind = match q.kind.as_deref() {
        None => None,
        Some(k) => Some(JobKind::parse(k).ok_or_else(|| {
            let names: Vec<&str> = JobKind::ALL.iter().map(|k| k.name()).collect();
            ApiError::invalid_parameter("kind", format!("must be one of {}", names.join(", ")))
        })?),
    };
    let filter = JobFilter { status, kind };
    let rows = state
        .db
        .list_jobs(
            &auth.account_id,
            &filter,
            params.limit.into(),
            params.offset(),
        )
        .await?;
    Ok(Json(page_of(rows, params, |j| JobView::new(&state, j))))
}

/// Cancel a job
///
/// A queued or running job is cancelled and its credits refunded; a
/// finished job answers 409 `job_not_cancellable`.
#[utoipa::path(delete, path = "/v1/jobs/{id}", tag = "jobs", security(("bearer" = ["write"])),
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = JobView), (status = 404), (status = 409, description = "Already finished")))]
pub async fn cancel_job(
    State(state): State<AppState>,
    auth: Auth,
    PathId(id): PathId<JobId>,
) -> ApiResult<Json<JobView>> {
    let before = state
        .db
        .job(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("job", &id))?;
    if before.status.is_terminal() {
        return Err(ApiError::new(ErrorCode::JobNotCancellable)
            .with_detail("status", before.status.as_str())
            .into());
    }
    let job = state
        .db
        .cancel_job(&auth.account_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("job", &id))?;
    if job.status != JobStatus::Cancelled {
        return Err(ApiError::new(ErrorCode::JobNotCancellable)
            .with_detail("status", job.status.as_str())
            .into());
    }
    // The worker running it (here; others hear the database) kills its
    // tools and stops its engine loops now.
    state.events.job_ended(&id);
    Ok(Json(JobView::new(&state, job)))
}
