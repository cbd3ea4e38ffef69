//! The `test.sleep` job kind: exercises the queue, leases, retries and
//! credits before (and beside) the real capabilities. It is registered only
//! when the server runs with test jobs enabled, never in a default install.

use mediagen_core::{ErrorCode, JobKind, JobRequest};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{JobContext, JobFailure, RequestPipeline};

/// Sleeps for `ms` milliseconds in steps (reporting progress), then writes
/// `output` to a blob (its URL at `textUrl`) and copies `echo` into the
/// result, or fails as `fail` asks: `"abort"`, `"retry"`, or
/// `"panic"`.
pub struct SleepPipeline;

/// What a `test.sleep` job does.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SleepPayload {
    /// Milliseconds to sleep, in ten steps of progress.
    #[serde(default)]
    pub ms: u64,
    /// `abort`, `retry`, `refuse` or `panic`: how to fail after sleeping.
    #[serde(default)]
    pub fail: Option<String>,
    /// The text of its output file (`done` when absent).
    #[serde(default)]
    pub output: Option<String>,
    /// Copied into the result as sent (as speech copies its words and dubs
    /// their lines).
    #[serde(default)]
    pub echo: Option<Value>,
    /// Units it is priced on, as asked.
    #[serde(default)]
    pub units: f64,
    /// Milliseconds of blocking work first, which hears no cancel (an
    /// engine call that cannot be stopped): the worker's slot stays taken
    /// until it returns.
    #[serde(default)]
    pub block_ms: u64,
}

impl JobRequest for SleepPayload {
    const KIND: JobKind = JobKind::TestSleep;

    fn units(&self) -> f64 {
        self.units
    }

    fn media_seconds(&self) -> f64 {
        0.0
    }
}

#[async_trait::async_trait]
impl RequestPipeline for SleepPipeline {
    type Request = SleepPayload;

    async fn work(&self, ctx: JobContext, p: SleepPayload) -> Result<Value, JobFailure> {
        if p.block_ms > 0 {
            let ms = p.block_ms;
            let _ = ctx
                .blocking(move || std::thread::sleep(Duration::from_millis(ms)))
                .await;
        }
        let steps = 10u64;
        for i in 0..steps {
            if ctx.is_cancelled() {
                return Err(JobFailure::abort(ErrorCode::Cancelled, "job cancelled"));
            }
            tokio::time::sleep(Duration::from_millis(p.ms / steps)).await;
            ctx.set_progress(((i + 1) * 100 / steps) as i64);
        }
        match p.fail.as_deref() {
            Some("abort") => {
                return Err(JobFailure::abort(ErrorCode::TestFailure, "failed as asked"))
            }
            Some("retry") => {
                return Err(JobFailure::retry(
                    ErrorCode::TestTransient,
                    "transient failure as asked",
                ))
            }
            Some("refuse") => {
                return Err(JobFailure::refused(
                    mediagen_core::ApiError::unprocessable("fail", "refused as asked")
                        .with_detail("asked", "refuse"),
                ))
            }
            Some("panic") => panic!("test.sleep panicked as asked"),
            _ => {}
        }
        let text = p.output.unwrap_or_else(|| "done".to_owned());
        ctx.put_output("/textUrl", "output.txt", text.into())
            .await?;
        Ok(json!({ "sleptMs": p.ms, "attempt": ctx.job.attempts, "echo": p.echo }))
    }
}
