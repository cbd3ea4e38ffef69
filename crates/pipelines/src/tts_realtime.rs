//! `tts.realtime`: speech from streamed text. Text arrives over the
//! session's relay ([`mediagen_worker::session`]) as a language model
//! writes it; each whole sentence (or a long run's clause) is spoken as it
//! is complete, or at the client's `flush`, and its sound goes back as
//! binary frames in the session's format, after an `audio` event with its
//! text and character times.
//!
//! The work is bounded whatever the client sends: at most [`MAX_TEXT`](mediagen_jobs::tts::MAX_TEXT)
//! characters wait unspoken, at most [`QUEUED`] pieces wait for the
//! engine, the engine waits for the client to take the sound (a client
//! that reads no faster ends the session), and the session is charged per
//! character spoken, its hold kept [`HOLD_AHEAD`] characters ahead of the
//! text sent to the engine.

use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use mediagen_core::ErrorCode;
use mediagen_media::audio::{resample, Audio};
use mediagen_media::AudioFormat;
use mediagen_speech::tts::{ssml, TtsCatalog, TtsError};
use mediagen_worker::session::{Incoming, Link, Outgoing};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::tts::{load_styles, Speak};
use crate::tts_stream::Encoder;
use mediagen_jobs::stt_realtime::close;
pub use mediagen_jobs::tts_realtime::*;

/// Pieces waiting for the engine; past this the session ends (1013).
const QUEUED: usize = 64;
/// The largest binary frame sent (bytes).
const FRAME_BYTES: usize = 32 * 1024;
/// How long the worker waits for the API's relay after the claim.
const RELAY_WITHIN: Duration = Duration::from_secs(10);
/// The longest a message waits for the client to take it.
const SEND_WITHIN: Duration = Duration::from_secs(5);

pub struct LiveTtsPipeline {
    pub catalog: Arc<TtsCatalog>,
}

/// A piece spoken: what the client hears of it.
struct Spoken {
    text: String,
    /// Characters it is priced on.
    priced: usize,
    duration: f64,
    /// 16-bit PCM for the encoder.
    pcm: Vec<u8>,
}

/// What the engine thread reports.
enum Said {
    Spoken(Spoken),
    /// A piece the voice cannot speak (the session goes on).
    Unspeakable(String),
    Failed(String),
}

/// How a session ended.
struct Ended {
    code: u16,
    reason: String,
    characters: usize,
    seconds: f64,
}

#[async_trait::async_trait]
impl RequestPipeline for LiveTtsPipeline {
    type Request = LiveTtsRequest;

    async fn work(&self, ctx: JobContext, req: LiveTtsRequest) -> Result<Value, JobFailure> {
        let styles = load_styles(&ctx, req.voice.cloned.as_ref()).await?;
        let link = ctx.session_link(RELAY_WITHIN).await?;
        let ended = run(&ctx, &req, self.catalog.clone(), styles, link).await;
        ctx.meter(ended.characters as f64).await.ok();
        let result = json!({
            "characters": ended.characters,
            "seconds": (ended.seconds * 1000.0).round() / 1000.0,
            "closeCode": ended.code,
            "closeReason": ended.reason,
        });
        if ended.code == close::NO_CREDITS {
            return Err(JobFailure::Cut(
                mediagen_core::job::JobError::new(ErrorCode::InsufficientCredits, ended.reason),
                ended.characters as f64,
            ));
        }
        Ok(result)
    }
}

/// What the client asks.
enum Control {
    Text(String, bool),
    Flush,
    Finish,
}

fn control(text: &str) -> Option<Control> {
    let v: Value = serde_json::from_str(text).ok()?;
    match v.get("type")?.as_str()? {
        "text" => Some(Control::Text(
            v.get("text")?.as_str()?.to_owned(),
            v.get("flush").and_then(Value::as_bool).unwrap_or(false),
        )),
        "flush" => Some(Control::Flush),
        "finish" => Some(Control::Finish),
        _ => None,
    }
}

/// The session: text in, sound out, until the client leaves or finishes,
/// idles, runs out of credits or the job is stopped.
async fn run(
    ctx: &JobContext,
    req: &LiveTtsRequest,
    catalog: Arc<TtsCatalog>,
    styles: Option<Vec<f32>>,
    link: Link,
) -> Ended {
    let Link {
        mut incoming,
        outgoing,
    } = link;
    let voice = &req.voice;
    let raw = (voice.format == AudioFormat::Pcm).then_some(voice.sample_rate);
    let (pcm_tx, pcm_rx) = mpsc::channel::<Vec<u8>>(4);
    let mut pcm_tx = Some(pcm_tx);
    let mut encoder =
        match Encoder::start(voice, voice.native_rate(&catalog), raw, pcm_rx, ctx.scope()) {
            Ok(e) => Some(e),
            Err(_) => {
                return finish(
                    &outgoing,
                    close::INTERNAL,
                    "The encoder did not start.".into(),
                    0,
                    0.0,
                )
                .await
            }
        };
    let language = catalog
        .voice(voice.speaker())
        .map(|v| v.language.clone())
        .unwrap_or_default();
    // Each piece with the characters it is priced on; the session's last
    // piece is followed by the channel's close.
    let (pieces, queue) = sync_channel::<(String, usize)>(QUEUED);
    let mut pieces = Some(pieces);
    let (said_tx, mut said) = mpsc::channel::<Said>(2);
    let engine = {
        let (voice, ctx2) = (voice.clone(), ctx.clone());
        ctx.blocking(move || {
            speak_pieces(
                &voice,
                &catalog,
                styles.as_deref(),
                &queue,
                &said_tx,
                &|| ctx2.is_cancelled(),
            )
        })
    };
    let say = |event: Value| {
        let outgoing = outgoing.clone();
        async move {
            matches!(
                tokio::time::timeout(
                    SEND_WITHIN,
                    outgoing.send(Outgoing::Text(event.to_string()))
                )
                .await,
                Ok(Ok(()))
            )
        }
    };
    say(json!({
        "type": "session.started",
        "sessionId": ctx.job.id.as_str(),
        "voiceId": voice.voice_id,
        "format": voice.format.as_str(),
        "sampleRate": voice.sample_rate,
    }))
    .await;
    let idle = Duration::from_secs_f64(req.idle_seconds.max(1.0));
    let longest = Duration::from_millis(ctx.job.timeout_ms.max(0) as u64)
        .saturating_sub(Duration::from_secs(2));
    let deadline = tokio::time::sleep(longest);
    tokio::pin!(deadline);
    let mut pending = Pending::default();
    let (mut queued, mut held) = (0usize, HOLD_AHEAD);
    let (mut characters, mut seconds, mut count) = (0usize, 0.0f64, 0usize);
    let (mut finishing, mut spoken_all) = (false, false);
    // Sound the encoder had no room for yet.
    let mut backlog: Option<Vec<u8>> = None;
    let (code, reason) = loop {
        tokio::select! {
            _ = &mut deadline => break (
                close::TIMED_OUT,
                format!("The session reached its longest length, {} s.", longest.as_secs()),
            ),
            frame = tokio::time::timeout(idle, incoming.recv()), if !finishing => {
                let (text, flush, last) = match frame {
                    Err(_) => break (close::TIMED_OUT, format!("No message for {} s.", idle.as_secs())),
                    Ok(None) => break (close::NORMAL, "The client left.".to_owned()),
                    Ok(Some(Incoming::Binary(_))) => break (
                        close::BAD_MESSAGE,
                        "Text comes in JSON messages: {\"type\":\"text\",\"text\":…}.".to_owned(),
                    ),
                    Ok(Some(Incoming::Text(t))) => match control(&t) {
                        Some(Control::Text(text, flush)) => (text, flush, false),
                        Some(Control::Flush) => (String::new(), true, false),
                        Some(Control::Finish) => (String::new(), true, true),
                        None => break (
                            close::BAD_MESSAGE,
                            "A message is a JSON object of type text, flush or finish.".to_owned(),
                        ),
                    },
                };
                if let Err(e) = pending.push(&text) {
                    break (close::BAD_MESSAGE, e.message);
                }
                let mut refused = None;
                for piece in pending.take(flush) {
                    // Markup would price a few characters for long breaks:
                    // a session reads plain text only.
                    if ssml::is_ssml(&piece) {
                        let message = "SSML is not read in a live session; send plain text.";
                        say(json!({"type": "error", "code": "voice_cannot_speak", "message": message})).await;
                        continue;
                    }
                    let priced = ssml::priced_characters(&piece, &language).max(piece.chars().count());
                    queued += priced;
                    if queued as f64 + HOLD_AHEAD / 3.0 > held {
                        held = queued as f64 + HOLD_AHEAD;
                        if ctx.meter(held).await.is_err() {
                            refused = Some((
                                close::NO_CREDITS,
                                format!("The balance does not cover more text; {characters} characters spoken were charged."),
                            ));
                            break;
                        }
                    }
                    let Some(tx) = &pieces else { break };
                    match tx.try_send((piece, priced)) {
                        Ok(()) => {}
                        Err(TrySendError::Full(_)) => {
                            refused = Some((
                                close::OVERLOADED,
                                format!("More than {QUEUED} pieces wait for the voice; try again later."),
                            ));
                            break;
                        }
                        Err(TrySendError::Disconnected(_)) => {
                            refused = Some((close::INTERNAL, "The voice stopped.".to_owned()));
                            break;
                        }
                    }
                }
                if let Some(end) = refused {
                    break end;
                }
                if last {
                    // The engine speaks what it was given, then sees the
                    // queue closed.
                    finishing = true;
                    pieces = None;
                }
            }
            permit = reserve(&pcm_tx), if backlog.is_some() => match (permit, backlog.take()) {
                (Some(permit), Some(pcm)) => permit.send(pcm),
                _ => break (close::INTERNAL, "The encoder stopped.".to_owned()),
            },
            s = said.recv(), if !spoken_all && backlog.is_none() => match s {
                Some(Said::Spoken(s)) => {
                    let (chars, starts, lengths) = char_times(&s.text, s.duration);
                    let sent = say(json!({
                        "type": "audio",
                        "piece": count,
                        "text": s.text,
                        "start": (seconds * 1000.0).round() / 1000.0,
                        "duration": (s.duration * 1000.0).round() / 1000.0,
                        "alignment": {"chars": chars, "charStartTimesMs": starts, "charDurationsMs": lengths},
                    }))
                    .await;
                    if !sent {
                        break (close::BAD_MESSAGE, "The client did not read its audio.".to_owned());
                    }
                    count += 1;
                    characters += s.priced;
                    ctx.set_used(characters as f64);
                    seconds += s.duration;
                    // The encoder takes it when it can; meanwhile its
                    // output is read on.
                    match pcm_tx.as_ref().map(|tx| tx.try_send(s.pcm)) {
                        Some(Ok(())) => {}
                        Some(Err(mpsc::error::TrySendError::Full(pcm))) => backlog = Some(pcm),
                        _ => break (close::INTERNAL, "The encoder stopped.".to_owned()),
                    }
                }
                Some(Said::Unspeakable(message)) => {
                    say(json!({"type": "error", "code": "voice_cannot_speak", "message": message})).await;
                }
                Some(Said::Failed(message)) => break (close::INTERNAL, message),
                None => {
                    // The engine is done (finished, or stopped): the
                    // encoder ends once it has sent what it was given.
                    spoken_all = true;
                }
            },
            bytes = next_bytes(&mut encoder) => match bytes {
                Some(bytes) => {
                    let mut taken = true;
                    for frame in bytes.chunks(FRAME_BYTES) {
                        let sent = tokio::time::timeout(SEND_WITHIN, outgoing.send(Outgoing::Binary(frame.to_vec()))).await;
                        taken = matches!(sent, Ok(Ok(())));
                        if !taken {
                            break;
                        }
                    }
                    if !taken {
                        break (close::BAD_MESSAGE, "The client did not read its audio.".to_owned());
                    }
                }
                None if spoken_all => break (close::NORMAL, "The session ended.".to_owned()),
                None => break (close::INTERNAL, "The encoder stopped.".to_owned()),
            },
        }
        if spoken_all {
            pcm_tx = None;
        }
        if ctx.is_cancelled() {
            break (close::NORMAL, "The session was cancelled.".to_owned());
        }
    };
    // The engine stops at its next check; so does the encoder.
    drop(pieces);
    ctx.scope().cancel();
    drop(said);
    let _ = engine.await;
    if let Some(e) = encoder.take() {
        e.stop().await;
    }
    finish(&outgoing, code, reason, characters, seconds).await
}

/// Room for one more piece of sound in the encoder's queue.
async fn reserve(tx: &Option<mpsc::Sender<Vec<u8>>>) -> Option<mpsc::Permit<'_, Vec<u8>>> {
    tx.as_ref()?.reserve().await.ok()
}

/// The encoder's next bytes; pending forever once it is gone.
async fn next_bytes(encoder: &mut Option<Encoder>) -> Option<Vec<u8>> {
    match encoder {
        Some(e) => e.next().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Says the session's end and closes it.
async fn finish(
    outgoing: &mpsc::Sender<Outgoing>,
    code: u16,
    reason: String,
    characters: usize,
    seconds: f64,
) -> Ended {
    let ended = json!({"type": "session.ended", "characters": characters, "seconds": seconds});
    let _ = outgoing.try_send(Outgoing::Text(ended.to_string()));
    let _ = outgoing.try_send(Outgoing::Close(code, reason.clone()));
    Ended {
        code,
        reason,
        characters,
        seconds,
    }
}

/// The engine's side: speaks each piece as it comes, until the queue is
/// closed and empty, or `stopped`.
fn speak_pieces(
    voice: &mediagen_jobs::tts::TtsRequest,
    catalog: &TtsCatalog,
    styles: Option<&[f32]>,
    queue: &Receiver<(String, usize)>,
    said: &mpsc::Sender<Said>,
    stopped: &dyn Fn() -> bool,
) {
    let raw = (voice.format == AudioFormat::Pcm).then_some(voice.sample_rate);
    loop {
        if stopped() {
            return;
        }
        let (piece, priced) = match queue.recv_timeout(Duration::from_millis(100)) {
            Ok(piece) => piece,
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => continue,
        };
        let mut r = voice.clone();
        r.priced = priced;
        r.text = piece;
        let report = match r.speak(catalog, styles, |_, _, _| !stopped()) {
            Ok(audio) => {
                let pcm = match raw {
                    Some(rate) => {
                        Audio::new(resample(&audio.samples, audio.sample_rate, rate), rate)
                            .to_s16le()
                    }
                    None => audio.to_s16le(),
                };
                Said::Spoken(Spoken {
                    priced,
                    duration: audio.duration(),
                    text: r.text,
                    pcm,
                })
            }
            Err(TtsError::Cancelled) => return,
            Err(TtsError::Unreadable(m)) => Said::Unspeakable(m),
            Err(e @ TtsError::PhonemesUnsupported) => Said::Unspeakable(e.to_string()),
            Err(e) => Said::Failed(e.to_string()),
        };
        if said.blocking_send(report).is_err() {
            return;
        }
    }
}
