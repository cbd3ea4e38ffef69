//! `POST /v1/text-to-speech/stream`: audio sent as it is made, by a worker.
//! The request becomes a `tts` job marked `stream`; the worker that runs it
//! appends the encoded audio to the job's stream in the database piece by
//! piece, and this process reads the pieces in order and writes them to
//! the response as they come, woken by the worker's announcement (within a
//! process directly, from other processes through `NOTIFY` on PostgreSQL;
//! polling is the fallback). The response starts with the first audio, so
//! what goes wrong before it (the job failed, or no worker started it
//! within `sync_wait_seconds`: cancelled and refunded) is an ordinary
//! error answer. A client that disconnects has the bytes it took recorded
//! on the job: the worker stops at its next piece and the job is charged
//! for the sentences sent in full. Should the worker die mid-stream, the
//! job runs again elsewhere and completes with the whole audio at its
//! `audioUrl`, while this response ends where the first attempt stopped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use mediagen_core::job::{Job, JobStatus};
use mediagen_core::{ApiError, ErrorCode, JobId};
use mediagen_jobs::tts::TtsRequest;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::error::{ApiResult, Error};
use crate::extract::JobOptions;
use crate::jobs::{create, job_response, JobSpec};
use crate::middleware::Principal;
use crate::state::AppState;

pub async fn stream_tts(
    state: AppState,
    who: &Principal,
    opts: JobOptions,
    mut req: TtsRequest,
) -> ApiResult<Response> {
    req.stream = true;
    let content_type = req.format.content_type();
    let spec = JobSpec::of(&req, false)?;
    // Listening before the job exists: no announcement is missed.
    let heard = (
        state.events.subscribe_chunks(),
        state.events.subscribe_finished(),
    );
    let (job, fresh) = create(&state, who, opts, spec).await?;
    if !fresh {
        // A retry of a streamed request: the audio is in the job's result.
        return job_response(&state, job);
    }
    state.events.job_submitted();
    let mut relay = Relay::new(&state, job.clone(), heard);
    let wait = Duration::from_secs_f64(state.config.sync_wait_seconds);
    let first = match relay.next(Some(Instant::now() + wait)).await? {
        Next::Audio(bytes) => bytes,
        // Over before any audio: no stream to close.
        Next::End(job) => {
            relay.ended = true;
            return job_response(&state, *job);
        }
        Next::TimedOut => {
            relay.ended = true;
            return no_worker(&state, &job).await;
        }
    };
    let job_id = job.id.clone();
    let sent = relay.sent.clone();
    sent.fetch_add(first.len() as u64, Ordering::Relaxed);
    let rest = futures::stream::unfold(relay, |mut relay| async move {
        match relay.next(None).await {
            Ok(Next::Audio(bytes)) => {
                relay.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Some((Ok::<_, std::io::Error>(Bytes::from(bytes)), relay))
            }
            Ok(_) => {
                relay.ended().await;
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading a stream failed");
                Some((Err(std::io::Error::other("stream interrupted")), relay))
            }
        }
    });
    let body = futures::StreamExt::chain(
        futures::stream::once(async move { Ok(Bytes::from(first)) }),
        rest,
    );
    let mut response = Body::from_stream(body).into_response();
    *response.status_mut() = StatusCode::OK;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(&job_id) {
        h.insert("x-job-id", v);
    }
    Ok(response)
}

/// Speech answered whole rather than streamed: FLAC, whose header must
/// carry the length (STREAMINFO's sample count), which a stream cannot
/// know when it begins. The job is an ordinary `tts` job; its stored file
/// is the answer.
pub async fn whole_tts(
    state: AppState,
    who: &Principal,
    opts: JobOptions,
    req: TtsRequest,
) -> ApiResult<Response> {
    let content_type = req.format.content_type();
    let spec = JobSpec::of(&req, false)?;
    let (job, _) = create(&state, who, opts, spec).await?;
    state.events.job_submitted();
    let wait = Duration::from_secs_f64(state.config.sync_wait_seconds);
    let job = crate::jobs::wait_for(&state, job, wait).await?;
    let Some(output) = job
        .outputs
        .first()
        .filter(|_| job.status == JobStatus::Completed)
    else {
        return match job.status {
            JobStatus::Queued | JobStatus::Processing => no_worker(&state, &job).await,
            _ => job_response(&state, job),
        };
    };
    let audio = state.blobs.get_bytes(&output.key).await?;
    let mut response = Body::from(audio).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(job.id.as_str()) {
        h.insert("x-job-id", v);
    }
    Ok(response)
}

/// No worker began the speech in time: the job is cancelled (refunded)
/// and the client told to come back.
async fn no_worker(state: &AppState, job: &Job) -> ApiResult<Response> {
    state.db.cancel_job(&job.account_id, &job.id).await?;
    Err(Error::from(
        ApiError::new(ErrorCode::ServiceUnavailable).with_message(format!(
            "No worker began the speech within {} s; nothing was charged. Try again.",
            state.config.sync_wait_seconds
        )),
    )
    .with_retry_after(5))
}

/// How long a stream waits for an unreachable database before it is cut.
const RELAY_OUTAGE: Duration = Duration::from_secs(60);

/// What the stream holds next.
enum Next {
    Audio(Vec<u8>),
    /// The job's audio is all relayed (or the attempt followed is over).
    End(Box<Job>),
    TimedOut,
}

/// Follows one job's stream in the database.
struct Relay {
    state: AppState,
    job: Job,
    /// The attempt followed and the last piece relayed.
    attempt: Option<i64>,
    seq: Option<i64>,
    /// Bytes handed to the server for the client.
    sent: Arc<AtomicU64>,
    ended: bool,
    chunks: broadcast::Receiver<JobId>,
    finished: broadcast::Receiver<JobId>,
}

impl Relay {
    /// Follows `job`'s stream, woken by `chunks` and `finished` (subscribed
    /// before the job was created).
    fn new(
        state: &AppState,
        job: Job,
        (chunks, finished): (broadcast::Receiver<JobId>, broadcast::Receiver<JobId>),
    ) -> Self {
        Self {
            state: state.clone(),
            job,
            attempt: None,
            seq: None,
            sent: Arc::default(),
            ended: false,
            chunks,
            finished,
        }
    }

    /// The pieces not relayed yet, remembered as relayed (`None` when
    /// there are none), and whether a later attempt streams instead.
    async fn unrelayed(&mut self) -> Result<(Option<Vec<u8>>, bool), mediagen_store::StoreError> {
        let (chunks, superseded) = self
            .state
            .db
            .chunks_after(&self.job.id, self.attempt, self.seq)
            .await?;
        let Some(last) = chunks.last() else {
            return Ok((None, superseded));
        };
        self.attempt = Some(last.attempt);
        self.seq = Some(last.seq);
        Ok((
            Some(chunks.into_iter().flat_map(|c| c.data).collect()),
            superseded,
        ))
    }

    /// The next audio of the stream, waiting for it (until `deadline`),
    /// through a database outage of up to [`RELAY_OUTAGE`]: the pieces wait
    /// in the database, so the response goes on where it was once the
    /// database answers again.
    async fn next(
        &mut self,
        deadline: Option<Instant>,
    ) -> Result<Next, mediagen_store::StoreError> {
        let mut outage = mediagen_store::Outage::new(RELAY_OUTAGE);
        loop {
            match self.look(deadline).await {
                Err(e) if outage.wait_after(&e).await => {}
                done => return done,
            }
        }
    }

    /// [`Relay::next`], failing on the first database error.
    async fn look(
        &mut self,
        deadline: Option<Instant>,
    ) -> Result<Next, mediagen_store::StoreError> {
        let poll = Duration::from_millis(if self.state.events.relayed() {
            2000
        } else {
            200
        });
        let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline_or_never = deadline.unwrap_or(far);
        let id = self.job.id.clone();
        loop {
            let (audio, superseded) = self.unrelayed().await?;
            if let Some(audio) = audio {
                return Ok(Next::Audio(audio));
            }
            let Some(job) = self.state.db.job(&self.job.account_id, &id).await? else {
                return Ok(Next::End(Box::new(self.job.clone()))); // swept meanwhile
            };
            if superseded || job.status.is_terminal() {
                // Pieces are appended before the job finishes: one more
                // look finds any that came in between.
                if let (Some(audio), _) = self.unrelayed().await? {
                    return Ok(Next::Audio(audio));
                }
                return Ok(Next::End(Box::new(job)));
            }
            if Instant::now() >= deadline_or_never {
                return Ok(Next::TimedOut);
            }
            let (chunks, finished) = (&mut self.chunks, &mut self.finished);
            tokio::select! {
                _ = heard(chunks, &id) => {}
                _ = heard(finished, &id) => {}
                _ = tokio::time::sleep(poll) => {}
                _ = tokio::time::sleep_until(deadline_or_never) => {}
            }
        }
    }

    /// The stream was relayed to its end: its pieces are no longer needed.
    async fn ended(&mut self) {
        self.ended = true;
        if let Err(e) = self.state.db.drop_chunks(&self.job.id).await {
            tracing::warn!(error = %e, "a relayed stream's pieces were left to the sweep");
        }
    }
}

/// Waits until `rx` names job `id` (or missed some announcements).
async fn heard(rx: &mut broadcast::Receiver<JobId>, id: &JobId) {
    loop {
        match rx.recv().await {
            Ok(named) if &named == id => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

impl Drop for Relay {
    /// A response dropped before its end: the client went away. The bytes
    /// it took are recorded on the job; its worker stops and charges them.
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let (db, id) = (self.state.db.clone(), self.job.id.clone());
        let taken = self.sent.load(Ordering::Relaxed) as i64;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = db.close_stream(&id, taken).await {
                    tracing::warn!(error = %e, "recording a closed stream failed");
                }
            });
        }
    }
}
