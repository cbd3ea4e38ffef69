//! Streamed text to speech on a worker (`POST /v1/text-to-speech/stream`).
//! Each sentence is synthesized on a blocking thread and piped through an
//! ffmpeg encoder; every piece of encoded audio is appended to the job's
//! stream in the database at once, where the API process answering the
//! client reads it and relays it. The whole output is also stored, so the
//! job ends `completed` with an `audioUrl` like a non-streamed one. When
//! the client closes the stream early, the API records the bytes it took;
//! the worker stops at its next chunk and the job is charged for the
//! pieces (sentences and breaks) whose sound those bytes held in full, as
//! the format's own frames measure it (the rest is refunded).

use mediagen_core::ErrorCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::tts::Speak;
use mediagen_core::job::JobError;
use mediagen_media::audio::{resample, Audio};
use mediagen_media::frames;
use mediagen_media::media::{encoder_args, MediaError};
use mediagen_media::process::Scope;
use mediagen_media::AudioFormat;
use mediagen_speech::tts::TtsCatalog;
use mediagen_worker::{JobContext, JobFailure};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

use crate::encoders;
use crate::tts::TtsRequest;

/// Where the pieces (sentences and breaks) end in the audio (seconds),
/// and how many there are.
#[derive(Default)]
struct Sentences {
    ends: Vec<f64>,
    count: usize,
}

impl Sentences {
    /// Pieces sent in full when the client took `sent`, the start of the
    /// encoded stream, and how many there are. The audio `sent` holds is
    /// read from the format's own frames ([`frames::seconds_in`]): a
    /// piece counts once its whole sound was delivered, whatever the
    /// format, its bitrate or its sample rate (a 10-s break in FLAC is a
    /// few hundred bytes, and is delivered only once those frames are).
    fn delivered(&self, req: &TtsRequest, sent: &[u8]) -> (usize, usize) {
        let seconds = frames::seconds_in(req.format, sent, req.sample_rate);
        let done = self
            .ends
            .iter()
            .filter(|end| **end <= seconds + 0.05)
            .count();
        (done, self.count.max(done))
    }
}

/// The failure of a stream its client closed after `done` of `count`
/// pieces (sentences and breaks) were sent in full: charged for what
/// those pieces held (`weights`: each piece's characters as spoken), as
/// their share of the price (refunded in full when none was sent).
fn disconnected(req: &TtsRequest, weights: &[usize], (done, count): (usize, usize)) -> JobFailure {
    let message = format!(
        "The client closed the stream before the audio was complete ({done} of {count} \
         pieces sent; charged for those)."
    );
    let error = JobError::new(ErrorCode::ClientDisconnected, message);
    if done == 0 {
        return JobFailure::Abort(error);
    }
    let units = mediagen_core::JobRequest::units(req);
    JobFailure::Cut(error, delivered_units(units, weights, (done, count)))
}

/// The part of a stream's `units` that `done` of its `count` pieces hold:
/// the spoken characters of the pieces sent (`weights`), and of the rest
/// of the price (markup, line breaks: what no piece holds) their share by
/// count. By count alone where the weights could not be read.
fn delivered_units(units: f64, weights: &[usize], (done, count): (usize, usize)) -> f64 {
    let by_count = done as f64 / count.max(1) as f64;
    if weights.len() != count {
        return units * by_count;
    }
    let total: usize = weights.iter().sum();
    let sent: usize = weights[..done.min(count)].iter().sum();
    let rest = (units - total as f64).max(0.0);
    (sent as f64 + rest * by_count).min(units)
}

/// Runs a streamed `tts` job (see the module docs).
pub async fn run(
    catalog: Arc<TtsCatalog>,
    ctx: JobContext,
    req: TtsRequest,
) -> Result<Value, JobFailure> {
    let voice_rate = req.native_rate(&catalog);
    let styles = crate::tts::load_styles(&ctx, req.cloned.as_ref()).await?;
    // Raw PCM is made here, resampled to the rate asked for where the
    // voice's differs; every other format goes through an ffmpeg encoder,
    // whose start (about 0.1 s of a core) would otherwise come before the
    // first audio.
    let raw = (req.format == AudioFormat::Pcm).then_some(req.sample_rate);
    let (pcm_tx, pcm_rx) = mpsc::channel::<Vec<u8>>(8);
    let mut encoder = Encoder::start(&req, voice_rate, raw, pcm_rx, ctx.scope())?;

    // What each piece weighs in the price, for a stream closed early.
    let weights = catalog
        .piece_weights(req.speaker(), &req.text)
        .unwrap_or_default();
    // Synthesis, sentence by sentence, on a blocking thread.
    let stop = Arc::new(AtomicBool::new(false));
    let sentences = Arc::new(Mutex::new(Sentences::default()));
    let synth = ctx.blocking({
        let (r, stop, spoken, job) = (req.clone(), stop.clone(), sentences.clone(), ctx.clone());
        move || {
            r.speak(&catalog, styles.as_deref(), |i, n, audio| {
                job.set_progress(((i + 1) * 90 / n) as i64);
                if let Ok(mut s) = spoken.lock() {
                    let end = s.ends.last().copied().unwrap_or(0.0) + audio.duration();
                    s.ends.push(end);
                    s.count = n;
                }
                let pcm = match raw {
                    Some(rate) => {
                        Audio::new(resample(&audio.samples, audio.sample_rate, rate), rate)
                            .to_s16le()
                    }
                    None => audio.to_s16le(),
                };
                !stop.load(Ordering::Relaxed)
                    && !job.is_cancelled()
                    && pcm_tx.blocking_send(pcm).is_ok()
            })
            .map(|a| a.duration())
        }
    });
    // Encoded bytes into the stream, and kept for the stored copy.
    let mut all = Vec::new();
    let mut closed = None;
    let mut seq = 0;
    while let Some(piece) = encoder.next().await? {
        all.extend_from_slice(&piece);
        if let Some(taken) = ctx.stream_chunk(seq, &piece).await? {
            closed = Some(taken.max(0) as u64);
            break;
        }
        if seq == 0 {
            encoder.prepare_next();
        }
        seq += 1;
    }
    // The encoder ends first: a synthesis waiting to hand it a sentence
    // then stops.
    stop.store(true, Ordering::Relaxed);
    encoder.stop().await;
    let spoken = synth.await;
    if let Some(taken) = closed {
        let taken = all.get(..taken as usize).unwrap_or(&all);
        let sent = sentences
            .lock()
            .map(|s| s.delivered(&req, taken))
            .unwrap_or((0, 1));
        return Err(disconnected(&req, &weights, sent));
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

/// Most bytes one piece of the stream holds.
const PIECE: usize = 16 * 1024;

/// Where the stream's bytes come from.
pub(crate) enum Encoder {
    /// An ffmpeg encoder (started beforehand: [`encoders`]), fed 16-bit
    /// PCM at the voice's rate by a task of its own.
    Ffmpeg {
        process: encoders::Process,
        args: Vec<String>,
        stdout: ChildStdout,
        feed: tokio::task::JoinHandle<()>,
    },
    /// 16-bit PCM as it is made, in pieces of at most [`PIECE`] bytes.
    Raw {
        pcm: mpsc::Receiver<Vec<u8>>,
        pending: Vec<u8>,
    },
}

fn encoding(e: &dyn std::fmt::Display) -> JobFailure {
    JobFailure::retry(ErrorCode::EncodingFailed, e.to_string())
}

impl Encoder {
    /// Raw PCM at `raw`'s rate when given, else ffmpeg encoding the
    /// request's format from PCM at `voice_rate`.
    pub(crate) fn start(
        req: &TtsRequest,
        voice_rate: u32,
        raw: Option<u32>,
        mut pcm: mpsc::Receiver<Vec<u8>>,
        scope: &Scope,
    ) -> Result<Self, JobFailure> {
        if let Some(rate) = raw {
            if !req.format.sample_rates().contains(&rate) {
                let bad = MediaError::BadRate {
                    rate,
                    format: req.format.as_str(),
                };
                return Err(encoding(&bad));
            }
            return Ok(Self::Raw {
                pcm,
                pending: Vec::new(),
            });
        }
        let args =
            encoder_args(req.format, voice_rate, req.sample_rate).map_err(|e| encoding(&e))?;
        let mut process = encoders::take(args.clone(), scope).map_err(|e| encoding(&e))?;
        let (Some(stdin), Some(stdout)) = (process.stdin(), process.stdout()) else {
            return Err(encoding(&"the encoder has no pipes"));
        };
        let mut stdin = ChildStdin::from_std(stdin).map_err(|e| encoding(&e))?;
        let stdout = ChildStdout::from_std(stdout).map_err(|e| encoding(&e))?;
        let feed = tokio::spawn(async move {
            while let Some(bytes) = pcm.recv().await {
                if stdin.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });
        Ok(Self::Ffmpeg {
            process,
            args,
            stdout,
            feed,
        })
    }

    /// The next bytes of the stream; `None` at its end.
    pub(crate) async fn next(&mut self) -> Result<Option<Vec<u8>>, JobFailure> {
        match self {
            Self::Ffmpeg { stdout, .. } => {
                let mut buf = vec![0u8; PIECE];
                let n = stdout.read(&mut buf).await.map_err(|e| encoding(&e))?;
                buf.truncate(n);
                Ok((n > 0).then_some(buf))
            }
            Self::Raw { pcm, pending } => {
                if pending.is_empty() {
                    match pcm.recv().await {
                        Some(bytes) => *pending = bytes,
                        None => return Ok(None),
                    }
                }
                let rest = pending.split_off(pending.len().min(PIECE));
                Ok(Some(std::mem::replace(pending, rest)))
            }
        }
    }

    /// Starts the encoder the next stream like this one will take (see
    /// [`encoders::replenish`]): called once the first audio is out, so
    /// that its start neither delays this stream's first audio nor comes
    /// too late for a request sent as soon as this one ends.
    fn prepare_next(&self) {
        if let Self::Ffmpeg { args, .. } = self {
            encoders::replenish(args.clone());
        }
    }

    /// Ends the encoder: what it was still to take is refused.
    pub(crate) async fn stop(self) {
        if let Self::Ffmpeg {
            process,
            stdout,
            feed,
            ..
        } = self
        {
            drop(stdout);
            drop(process);
            let _ = feed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's stream (issue 70): a long head of twelve sentences then
    /// 600 short lines, closed after the head, pays for the head's
    /// characters, not for 12 pieces of 612.
    #[test]
    fn a_closed_stream_pays_for_what_its_pieces_held() {
        let mut weights = vec![265; 12];
        weights.extend(std::iter::repeat_n(2, 600));
        let total: usize = weights.iter().sum();
        assert_eq!(
            delivered_units(total as f64, &weights, (12, 612)),
            12.0 * 265.0
        );
        // The line breaks (4 each in the price) are no piece's: shared by
        // count.
        let units = (total + 4 * 600) as f64;
        let paid = delivered_units(units, &weights, (12, 612));
        assert!(
            (paid - (12.0 * 265.0 + 2400.0 * 12.0 / 612.0)).abs() < 1e-9,
            "{paid}"
        );
        // Without weights (none could be read): by count.
        assert_eq!(delivered_units(612.0, &[], (12, 612)), 12.0);
        assert_eq!(delivered_units(100.0, &[0, 0], (1, 2)), 50.0);
    }
}
