use mediagen_core::JobId;
use mediagen_core::{ErrorCode, JobKind};
use std::sync::Arc;
use std::time::Duration;

use mediagen_core::ids::random_base62;
use mediagen_core::job::{Job, JobOutput};
use mediagen_store::{BlobStore, Db, Outcome, StoreError, Wakeup};
use tokio::sync::{broadcast, watch, Notify, Semaphore};
use tracing::{error, info, warn, Instrument};

use crate::pipeline::public_error;
use crate::{JobContext, JobFailure, Registry, Retention};

/// Tunables of a worker.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs run at once by this process.
    pub concurrency: usize,
    /// How long a claim is valid without a heartbeat.
    pub lease: Duration,
    /// How often a running job's lease is extended.
    pub heartbeat: Duration,
    /// How often an idle worker looks for work (it is also woken directly
    /// when a job is created in the same process).
    pub poll: Duration,
    /// What the maintenance tick deletes, and when.
    pub retention: Retention,
    /// How long a job waits after its first retryable failure before it is
    /// claimed again; each later wait is twice the one before, at most
    /// [`MAX_RETRY_WAIT`].
    pub retry_backoff: Duration,
}

/// The longest wait between two attempts of a job.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

impl WorkerConfig {
    /// The wait before the attempt after attempt `attempts` (1 for the first).
    pub fn retry_wait(&self, attempts: i64) -> Duration {
        let doublings = attempts.clamp(1, 16) as u32 - 1;
        self.retry_backoff
            .saturating_mul(1 << doublings)
            .min(MAX_RETRY_WAIT)
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 2,
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(5),
            poll: Duration::from_millis(500),
            retention: Retention::default(),
            retry_backoff: Duration::from_secs(5),
        }
    }
}

/// Notifications between the API and the workers: within a process
/// directly, and (on PostgreSQL, after [`Events::relay`]) from every other
/// process through the database's `NOTIFY`. Polling remains the fallback.
#[derive(Clone)]
pub struct Events {
    submitted: Arc<Notify>,
    finished: broadcast::Sender<JobId>,
    chunks: broadcast::Sender<JobId>,
    /// The relay from other processes, stopped with the last clone.
    relay: Arc<std::sync::Mutex<Option<AbortOnDrop>>>,
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Default for Events {
    fn default() -> Self {
        Self {
            submitted: Arc::new(Notify::new()),
            finished: broadcast::channel(1024).0,
            chunks: broadcast::channel(1024).0,
            relay: Arc::default(),
        }
    }
}

impl Events {
    /// Wakes an idle worker: a job was queued.
    pub fn job_submitted(&self) {
        self.submitted.notify_one();
    }

    /// Receives the ids of finished jobs: those of this process's workers,
    /// and those of every process once relayed.
    pub fn subscribe_finished(&self) -> broadcast::Receiver<JobId> {
        self.finished.subscribe()
    }

    /// Tells this process's waits and workers that job `id` ended outside
    /// a worker (cancelled): a worker running it stops its work at once.
    /// Other processes hear it from the database (`mediagen_finished`).
    pub fn job_ended(&self, id: &JobId) {
        let _ = self.finished.send(id.clone());
    }

    /// Receives the ids of streamed jobs that wrote a chunk (here, and in
    /// every process once relayed).
    pub fn subscribe_chunks(&self) -> broadcast::Receiver<JobId> {
        self.chunks.subscribe()
    }

    /// Wakes the relays of streamed job `id`: it wrote a chunk.
    pub fn chunk_written(&self, id: &JobId) {
        let _ = self.chunks.send(id.clone());
    }

    /// Hears the other processes' announcements from the database (on
    /// PostgreSQL; nothing to hear on SQLite). Returns whether it does.
    pub async fn relay(&self, db: &Db) -> Result<bool, StoreError> {
        let (submitted, finished) = (self.submitted.clone(), self.finished.clone());
        let chunks = self.chunks.clone();
        let task = db
            .listen(move |wakeup| match wakeup {
                Wakeup::Queued(_) => submitted.notify_one(),
                Wakeup::Finished(id) => {
                    let _ = finished.send(JobId::from_stored(id));
                }
                Wakeup::Chunk(id) => {
                    let _ = chunks.send(JobId::from_stored(id));
                }
            })
            .await?;
        let relayed = task.is_some();
        *self.relay.lock().unwrap_or_else(|e| e.into_inner()) = task.map(AbortOnDrop);
        Ok(relayed)
    }

    /// Whether other processes' announcements are heard (polling is then
    /// only the fallback for missed ones).
    pub fn relayed(&self) -> bool {
        self.relay
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }
}

/// Claims and runs jobs until shut down.
#[derive(Clone)]
pub struct Worker {
    id: String,
    db: Db,
    blobs: BlobStore,
    registry: Registry,
    config: WorkerConfig,
    events: Events,
    /// Where its live sessions take their relays (a worker of session
    /// kinds).
    sessions: Option<crate::session::SessionHub>,
}

impl Worker {
    pub fn new(
        db: Db,
        blobs: BlobStore,
        registry: Registry,
        config: WorkerConfig,
        events: Events,
    ) -> Self {
        let id = format!("wrk_{}_{}", std::process::id(), random_base62(8));
        Self {
            id,
            db,
            blobs,
            registry,
            config,
            events,
            sessions: None,
        }
    }

    /// A worker whose sessions take their relays at `hub`.
    pub fn with_sessions(mut self, hub: crate::session::SessionHub) -> Self {
        self.sessions = Some(hub);
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs until `shutdown` turns true; running jobs are then left to their
    /// leases (another worker picks them up), which is what a crash does too.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        info!(worker = %self.id, concurrency = self.config.concurrency, "worker started");
        let slots = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        let mut reap_every = tokio::time::interval(self.config.lease.max(Duration::from_secs(1)));
        // Registered with the kinds it claims, refreshed every heartbeat:
        // the API reports which kinds have a live worker.
        let kinds = self.registry.kinds();
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        info!(worker = %self.id, kinds = %names.join(","), "claiming");
        let mut seen_every = tokio::time::interval(self.config.heartbeat);
        // Registered before the first claim.
        seen_every.tick().await;
        self.register(&kinds).await;
        // Woken by announcements when they are relayed: polling then only
        // catches missed ones and the jobs of workers that died.
        let poll = if self.events.relayed() {
            (self.config.poll * 10).min(Duration::from_secs(5))
        } else {
            self.config.poll
        };
        loop {
            if *shutdown.borrow() {
                break;
            }
            tokio::select! {
                _ = seen_every.tick() => self.register(&kinds).await,
                _ = reap_every.tick() => {
                    match self.db.reap_expired_jobs().await {
                        Ok(0) => {}
                        Ok(n) => warn!(failed = n, "failed jobs whose workers died on every attempt"),
                        Err(e) => error!(error = %e, "reaping expired jobs failed"),
                    }
                    if let Err(e) = self.db.prune_idempotency_keys().await {
                        error!(error = %e, "pruning expired idempotency keys failed");
                    }
                    if let Err(e) = self.db.prune_rate_limits(mediagen_core::time::now_ms() / 1000).await {
                        error!(error = %e, "pruning idle rate-limit counters failed");
                    }
                    let swept = crate::retention::sweep(&self.db, &self.blobs, self.config.retention).await;
                    if swept != Default::default() {
                        info!(jobs = swept.jobs, files = swept.files, "retention: deleted what expired");
                    }
                }
                permit = slots.clone().acquire_owned() => {
                    let Ok(permit) = permit else { break };
                    match self.db.claim_job(&self.id, self.config.lease.as_millis() as i64, &kinds).await {
                        Ok(Some(job)) => {
                            let this = self.clone();
                            let span = tracing::info_span!("job", id = %job.id, kind = %job.kind, attempt = job.attempts);
                            tokio::spawn(async move {
                                this.execute(job).await;
                                drop(permit);
                            }.instrument(span));
                            continue;
                        }
                        Ok(None) => drop(permit),
                        Err(e) => {
                            drop(permit);
                            error!(error = %e, "claiming a job failed");
                        }
                    }
                    // Idle until woken, the poll, or the registration is due
                    // (an idle worker stays registered).
                    tokio::select! {
                        _ = self.events.submitted.notified() => {}
                        _ = tokio::time::sleep(poll) => {}
                        _ = seen_every.tick() => self.register(&kinds).await,
                        _ = shutdown.changed() => {}
                    }
                }
                _ = shutdown.changed() => {}
            }
        }
        if let Err(e) = self.db.worker_gone(&self.id).await {
            warn!(error = %e, "unregistering the worker failed");
        }
        info!(worker = %self.id, "worker stopped");
    }

    /// Records this worker and its kinds as alive now.
    async fn register(&self, kinds: &[JobKind]) {
        let at = self.sessions.as_ref().map(|h| h.address());
        if let Err(e) = self.db.worker_seen(&self.id, kinds, at).await {
            error!(error = %e, "registering the worker failed");
        }
    }

    /// Runs one claimed job to its end.
    async fn execute(&self, job: Job) {
        let id = job.id.clone();
        let attempts = job.attempts;
        let timeout = Duration::from_millis(job.timeout_ms.max(1) as u64);
        let Some(pipeline) = self.registry.get(job.kind) else {
            let failure = JobFailure::abort(
                ErrorCode::UnsupportedJobKind,
                format!("no worker can run `{}` jobs", job.kind),
            );
            self.record(&id, attempts, Err(failure)).await;
            return;
        };
        let ctx = JobContext::new(job, self.blobs.clone())
            .with_ledger(self.db.clone(), &self.id)
            .with_events(self.events.clone())
            .with_sessions(self.sessions.clone());
        // The pipeline runs in its own task: a panic there becomes a failed
        // job, not a dead worker.
        let mut task = tokio::spawn({
            let ctx = ctx.clone();
            async move { pipeline.run(ctx).await }.in_current_span()
        });
        // A cancel is heard at once (from this process, or through the
        // database's announcement), not at the next heartbeat.
        let mut ended = self.events.subscribe_finished();
        let started = std::time::Instant::now();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut beat = tokio::time::interval(self.config.heartbeat);
        beat.tick().await;
        let outcome = loop {
            tokio::select! {
                joined = &mut task => {
                    break match joined {
                        Ok(result) => Some(result),
                        Err(e) if e.is_panic() => {
                            error!("pipeline panicked");
                            Some(Err(JobFailure::abort(ErrorCode::InternalError, "The job failed because of an internal error.")))
                        }
                        Err(_) => None,
                    };
                }
                _ = &mut deadline => {
                    ctx.cancel();
                    task.abort();
                    break Some(Err(JobFailure::abort(ErrorCode::JobTimeout, format!("The job did not finish within {} s.", timeout.as_secs()))));
                }
                Ok(done) = ended.recv() => {
                    if done == id {
                        info!("job ended elsewhere (cancelled); stopping its work");
                        ctx.cancel();
                        task.abort();
                        break None;
                    }
                }
                _ = beat.tick() => {
                    match self.db.heartbeat(&id, &self.id, self.config.lease.as_millis() as i64, ctx.progress(), ctx.used()).await {
                        Ok(true) => {}
                        Ok(false) => {
                            info!("job cancelled or lease lost; stopping it");
                            ctx.cancel();
                            task.abort();
                            break None;
                        }
                        Err(e) => warn!(error = %e, "heartbeat failed; retrying"),
                    }
                }
            }
        };
        let ms = started.elapsed().as_millis() as u64;
        match &outcome {
            Some(Ok(_)) => info!(ms, "job ran to completion"),
            Some(Err(e)) => info!(ms, code = %e.error().code, "job failed"),
            None => info!(ms, "job stopped"),
        }
        if let Some(result) = outcome {
            let result = result.map(|value| (value, ctx.outputs(), ctx.metered()));
            self.record(&id, attempts, result).await;
        }
        // The slot is given back once the job's work has stopped.
        ctx.work_stopped().await;
    }

    /// Stores the outcome; a retryable failure goes back to the queue while
    /// attempts remain, to be claimed again after [`WorkerConfig::retry_wait`].
    async fn record(
        &self,
        id: &JobId,
        attempts: i64,
        result: Result<(serde_json::Value, Vec<JobOutput>, Option<f64>), JobFailure>,
    ) {
        let stored: Result<bool, StoreError> = match result {
            Ok((value, outputs, metered)) => {
                self.db
                    .finish_job(id, &self.id, Outcome::Completed(value, outputs, metered))
                    .await
            }
            Err(JobFailure::Retry(e)) => match self
                .db
                .retry_job(
                    id,
                    &self.id,
                    &public_error(e.clone()),
                    self.config.retry_wait(attempts),
                )
                .await
            {
                Ok(true) => {
                    warn!(code = %e.code, "job failed; re-queued for another attempt");
                    self.events.job_submitted();
                    return;
                }
                Ok(false) => {
                    self.db
                        .finish_job(id, &self.id, Outcome::Failed(public_error(e)))
                        .await
                }
                Err(err) => Err(err),
            },
            Err(JobFailure::Abort(e)) => {
                self.db
                    .finish_job(id, &self.id, Outcome::Failed(public_error(e)))
                    .await
            }
            Err(JobFailure::Cut(e, units)) => {
                self.db
                    .finish_job(id, &self.id, Outcome::Cut(public_error(e), units))
                    .await
            }
        };
        match stored {
            Ok(true) => {
                let _ = self.events.finished.send(id.clone());
            }
            Ok(false) => info!("job was cancelled or taken over before it finished here"),
            Err(e) => {
                error!(error = %e, "recording the job outcome failed; its lease will expire and it will run again")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_back_off_doubling_to_a_minute() {
        let config = WorkerConfig::default();
        let waits: Vec<u64> = (1..=6).map(|a| config.retry_wait(a).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60]);
        assert_eq!(config.retry_wait(0), Duration::from_secs(5));
        assert_eq!(config.retry_wait(i64::MAX), MAX_RETRY_WAIT);
    }
}
