//! `POST /v1/text-to-speech/stream`: audio sent as it is made. The API
//! process runs the job itself (an "inline" job under its own lease, with
//! credits held like any job): each sentence is synthesized on a blocking
//! thread, piped through an ffmpeg encoder, and its bytes are written to the
//! response at once. The whole output is also stored, so the job ends
//! `completed` with an `audioUrl` like a non-streamed one. A client that
//! disconnects cancels the job and is charged for the sentences sent to it
//! in full (the rest is refunded); if this process dies the lease expires
//! and a worker finishes the job instead (charged once).

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use mediagen_core::ids::random_base62;
use mediagen_core::job::{Job, JobError, JobOutput};
use mediagen_engines::media::encoder_args;
use mediagen_engines::AudioFormat;
use mediagen_pipelines::tts::TtsRequest;
use mediagen_store::{content_type_for, Outcome};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::error::{ApiResult, Error};
use crate::extract::JobOptions;
use crate::jobs::{create, job_response, JobSpec};
use crate::middleware::Principal;
use crate::state::AppState;

type Chunk = Result<Bytes, std::io::Error>;

pub async fn stream_tts(
    state: AppState,
    who: &Principal,
    opts: JobOptions,
    req: TtsRequest,
) -> ApiResult<Response> {
    let owner = format!("stream_{}", random_base62(12));
    let lease_ms = (state.config.lease_seconds * 1000.0) as i64;
    let spec = JobSpec {
        kind: "tts",
        units: req.characters() as f64,
        payload: serde_json::to_value(&req).map_err(Error::internal)?,
        dry_run: false,
        media_seconds: 0.0,
    };
    let (job, fresh) = create(&state, who, opts, spec, Some((owner.clone(), lease_ms))).await?;
    if !fresh {
        // A retry of a streamed request: the audio is in the job's result.
        return job_response(&state, job);
    }
    let voice_rate = req.native_rate(&state.tts);
    let args = encoder_args(req.format, voice_rate, req.sample_rate).map_err(Error::internal)?;
    let mut encoder = tokio::process::Command::new("ffmpeg")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(Error::internal)?;
    let (body_tx, body_rx) = mpsc::channel::<Chunk>(32);
    let content_type = req.format.content_type();
    let job_id = job.id.clone();
    let run = Run {
        state,
        job,
        owner,
        lease_ms,
        cancelled: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicI64::new(0)),
        sent: Arc::new(AtomicU64::new(0)),
    };
    let sent = run.sent.clone();
    let stdin = encoder.stdin.take().expect("piped stdin");
    let stdout = encoder.stdout.take().expect("piped stdout");
    tokio::spawn(run.drive(req, encoder, stdin, stdout, body_tx));
    // Dropped by the server when the client goes away: the relay then sees
    // its sends fail and cancels the job.
    // What the server takes from here is what was sent (and is charged
    // for when the client leaves early).
    let stream = futures::stream::unfold(body_rx, move |mut rx| {
        let sent = sent.clone();
        async move {
            let chunk = rx.recv().await?;
            if let Ok(bytes) = &chunk {
                sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            }
            Some((chunk, rx))
        }
    });
    let mut response = Body::from_stream(stream).into_response();
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

struct Run {
    state: AppState,
    job: Job,
    owner: String,
    lease_ms: i64,
    cancelled: Arc<AtomicBool>,
    progress: Arc<AtomicI64>,
    /// Encoded bytes the server took for the client.
    sent: Arc<AtomicU64>,
}

/// Where the sentences end in the audio (seconds), and how many there are.
#[derive(Default)]
struct Sentences {
    ends: Vec<f64>,
    count: usize,
}

impl Run {
    async fn drive(
        self,
        req: TtsRequest,
        mut encoder: tokio::process::Child,
        mut stdin: tokio::process::ChildStdin,
        mut stdout: tokio::process::ChildStdout,
        body: mpsc::Sender<Chunk>,
    ) {
        let (pcm_tx, mut pcm_rx) = mpsc::channel::<Vec<u8>>(8);
        // Synthesis, sentence by sentence, on a blocking thread.
        let catalog = self.state.tts.clone();
        let (cancelled, progress) = (self.cancelled.clone(), self.progress.clone());
        let sentences = Arc::new(std::sync::Mutex::new(Sentences::default()));
        let spoken = sentences.clone();
        let r = req.clone();
        let synth = tokio::task::spawn_blocking(move || {
            r.speak(&catalog, |i, n, audio| {
                progress.store(((i + 1) * 90 / n) as i64, Ordering::Relaxed);
                if let Ok(mut s) = spoken.lock() {
                    let end = s.ends.last().copied().unwrap_or(0.0) + audio.duration();
                    s.ends.push(end);
                    s.count = n;
                }
                !cancelled.load(Ordering::Relaxed) && pcm_tx.blocking_send(audio.to_s16le()).is_ok()
            })
            .map(|a| a.duration())
        });
        // PCM into the encoder.
        let feed = tokio::spawn(async move {
            while let Some(pcm) = pcm_rx.recv().await {
                if stdin.write_all(&pcm).await.is_err() {
                    break;
                }
            }
            drop(stdin);
        });
        // Encoded bytes to the client, and kept for the stored copy.
        let cancelled = self.cancelled.clone();
        let relay = tokio::spawn(async move {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match stdout.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => {
                        all.extend_from_slice(&buf[..n]);
                        if body
                            .send(Ok(Bytes::copy_from_slice(&buf[..n])))
                            .await
                            .is_err()
                        {
                            cancelled.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = body.send(Err(e)).await;
                        break;
                    }
                }
            }
            all
        });
        let heartbeat = self.heartbeat();
        let outcome = tokio::select! {
            result = async {
                let duration = synth.await;
                let _ = feed.await;
                let bytes = relay.await;
                let _ = encoder.wait().await;
                (duration, bytes)
            } => Some(result),
            _ = heartbeat => None,
        };
        let _ = encoder.kill().await;
        let outcome = match outcome {
            None => return, // cancelled through the API or the lease was lost
            Some((Ok(Ok(duration)), Ok(bytes))) if !self.cancelled.load(Ordering::Relaxed) => {
                let key = format!("jobs/{}/{}", self.job.id, req.output_name());
                let size = bytes.len() as u64;
                match self.state.blobs.put(&key, bytes.into()).await {
                    Ok(()) => {
                        let mut result = req.result(duration);
                        result["streamed"] = json!(true);
                        let output = JobOutput {
                            field: "/audioUrl".into(),
                            content_type: content_type_for(&key).into(),
                            key,
                            size,
                        };
                        Outcome::Completed(result, vec![output], None)
                    }
                    Err(e) => failed("storage_error", &e.to_string()),
                }
            }
            Some(_) if self.cancelled.load(Ordering::Relaxed) => {
                let sent = self.sent.load(Ordering::Relaxed);
                let sentences = sentences.lock().map(|s| s.delivered(&req, sent));
                self.disconnected(&req, sentences.unwrap_or((0, 1)))
            }
            Some((synth, _)) => {
                let why = match synth {
                    Ok(Err(e)) => e.to_string(),
                    _ => "synthesis stopped".to_owned(),
                };
                failed("synthesis_failed", &why)
            }
        };
        if let Err(e) = self
            .state
            .db
            .finish_job(&self.job.id, &self.owner, outcome)
            .await
        {
            tracing::error!(job = %self.job.id, error = %e, "recording a streamed job failed; its lease will expire");
        }
    }

    /// The outcome of a stream the client closed after `done` of `count`
    /// sentences were sent in full: charged for those sentences' share of
    /// the text (refunded in full when none was).
    fn disconnected(&self, req: &TtsRequest, (done, count): (usize, usize)) -> Outcome {
        let message = format!(
            "The client closed the stream before the audio was complete ({done} of {count} \
             sentences sent; charged for those)."
        );
        let error = mediagen_worker::public_error(JobError {
            code: "client_disconnected".into(),
            message,
        });
        if done == 0 {
            return Outcome::Failed(error);
        }
        let units = req.characters() as f64 * done as f64 / count.max(1) as f64;
        Outcome::Cut(error, units)
    }

    /// Renews the lease until the job is cancelled (or taken over); then
    /// stops the synthesis and completes.
    async fn heartbeat(&self) {
        let every = Duration::from_secs_f64(self.state.config.heartbeat_seconds);
        loop {
            tokio::time::sleep(every).await;
            let progress = Some(self.progress.load(Ordering::Relaxed));
            match self
                .state
                .db
                .heartbeat(&self.job.id, &self.owner, self.lease_ms, progress)
                .await
            {
                Ok(false) => {
                    self.cancelled.store(true, Ordering::Relaxed);
                    return;
                }
                Ok(true) => {}
                Err(e) => tracing::warn!(error = %e, "stream heartbeat failed"),
            }
        }
    }
}

impl Sentences {
    /// Sentences sent in full when `sent` encoded bytes went out, and how
    /// many there are. Bytes become seconds at the format's nominal rate
    /// (lossless formats as 16-bit PCM, so a partial sentence is never
    /// counted as sent).
    fn delivered(&self, req: &TtsRequest, sent: u64) -> (usize, usize) {
        let header = if req.format == AudioFormat::Wav {
            44
        } else {
            0
        };
        let per_second = match req.format.bitrate_kbps() {
            Some(kbps) => f64::from(kbps) * 1000.0 / 8.0,
            None => f64::from(req.sample_rate) * 2.0,
        };
        let seconds = sent.saturating_sub(header) as f64 / per_second;
        let done = self
            .ends
            .iter()
            .filter(|end| **end <= seconds + 0.02)
            .count();
        (done, self.count.max(done))
    }
}

fn failed(code: &str, message: &str) -> Outcome {
    Outcome::Failed(mediagen_worker::public_error(JobError {
        code: code.to_owned(),
        message: message.to_owned(),
    }))
}
