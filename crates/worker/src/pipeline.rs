use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use mediagen_core::job::{Job, JobError};
use mediagen_store::BlobStore;
use serde_json::Value;

/// How a pipeline failed: worth another attempt, or final.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JobFailure {
    /// A transient fault (an engine busy, a store hiccup): retried while
    /// attempts remain.
    #[error("retryable: {}", .0.message)]
    Retry(JobError),
    /// The input cannot be processed: failed at once and refunded.
    #[error("aborted: {}", .0.message)]
    Abort(JobError),
}

impl JobFailure {
    pub fn abort(code: &str, message: impl Into<String>) -> Self {
        Self::Abort(JobError {
            code: code.to_owned(),
            message: message.into(),
        })
    }

    pub fn retry(code: &str, message: impl Into<String>) -> Self {
        Self::Retry(JobError {
            code: code.to_owned(),
            message: message.into(),
        })
    }

    /// A blob store or scratch-file fault: worth another attempt.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        Self::retry("storage_error", e.to_string())
    }

    pub fn error(&self) -> &JobError {
        match self {
            JobFailure::Retry(e) | JobFailure::Abort(e) => e,
        }
    }
}

/// What a pipeline sees of the job it runs.
#[derive(Clone)]
pub struct JobContext {
    pub job: Arc<Job>,
    pub blobs: BlobStore,
    progress: Arc<AtomicI64>,
    cancelled: Arc<AtomicBool>,
}

impl JobContext {
    pub fn new(job: Job, blobs: BlobStore) -> Self {
        Self {
            job: Arc::new(job),
            blobs,
            progress: Arc::new(AtomicI64::new(-1)),
            cancelled: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Reports progress 0–100; the next heartbeat stores it.
    pub fn set_progress(&self, percent: i64) {
        self.progress
            .store(percent.clamp(0, 100), Ordering::Relaxed);
    }

    pub(crate) fn progress(&self) -> Option<i64> {
        let p = self.progress.load(Ordering::Relaxed);
        (p >= 0).then_some(p)
    }

    /// True once the job was cancelled or lost its lease; long loops check
    /// it and stop early (blocking engine code cannot be aborted otherwise).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// The job's payload as the pipeline's request type.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Result<T, JobFailure> {
        serde_json::from_value(self.job.payload.clone())
            .map_err(|e| JobFailure::abort("invalid_payload", e.to_string()))
    }

    /// The blob key for an output file of this job: `jobs/<id>/<name>`.
    pub fn output_key(&self, name: &str) -> String {
        format!("jobs/{}/{name}", self.job.id)
    }
}

/// The work behind one job kind.
#[async_trait::async_trait]
pub trait Pipeline: Send + Sync {
    /// The job kind this pipeline runs, e.g. `tts`.
    fn kind(&self) -> &'static str;

    /// Does the work and returns the job's `result`. Output URLs are written
    /// as `blob:<key>` and turned into signed URLs when the job is shown.
    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure>;
}

/// Pipelines by job kind.
#[derive(Clone, Default)]
pub struct Registry {
    pipelines: HashMap<&'static str, Arc<dyn Pipeline>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, pipeline: Arc<dyn Pipeline>) {
        self.pipelines.insert(pipeline.kind(), pipeline);
    }

    pub fn get(&self, kind: &str) -> Option<Arc<dyn Pipeline>> {
        self.pipelines.get(kind).cloned()
    }
}
