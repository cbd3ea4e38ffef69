//! Streamed text to speech on a worker (`POST /v1/text-to-speech/stream`).
//! Each sentence is synthesized on a blocking thread and piped through an
//! ffmpeg encoder; every piece of encoded audio is appended to the job's
//! stream in the database at once, where the API process answering the
//! client reads it and relays it. The whole output is also stored, so the
//! job ends `completed` with an `audioUrl` like a non-streamed one. When
//! the client closes the stream early, the API records the bytes it took;
//! the worker stops at its next chunk and the job is charged for the
//! sentences those bytes held in full (the rest is refunded).

use mediagen_core::ErrorCode;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::tts::Speak;
use mediagen_core::job::JobError;
use mediagen_media::media::encoder_args;
use mediagen_media::AudioFormat;
use mediagen_speech::tts::TtsCatalog;
use mediagen_worker::{JobContext, JobFailure};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::tts::TtsRequest;

/// Where the sentences end in the audio (seconds), and how many there are.
#[derive(Default)]
struct Sentences {
    ends: Vec<f64>,
    count: usize,
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

/// The failure of a stream its client closed after `done` of `count`
/// sentences were sent in full: charged for those sentences' share of the
/// text (refunded in full when none was).
fn disconnected(req: &TtsRequest, (done, count): (usize, usize)) -> JobFailure {
    let message = format!(
        "The client closed the stream before the audio was complete ({done} of {count} \
         sentences sent; charged for those)."
    );
    let error = JobError::new(ErrorCode::ClientDisconnected, message);
    if done == 0 {
        return JobFailure::Abort(error);
    }
    let units = req.characters() as f64 * done as f64 / count.max(1) as f64;
    JobFailure::Cut(error, units)
}

/// Runs a streamed `tts` job (see the module docs).
pub async fn run(
    catalog: Arc<TtsCatalog>,
    ctx: JobContext,
    req: TtsRequest,
) -> Result<Value, JobFailure> {
    let encoding =
        |e: &dyn std::fmt::Display| JobFailure::retry(ErrorCode::EncodingFailed, e.to_string());
    let voice_rate = req.native_rate(&catalog);
    let args = encoder_args(req.format, voice_rate, req.sample_rate).map_err(|e| encoding(&e))?;
    let mut encoder = tokio::process::Command::new("ffmpeg")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| encoding(&e))?;
    let mut stdin = encoder.stdin.take().expect("piped stdin");
    let mut stdout = encoder.stdout.take().expect("piped stdout");

    // Synthesis, sentence by sentence, on a blocking thread.
    let (pcm_tx, mut pcm_rx) = mpsc::channel::<Vec<u8>>(8);
    let stop = Arc::new(AtomicBool::new(false));
    let sentences = Arc::new(Mutex::new(Sentences::default()));
    let synth = tokio::task::spawn_blocking({
        let (r, stop, spoken, job) = (req.clone(), stop.clone(), sentences.clone(), ctx.clone());
        move || {
            r.speak(&catalog, |i, n, audio| {
                job.set_progress(((i + 1) * 90 / n) as i64);
                if let Ok(mut s) = spoken.lock() {
                    let end = s.ends.last().copied().unwrap_or(0.0) + audio.duration();
                    s.ends.push(end);
                    s.count = n;
                }
                !stop.load(Ordering::Relaxed)
                    && !job.is_cancelled()
                    && pcm_tx.blocking_send(audio.to_s16le()).is_ok()
            })
            .map(|a| a.duration())
        }
    });
    // PCM into the encoder.
    let feed = tokio::spawn(async move {
        while let Some(pcm) = pcm_rx.recv().await {
            if stdin.write_all(&pcm).await.is_err() {
                break;
            }
        }
    });
    // Encoded bytes into the stream, and kept for the stored copy.
    let mut all = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut closed = None;
    let mut seq = 0;
    loop {
        let n = stdout.read(&mut buf).await.map_err(|e| encoding(&e))?;
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
        if let Some(taken) = ctx.stream_chunk(seq, &buf[..n]).await? {
            closed = Some(taken.max(0) as u64);
            break;
        }
        seq += 1;
    }
    stop.store(true, Ordering::Relaxed);
    drop(stdout);
    let spoken = synth.await;
    let _ = feed.await;
    let _ = encoder.kill().await;
    if let Some(taken) = closed {
        let sent = sentences
            .lock()
            .map(|s| s.delivered(&req, taken))
            .unwrap_or((0, 1));
        return Err(disconnected(&req, sent));
    }
    let duration = match spoken {
        Ok(Ok(duration)) => duration,
        Ok(Err(e)) => return Err(JobFailure::abort(ErrorCode::SynthesisFailed, e.to_string())),
        Err(e) => return Err(JobFailure::abort(ErrorCode::InternalError, e.to_string())),
    };
    ctx.put_output("/audioUrl", &req.output_name(), all.into())
        .await?;
    let mut result = req.result(duration);
    result["streamed"] = json!(true);
    Ok(result)
}
