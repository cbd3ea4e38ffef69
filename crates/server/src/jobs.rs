//! Job submission, the sync/async answer rule, and the job view.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use mediagen_core::job::{Job, JobError};
use mediagen_core::time::{iso8601, now_ms};
use mediagen_core::{ApiError, ErrorCode, JobKind, JobRequest, JobStatus};
use mediagen_store::{CreateJobError, NewJob};
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::{ApiResult, Error, UNAVAILABLE_RETRY_AFTER};
use crate::extract::JobOptions;
use crate::middleware::Principal;
use crate::state::AppState;

/// The job result object: the spec's `{id, status, result, createdAt}` plus
/// `kind`, `progress`, `error`, `credits`, `attempts` and `updatedAt`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    /// Opaque job id, `job_…`.
    pub id: String,
    /// The capability that runs the job, e.g. `tts`.
    pub kind: String,
    pub status: JobStatus,
    /// 0–100.
    pub progress: i64,
    /// Output of the job once completed. URLs in it (`audioUrl`, `videoUrl`,
    /// `imageUrl`, …) are absolute, signed and expire (`urlExpiresAt`).
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Why the job failed (status `failed`), or the last retried error.
    pub error: Option<JobError>,
    /// Credits held (while running), charged (completed) or refunded.
    pub credits: i64,
    /// Attempts made so far (a job is retried when its worker dies).
    pub attempts: i64,
    /// ISO 8601 UTC.
    pub created_at: String,
    /// ISO 8601 UTC.
    pub updated_at: String,
    /// What the job was asked, for lists and histories: the start of a
    /// speech job's text or a generation's prompt (at most 80 characters,
    /// `…` where cut); `null` for other kinds.
    pub summary: Option<String>,
    /// The account's uploaded file the job reads (`GET /v1/files/{id}`
    /// names it), for the kinds that read one.
    pub file_id: Option<String>,
    /// When a finished job and its outputs are deleted (ISO 8601 UTC,
    /// `job_retention_days` after it finished); `null` while it runs or
    /// when jobs are kept forever. Result URLs expire by then.
    pub expires_at: Option<String>,
}

impl JobView {
    pub fn new(state: &AppState, job: Job) -> Self {
        let deleted_at = state
            .config
            .retention()
            .jobs
            .filter(|_| job.status.is_terminal())
            .map(|keep| job.updated_at.saturating_add(keep.as_millis() as i64));
        // No URL outlives the job: the sweep deletes the files at its expiry.
        let expires = (now_ms() / 1000 + state.config.url_ttl_seconds as i64)
            .min(deleted_at.map_or(i64::MAX, |t| t / 1000));
        let summary = summary(job.kind, &job.payload);
        let file_id = job
            .payload
            .get("fileId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let outputs = job.outputs;
        let result = job.result.map(|mut r| {
            for output in &outputs {
                set_at(
                    &mut r,
                    &output.field,
                    signed_url(state, &output.key, expires),
                );
            }
            if let Value::Object(map) = &mut r {
                map.insert(
                    "urlExpiresAt".into(),
                    Value::String(iso8601(expires * 1000)),
                );
            }
            r
        });
        Self {
            id: job.id.into(),
            kind: job.kind.name().to_owned(),
            status: job.status,
            progress: job.progress,
            result,
            // A retried error is history once the job succeeded.
            error: if job.status == JobStatus::Completed {
                None
            } else {
                job.error
            },
            credits: job.cost,
            attempts: job.attempts,
            summary,
            file_id,
            created_at: iso8601(job.created_at),
            updated_at: iso8601(job.updated_at),
            expires_at: deleted_at.map(iso8601),
        }
    }
}

/// Longest summary of a job's text or prompt, in characters.
const SUMMARY_CHARS: usize = 80;

/// The start of a speech job's text or a generation's prompt (the account's
/// own words, shown back to it), cut at [`SUMMARY_CHARS`].
fn summary(kind: JobKind, payload: &Value) -> Option<String> {
    let field = match kind {
        JobKind::Tts => "text",
        JobKind::Sound | JobKind::Image => "prompt",
        _ => return None,
    };
    let text = payload.get(field)?.as_str()?.trim();
    let mut chars = text.char_indices();
    Some(match chars.nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_owned(),
    })
}

/// Puts `url` at `pointer` (`/a/0/b`) in `result`: the member named by the
/// last step is set in the object the steps before it lead to. A pointer
/// that leads nowhere is ignored (the pipeline registered it, so it exists).
fn set_at(result: &mut Value, pointer: &str, url: String) {
    let Some((parent, name)) = pointer.rsplit_once('/') else {
        return;
    };
    let target = if parent.is_empty() {
        Some(result)
    } else {
        result.pointer_mut(parent)
    };
    if let Some(Value::Object(map)) = target {
        let name = name.replace("~1", "/").replace("~0", "~");
        map.insert(name, Value::String(url));
    }
}

/// `<base>/blobs/<key>?expires=<unix s>&signature=<hex>`.
pub fn signed_url(state: &AppState, key: &str, expires: i64) -> String {
    let sig = state.signer.sign(key, expires);
    format!(
        "{}/blobs/{key}?expires={expires}&signature={sig}",
        state.base_url
    )
}

/// A validated request for work.
pub struct JobSpec {
    pub kind: JobKind,
    pub payload: Value,
    /// Billable units (characters, seconds…), priced by the `costs` table.
    pub units: f64,
    /// Validate and price only.
    pub dry_run: bool,
    /// Seconds of input media: the job's time limit grows by its kind's
    /// allowance for each ([`JobKind::time_limit`]).
    pub media_seconds: f64,
}

impl JobSpec {
    /// A job for `request`: of its kind, priced on the units it counts,
    /// its time limit grown by its media seconds.
    pub fn of<R: JobRequest>(request: &R, dry_run: bool) -> ApiResult<JobSpec> {
        Ok(JobSpec {
            kind: R::KIND,
            units: request.units(),
            payload: serde_json::to_value(request).map_err(Error::internal)?,
            dry_run,
            media_seconds: request.media_seconds(),
        })
    }
}

/// Credits for `units` of `kind`, rounded up.
pub fn price(state: &AppState, kind: JobKind, units: f64) -> i64 {
    mediagen_core::billing::price(units, state.config.cost_per_unit(kind))
}

/// Creates the job (holding its credits) and answers as the platform's rule
/// says: the finished job when it finishes within `sync_wait_seconds`,
/// otherwise (or with `Prefer: respond-async`) 202 with the queued job.
pub async fn submit(
    state: &AppState,
    who: &Principal,
    opts: JobOptions,
    spec: JobSpec,
) -> ApiResult<Response> {
    if spec.dry_run {
        return dry_run(state, who, &spec).await;
    }
    let job = create_and_wait(state, who, opts, spec).await?;
    job_response(state, job)
}

/// Creates the job and waits up to `sync_wait_seconds` for it to finish
/// (not at all with `Prefer: respond-async`).
async fn create_and_wait(
    state: &AppState,
    who: &Principal,
    opts: JobOptions,
    spec: JobSpec,
) -> ApiResult<Job> {
    let respond_async = opts.respond_async;
    let (job, _) = create(state, who, opts, spec).await?;
    state.events.job_submitted();
    if respond_async {
        return Ok(job);
    }
    let wait = Duration::from_secs_f64(state.config.sync_wait_seconds);
    wait_for(state, job, wait).await
}

/// The price of a request, without creating a job.
pub async fn dry_run(state: &AppState, who: &Principal, spec: &JobSpec) -> ApiResult<Response> {
    let cost = price(state, spec.kind, spec.units);
    let account = state.db.account(&who.account_id).await?;
    let balance = account.map(|a| a.balance).unwrap_or(0);
    Ok(Json(json!({
        "dryRun": true,
        "kind": spec.kind,
        "estimatedCredits": cost,
        "availableCredits": balance,
        "sufficientCredits": balance >= cost,
    }))
    .into_response())
}

/// Creates the job and holds its credits, mapping refusals to API errors. A
/// retried `Idempotency-Key` returns the job created the first time (and
/// `false`: not created now).
pub async fn create(
    state: &AppState,
    who: &Principal,
    opts: JobOptions,
    spec: JobSpec,
) -> ApiResult<(Job, bool)> {
    let cost = price(state, spec.kind, spec.units);
    if opts.webhook_url.is_some() {
        // Its deliveries are signed with the account's request secret.
        state
            .db
            .request_webhook_secret(&who.account_id, &crate::webhooks::signing::new_secret())
            .await?;
    }
    let created = state
        .db
        .create_job(NewJob {
            account_id: who.account_id.clone(),
            kind: spec.kind,
            payload: spec.payload,
            cost,
            units: spec.units,
            unit_price: state.config.cost_per_unit(spec.kind),
            // A live session is never run twice.
            max_attempts: if spec.kind.is_session() {
                1
            } else {
                state.config.max_attempts
            },
            timeout_ms: (state.config.job_timeout(spec.kind, spec.media_seconds) * 1000.0) as i64,
            idempotency_key: opts.idempotency_key,
            max_concurrent: state.config.max_concurrent_jobs,
            webhook_url: opts.webhook_url,
        })
        .await;
    match created {
        Ok(job) => Ok((job, true)),
        Err(CreateJobError::Duplicate(job)) => Ok((*job, false)),
        Err(CreateJobError::InsufficientCredits {
            required,
            available,
        }) => Err(ApiError::new(ErrorCode::InsufficientCredits)
            .with_message(format!(
                "This request costs {required} credits; the account has {available}."
            ))
            .with_detail("required", required)
            .with_detail("available", available)
            .into()),
        Err(CreateJobError::TooManyJobs { limit }) => Err(Error::from(
            ApiError::new(ErrorCode::ConcurrentJobsLimitExceeded)
                .with_message(format!(
                    "The account already has {limit} jobs queued or running."
                ))
                .with_detail("limit", limit),
        )
        .with_retry_after(1)),
        Err(CreateJobError::Store(e)) => Err(e.into()),
    }
}

/// A job that makes one of the account's resources (a cloned voice, an
/// avatar), submitted and waited for like any job.
pub enum Made {
    /// It completed: the resource exists.
    Done(Job),
    /// Still queued or running after `sync_wait_seconds` (or the client
    /// asked `Prefer: respond-async`): the 202 answer with the job.
    Pending(Response),
}

/// Submits a job that makes a resource and waits for it (answers as
/// [`job_response`] unless it completed).
pub async fn make_resource(
    state: &AppState,
    who: &Principal,
    opts: JobOptions,
    spec: JobSpec,
) -> ApiResult<Made> {
    let job = create_and_wait(state, who, opts, spec).await?;
    match job.status {
        JobStatus::Completed => Ok(Made::Done(job)),
        _ => job_response(state, job).map(Made::Pending),
    }
}

/// The error a failed job answers with when it failed on its input: its
/// own code when that is a client error (4xx) of the error table, with its
/// message and details (a 422 naming the sample a clone could not use, a
/// 402 for a measured input the balance cannot cover). `None` for server
/// faults, which answer `job_failed`.
fn refused(job: &Job) -> Option<ApiError> {
    let e = job.error.as_ref()?;
    let code = ErrorCode::parse(&e.code).filter(|c| (400..500).contains(&c.status()))?;
    let mut refused = ApiError::new(code).with_message(e.message.clone());
    refused.details = e.details.clone().unwrap_or_default();
    Some(refused)
}

/// The error a failed or cancelled job answers with: its own when it
/// failed on its input (see [`refused`]); 503 `service_unavailable` with
/// `Retry-After` when a passing fault of the storage failed it (sending
/// the request again can succeed); otherwise `job_failed`.
fn failure(state: &AppState, job: Job) -> Error {
    if let Some(refused) = refused(&job) {
        return refused
            .with_detail("jobId", job.id)
            .with_detail("status", job.status.as_str())
            .into();
    }
    let passing = job
        .error
        .as_ref()
        .is_some_and(|e| ErrorCode::parse(&e.code) == Some(ErrorCode::StorageError));
    let id = job.id.clone();
    let view = JobView::new(state, job);
    let message = view
        .error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_else(|| "The job was cancelled.".into());
    let code = if passing {
        ErrorCode::ServiceUnavailable
    } else {
        ErrorCode::JobFailed
    };
    let error = Error::from(
        ApiError::new(code)
            .with_message(message)
            .with_detail("jobId", id)
            .with_detail("status", view.status.as_str())
            .with_detail(
                "error",
                serde_json::to_value(&view.error).unwrap_or(Value::Null),
            ),
    );
    if passing {
        error.with_retry_after(UNAVAILABLE_RETRY_AFTER)
    } else {
        error
    }
}

/// Creates the job and waits for its end, for clients that know no 202
/// (OpenAI's and ElevenLabs' SDKs): at most its time limit after
/// `sync_wait_seconds` of queueing. The completed job; its failure as
/// [`job_response`] answers it; 503 `service_unavailable` naming the job
/// when it has not ended by then (it goes on; `GET /v1/jobs/{id}`).
pub async fn run_to_end(
    state: &AppState,
    who: &Principal,
    opts: JobOptions,
    spec: JobSpec,
) -> ApiResult<Job> {
    let (job, _) = create(state, who, opts, spec).await?;
    state.events.job_submitted();
    let wait = Duration::from_secs_f64(state.config.sync_wait_seconds)
        + Duration::from_millis(job.timeout_ms.max(0) as u64);
    let job = wait_for(state, job, wait).await?;
    match job.status {
        JobStatus::Completed => Ok(job),
        JobStatus::Failed | JobStatus::Cancelled => Err(failure(state, job)),
        JobStatus::Queued | JobStatus::Processing => Err(Error::from(
            ApiError::new(ErrorCode::ServiceUnavailable)
                .with_message("The job has not finished yet; it goes on (GET /v1/jobs/{id}).")
                .with_detail("jobId", job.id),
        )
        .with_retry_after(5)),
    }
}

/// The bytes and content type of a completed job's output whose URL goes
/// at `field` of its result (`/audioUrl`).
pub async fn output_bytes(
    state: &AppState,
    job: &Job,
    field: &str,
) -> ApiResult<(bytes::Bytes, String)> {
    let output = job
        .outputs
        .iter()
        .find(|o| o.field == field)
        .ok_or_else(|| Error::internal(format!("the job has no output at {field}")))?;
    let bytes = state.blobs.get_bytes(&output.key).await?;
    Ok((bytes, output.content_type.clone()))
}

/// The answer for a job just submitted or waited for: the job when it
/// completed (200) or still runs (202 with `Location`); when it failed,
/// the error [`failure`] gives.
pub fn job_response(state: &AppState, job: Job) -> ApiResult<Response> {
    match job.status {
        JobStatus::Completed => {
            Ok((StatusCode::OK, Json(JobView::new(state, job))).into_response())
        }
        JobStatus::Failed | JobStatus::Cancelled => Err(failure(state, job)),
        JobStatus::Queued | JobStatus::Processing => {
            let location = format!("/v1/jobs/{}", job.id);
            let mut response =
                (StatusCode::ACCEPTED, Json(JobView::new(state, job))).into_response();
            if let Ok(v) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, v);
            }
            Ok(response)
        }
    }
}

/// Waits until the job is finished or `wait` has passed. Woken at once by
/// workers in this process and, on PostgreSQL, by the announcements of
/// every other; polling the database is the fallback (often without
/// announcements, seldom with them).
pub async fn wait_for(state: &AppState, job: Job, wait: Duration) -> ApiResult<Job> {
    let deadline = tokio::time::Instant::now() + wait;
    let poll = Duration::from_millis(if state.events.relayed() { 2000 } else { 200 });
    let mut finished = state.events.subscribe_finished();
    let mut job = job;
    loop {
        if job.status.is_terminal() || tokio::time::Instant::now() >= deadline {
            return Ok(job);
        }
        tokio::select! {
            _ = finished.recv() => {}
            _ = tokio::time::sleep(poll) => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
        job = state
            .db
            .job(&job.account_id, &job.id)
            .await?
            .ok_or_else(|| Error::internal("job vanished while waiting"))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_the_start_of_the_text_or_prompt() {
        let long = "é".repeat(SUMMARY_CHARS + 5);
        let cut = summary(JobKind::Tts, &json!({"text": long})).unwrap();
        assert_eq!(cut.chars().count(), SUMMARY_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(
            summary(JobKind::Image, &json!({"prompt": " a red apple "})).as_deref(),
            Some("a red apple")
        );
        // A transcription's `prompt` is a hint to the recogniser, not what
        // the job was asked: such kinds are named by their file.
        assert_eq!(summary(JobKind::Stt, &json!({"prompt": "names"})), None);
    }
}
