use mediagen_core::{ErrorCode, JobKind, JobRequest};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use mediagen_probe::process::Scope;

use mediagen_core::job::{Job, JobError, JobOutput};
use mediagen_store::{content_type_for, BlobStore, Db};
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
    /// Stopped part-way by its client (a stream closed early): failed, and
    /// charged for the units of work delivered (refunded when none was).
    #[error("cut short: {}", .0.message)]
    Cut(JobError, f64),
}

impl JobFailure {
    pub fn abort(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Abort(JobError::new(code, message))
    }

    /// A refusal of the input as the API words it (code, message and
    /// details): final.
    pub fn refused(e: mediagen_core::ApiError) -> Self {
        Self::Abort(e.into())
    }

    pub fn retry(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Retry(JobError::new(code, message))
    }

    /// A blob store or scratch-file fault: worth another attempt. The
    /// store's own message (which names paths) is logged, not kept.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %e, "storage fault");
        Self::retry(
            ErrorCode::StorageError,
            "Storage was briefly unavailable while the job ran.",
        )
    }

    pub fn error(&self) -> &JobError {
        match self {
            JobFailure::Retry(e) | JobFailure::Abort(e) | JobFailure::Cut(e, _) => e,
        }
    }
}

/// The error as the job's owner sees it. A message that names a path (a
/// file of the server, a storage key) is replaced by a plain one and the
/// original is logged with the job: errors tell the client what happened,
/// never where the server keeps things.
pub fn public_error(e: JobError) -> JobError {
    // The tools the server runs, and how their ends read: never shown.
    const TOOLS: [&str; 7] = [
        "ffmpeg",
        "ffprobe",
        "espeak",
        "apertium",
        "prlimit",
        "exit status",
        "exit code",
    ];
    let lower = e.message.to_lowercase();
    let names_tool = TOOLS.iter().any(|t| lower.contains(t));
    let names_path = names_tool
        || e.message.split_whitespace().any(|token| {
            let token = token.trim_matches(|c: char| "'\"`()[]{},;:".contains(c));
            token.contains('/')
                && (token.starts_with('/')
                    || token.starts_with("./")
                    || token.contains("://")
                    || token.matches('/').count() >= 2)
        });
    if !names_path {
        return e;
    }
    tracing::warn!(code = %e.code, message = %e.message, "job error named a path or a tool; replaced");
    let message = format!(
        "The job failed ({}). Quote the job id when reporting it.",
        e.code.replace('_', " ")
    );
    JobError { message, ..e }
}

/// What a pipeline sees of the job it runs.
#[derive(Clone)]
pub struct JobContext {
    pub job: Arc<Job>,
    pub blobs: BlobStore,
    progress: Arc<AtomicI64>,
    /// The job's work: its tools are killed when it is cancelled.
    scope: Scope,
    outputs: Arc<std::sync::Mutex<Vec<JobOutput>>>,
    metered: Arc<std::sync::Mutex<Option<f64>>>,
    /// A live session's units delivered so far ([`JobContext::set_used`]).
    used: Arc<std::sync::Mutex<Option<f64>>>,
    ledger: Option<Ledger>,
    events: Option<crate::Events>,
    /// Where a live session's relay arrives (session workers only).
    sessions: Option<crate::session::SessionHub>,
    /// Held by each piece of blocking work the job started
    /// ([`JobContext::blocking`]): the worker's slot is free only once
    /// none is left ([`JobContext::work_stopped`]).
    working: Arc<AtomicI64>,
}

/// One piece of a job's blocking work, counted while it runs.
struct Working(Arc<AtomicI64>);

impl Working {
    fn start(count: &Arc<AtomicI64>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where a running job's hold is raised when it measures more work than
/// its estimate: the database, as the worker holding the job's lease.
#[derive(Clone)]
struct Ledger {
    db: Db,
    worker: String,
    runtime: tokio::runtime::Handle,
}

/// How long a streamed piece waits for an unreachable database before the
/// attempt fails (and is retried).
const STREAM_OUTAGE: std::time::Duration = std::time::Duration::from_secs(60);

impl JobContext {
    pub fn new(job: Job, blobs: BlobStore) -> Self {
        let scope = Scope::labelled(job.id.as_str());
        Self {
            job: Arc::new(job),
            blobs,
            progress: Arc::new(AtomicI64::new(-1)),
            scope,
            outputs: Arc::default(),
            metered: Arc::default(),
            used: Arc::default(),
            ledger: None,
            events: None,
            sessions: None,
            working: Arc::default(),
        }
    }

    /// A context whose session takes its relay at `hub`.
    pub fn with_sessions(mut self, hub: Option<crate::session::SessionHub>) -> Self {
        self.sessions = hub;
        self
    }

    /// The relay of this session job (the API connects once the job is
    /// claimed), waited for up to `within`; a failure when it does not
    /// come (the client left before it) or this worker takes no relays.
    pub async fn session_link(
        &self,
        within: std::time::Duration,
    ) -> Result<crate::session::Link, JobFailure> {
        let Some(hub) = &self.sessions else {
            return Err(JobFailure::abort(
                ErrorCode::InternalError,
                "This worker takes no session relays (sessions_bind is off).",
            ));
        };
        hub.wait_for(&self.job.id, within).await.ok_or_else(|| {
            JobFailure::abort(
                ErrorCode::Cancelled,
                "The session's client left before its relay was made.",
            )
        })
    }

    /// A context whose streamed chunks wake the relays of this process at
    /// once (others hear them through the database).
    pub fn with_events(mut self, events: crate::Events) -> Self {
        self.events = Some(events);
        self
    }

    /// Streams chunk `seq` of the job's output to the API process relaying
    /// it (through the database, keyed by this attempt), waiting through a
    /// database outage of up to [`STREAM_OUTAGE`] (the relay waits as
    /// long), so that a restart of the database does not cut the stream.
    /// Returns the bytes the client took when it has closed the stream:
    /// stop then.
    pub async fn stream_chunk(&self, seq: i64, data: &[u8]) -> Result<Option<i64>, JobFailure> {
        let Some(ledger) = &self.ledger else {
            return Ok(None);
        };
        let mut outage = mediagen_store::Outage::new(STREAM_OUTAGE);
        let closed = loop {
            match ledger
                .db
                .append_chunk(&self.job.id, self.job.attempts, seq, data)
                .await
            {
                Err(e) if outage.wait_after(&e).await => {}
                done => break done.map_err(JobFailure::storage)?,
            }
        };
        if let Some(events) = &self.events {
            events.chunk_written(&self.job.id);
        }
        Ok(closed)
    }

    /// A context whose measurements raise the job's hold in `db` at once
    /// (see [`JobContext::meter`]); `worker` holds the job's lease. Called
    /// within the runtime.
    pub fn with_ledger(mut self, db: Db, worker: &str) -> Self {
        self.ledger = Some(Ledger {
            db,
            worker: worker.to_owned(),
            runtime: tokio::runtime::Handle::current(),
        });
        self
    }

    /// Reports the units the job measured (seconds of sound actually
    /// decoded, say) as soon as it knows them, before the work: the job is
    /// charged for them instead of the estimate its hold was priced on (see
    /// `billing::measured_units`). When that is more than the hold, the
    /// hold is raised now, so the work is never done on credits the account
    /// does not have: a balance that cannot cover it fails the job with
    /// `insufficient_credits`, and the pipeline stops there.
    pub async fn meter(&self, units: f64) -> Result<(), JobFailure> {
        self.record_units(units);
        let Some(ledger) = &self.ledger else {
            return Ok(());
        };
        let covered = ledger
            .db
            .raise_hold(&self.job.id, &ledger.worker, units)
            .await
            .map_err(JobFailure::storage)?;
        if covered {
            Ok(())
        } else {
            Err(JobFailure::abort(
                ErrorCode::InsufficientCredits,
                "The work measured more than the estimate (an input longer than its header \
                 said, keyframes far from a cut, a larger picture) and the balance does not \
                 cover the difference, so the job stopped before its work. Nothing was charged.",
            ))
        }
    }

    /// [`JobContext::meter`] from blocking code (a `spawn_blocking`
    /// closure, never an async task).
    pub fn meter_blocking(&self, units: f64) -> Result<(), JobFailure> {
        match &self.ledger {
            Some(ledger) => ledger.runtime.block_on(self.meter(units)),
            None => {
                self.record_units(units);
                Ok(())
            }
        }
    }

    fn record_units(&self, units: f64) {
        if let Ok(mut m) = self.metered.lock() {
            *m = Some(units);
        }
    }

    /// The units reported with [`JobContext::meter`], if any.
    pub fn metered(&self) -> Option<f64> {
        self.metered.lock().ok().and_then(|m| *m)
    }

    /// A live session's units delivered so far (seconds of sound received,
    /// characters spoken); the next heartbeat stores them, and a session
    /// whose worker dies is charged them instead of refunded (at most one
    /// heartbeat's worth goes unpaid).
    pub fn set_used(&self, units: f64) {
        if let Ok(mut u) = self.used.lock() {
            *u = Some(units);
        }
    }

    pub(crate) fn used(&self) -> Option<f64> {
        self.used.lock().ok().and_then(|u| *u)
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
        self.scope.is_cancelled()
    }

    /// Stops the job's work: its tools are killed (each whole process
    /// group) and none starts after; engine loops see `is_cancelled`.
    pub(crate) fn cancel(&self) {
        self.scope.cancel();
    }

    /// The job's work scope (its tools' process groups).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Runs blocking work (engines, tools) on a blocking thread inside the
    /// job's scope: every tool it starts is killed when the job is
    /// cancelled, times out or loses its lease. It runs in the caller's
    /// tracing span (the job's), so an engine's logs name their job.
    pub fn blocking<R: Send + 'static>(
        &self,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> tokio::task::JoinHandle<R> {
        let scope = self.scope.clone();
        let working = Working::start(&self.working);
        let work = in_this_span(work);
        tokio::task::spawn_blocking(move || {
            let _entered = scope.enter();
            let _working = working;
            work()
        })
    }

    /// Waits until every piece of blocking work the job started has
    /// returned (after a cancel, engine loops stop at their next check):
    /// a worker takes no new job in this one's slot before, so a cancelled
    /// job's work never runs beside the next one's.
    pub async fn work_stopped(&self) {
        let started = std::time::Instant::now();
        while self.working.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let waited = started.elapsed();
        if waited > std::time::Duration::from_millis(500) {
            tracing::warn!(
                ms = waited.as_millis() as u64,
                "the job's work took this long to stop"
            );
        }
    }

    /// The job's payload as the pipeline's request type.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Result<T, JobFailure> {
        serde_json::from_value(self.job.payload.clone())
            .map_err(|e| JobFailure::abort(ErrorCode::InvalidPayload, e.to_string()))
    }

    /// A scratch directory for this attempt (removed when dropped) holding
    /// the blob `key` as `name`: tools read their inputs there, never in
    /// place ([`BlobStore::readable_file`]).
    pub async fn scratch_with(
        &self,
        key: &str,
        name: &str,
    ) -> Result<(tempfile::TempDir, std::path::PathBuf), JobFailure> {
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let file = self
            .blobs
            .readable_file(key, &dir.path().join(name))
            .await
            .map_err(JobFailure::storage)?;
        Ok((dir, file))
    }

    /// The blob key for a file of this job: `jobs/<id>/<name>`. Files
    /// stored under it without [`JobContext::put_output`] (a pipeline's own
    /// working state) never get a URL.
    pub fn output_key(&self, name: &str) -> String {
        format!("jobs/{}/{name}", self.job.id)
    }

    /// Stores an output file of this job as `jobs/<id>/<name>` and registers
    /// it: when the job is shown to its account, the file's signed URL is put
    /// at `field` (a JSON pointer into the result, such as `/audioUrl`).
    /// Returns the key.
    pub async fn put_output(
        &self,
        field: &str,
        name: &str,
        bytes: bytes::Bytes,
    ) -> Result<String, JobFailure> {
        let key = self.output_key(name);
        let size = bytes.len() as u64;
        self.blobs
            .put(&key, bytes)
            .await
            .map_err(JobFailure::storage)?;
        self.register_output(field, &key, size);
        Ok(key)
    }

    /// Stores a local file as an output of this job, in parts (see
    /// [`JobContext::put_output`]).
    pub async fn put_output_file(
        &self,
        field: &str,
        name: &str,
        file: &std::path::Path,
    ) -> Result<String, JobFailure> {
        let key = self.output_key(name);
        let size = std::fs::metadata(file).map_err(JobFailure::storage)?.len();
        self.blobs
            .put_file(&key, file)
            .await
            .map_err(JobFailure::storage)?;
        self.register_output(field, &key, size);
        Ok(key)
    }

    /// Registers a file already stored under this job's prefix (see
    /// [`JobContext::put_output`]).
    pub fn register_output(&self, field: &str, key: &str, size: u64) {
        debug_assert!(key.starts_with(&self.output_key("")), "{key}");
        let output = JobOutput {
            field: field.to_owned(),
            key: key.to_owned(),
            content_type: content_type_for(key).to_owned(),
            size,
        };
        let mut outputs = self.outputs.lock().unwrap_or_else(|e| e.into_inner());
        outputs.retain(|o| o.field != field);
        outputs.push(output);
    }

    /// The files registered so far.
    pub fn outputs(&self) -> Vec<JobOutput> {
        self.outputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// `work`, run inside the tracing span current where this is called,
/// on whatever thread it then runs.
pub fn in_this_span<R>(work: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let span = tracing::Span::current();
    move || span.in_scope(work)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_never_name_paths() {
        let e = |m: &str| public_error(JobError::new(ErrorCode::UnreadableMedia, m)).message;
        for leaky in [
            "ffmpeg: /srv/data/tmp/.tmpAbC/input: Invalid data",
            "Object at location jobs/job_x/speech.mp3 not found",
            "cannot open 'file:///etc/passwd'",
            "open ./scratch/x failed",
            "ffmpeg failed (exit status: 69)",
            "espeak-ng failed",
        ] {
            let m = e(leaky);
            assert!(!m.contains('/'), "{leaky} -> {m}");
            assert!(m.contains("unreadable media"), "{m}");
        }
        for plain in [
            "the file has no sound",
            "speed must be between 0.5 and 2 (got 3/1)",
        ] {
            assert_eq!(e(plain), plain);
        }
    }

    #[test]
    fn blocking_work_logs_in_its_job_s_span() {
        use std::sync::Mutex;
        /// The log's lines, as the server's subscriber would write them.
        #[derive(Clone, Default)]
        struct Log(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Log {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let log = Log::default();
        let writer = log.clone();
        // Global, as the server's is: a thread of its own logs there.
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        let span = tracing::info_span!("job", id = "job_1");
        span.in_scope(|| {
            let work = in_this_span(|| tracing::info!("the engine speaks"));
            std::thread::spawn(work).join().unwrap();
            std::thread::spawn(|| tracing::info!("a bare thread speaks"))
                .join()
                .unwrap();
        });
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        let line = |m: &str| {
            text.lines()
                .find(|l| l.contains(m))
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            line("the engine speaks").contains("job{id=\"job_1\"}"),
            "{text}"
        );
        assert!(!line("a bare thread speaks").contains("job{"), "{text}");
    }
}

/// The work behind one job kind.
#[async_trait::async_trait]
pub trait Pipeline: Send + Sync {
    /// The job kind this pipeline runs.
    fn kind(&self) -> JobKind;

    /// Does the work and returns the job's `result`. Output files are stored
    /// with [`JobContext::put_output`], which says where in the result their
    /// URLs go; the result itself never holds a storage key.
    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure>;
}

/// A pipeline typed by its request: it runs the request's kind
/// ([`JobRequest::KIND`]) and is handed the request parsed from the job's
/// payload (a payload that is not one fails the job, `invalid_payload`).
/// Every such pipeline is a [`Pipeline`].
#[async_trait::async_trait]
pub trait RequestPipeline: Send + Sync {
    type Request: JobRequest;

    /// Does the work of `request` (see [`Pipeline::run`]).
    async fn work(&self, ctx: JobContext, request: Self::Request) -> Result<Value, JobFailure>;
}

#[async_trait::async_trait]
impl<P: RequestPipeline> Pipeline for P {
    fn kind(&self) -> JobKind {
        P::Request::KIND
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let request = ctx.payload::<P::Request>()?;
        self.work(ctx, request).await
    }
}

/// Pipelines by job kind.
#[derive(Clone, Default)]
pub struct Registry {
    pipelines: HashMap<JobKind, Arc<dyn Pipeline>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, pipeline: Arc<dyn Pipeline>) {
        self.pipelines.insert(pipeline.kind(), pipeline);
    }

    pub fn get(&self, kind: JobKind) -> Option<Arc<dyn Pipeline>> {
        self.pipelines.get(&kind).cloned()
    }

    /// The kinds registered, in [`JobKind::ALL`]'s order.
    pub fn kinds(&self) -> Vec<JobKind> {
        let mut kinds: Vec<JobKind> = self.pipelines.keys().copied().collect();
        kinds.sort_unstable();
        kinds
    }

    /// The live-session kinds ([`JobKind::is_session`]) apart from the
    /// others: the first is run by the session slots, the second by the
    /// job slots.
    pub fn split_sessions(mut self) -> (Self, Self) {
        let sessions = self
            .pipelines
            .iter()
            .filter(|(k, _)| k.is_session())
            .map(|(k, p)| (*k, p.clone()))
            .collect();
        self.pipelines.retain(|k, _| !k.is_session());
        (
            Self {
                pipelines: sessions,
            },
            self,
        )
    }

    /// Keeps only `kinds` (a worker specialised to them); an empty list
    /// keeps every kind. A kind this build cannot run is an error naming
    /// the ones it can.
    pub fn only(mut self, kinds: &[JobKind]) -> Result<Self, String> {
        if kinds.is_empty() {
            return Ok(self);
        }
        if let Some(unknown) = kinds.iter().find(|k| !self.pipelines.contains_key(k)) {
            let runs: Vec<&str> = self.kinds().into_iter().map(JobKind::name).collect();
            return Err(format!(
                "this build runs no `{unknown}` jobs (it runs: {})",
                runs.join(", ")
            ));
        }
        self.pipelines.retain(|k, _| kinds.contains(k));
        Ok(self)
    }
}
