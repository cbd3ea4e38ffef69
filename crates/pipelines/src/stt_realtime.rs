//! `stt.realtime`: a live transcription session. The client's 16-bit PCM
//! arrives over the session's relay ([`mediagen_worker::session`]); turns
//! are found by voice activity (or ended by the client's `commit`), each is
//! drafted again as it grows (a partial transcript, by a smaller model
//! where one knows the turn's language; its stable part the words two
//! drafts agree on) and decoded once whole by the session's model (the
//! committed transcript, word times in session seconds).
//!
//! The work is bounded whatever the client sends: a turn is decoded for a
//! partial only when the last decode is done and more of it has arrived
//! (half a second, and a sixth of the turn so far, so its partials add up
//! to a few times its length however the sound is paced), a turn is committed at 28 s at
//! the latest, and the sound waiting for the engine is capped (past it the
//! session ends, `1013`). The session is charged per second received, its
//! hold kept [`HOLD_AHEAD`] seconds ahead of the sound.

use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use mediagen_core::ErrorCode;
use mediagen_media::audio::resample;
use mediagen_speakers::vad::{Vad, FRAME};
use mediagen_speech::stt::{transcribe, SpeechToText, SttCatalog, SttOptions, Transcript};
use mediagen_worker::session::{Incoming, Link, Outgoing};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};
use tokio::sync::mpsc;

pub use mediagen_jobs::stt_realtime::*;

const RATE: usize = 16_000;
/// A partial decode waits for this much more of the turn (samples).
const PARTIAL_EVERY: usize = RATE / 2;
/// A turn is committed at this length at the latest (samples: 28 s, within
/// one decoding window).
const MAX_TURN: usize = 28 * RATE;
/// Sound kept before a turn's first speech frame (samples).
const PRE_ROLL: usize = RATE * 3 / 10;
/// Sound kept after a turn's last speech frame (samples).
const POST_ROLL: usize = RATE / 5;
/// Frames of context the detector re-reads before the new ones.
const VAD_CONTEXT: usize = 30;
/// Frames the detector scores at a time (128 ms).
const VAD_BLOCK: usize = 4;
/// A turn's commit is decoded ahead, in case the pause it is in ends the
/// turn, this many times per turn at most.
const GUESSES: usize = 3;

/// Audio frames waiting for the engine; past this the session ends.
const QUEUED: usize = 512;
/// Speech starts at a frame this likely, and goes on while frames stay
/// above [`OFF`] (the batch detector's hysteresis).
const ON: f32 = 0.5;
const OFF: f32 = 0.35;

/// How long the worker waits for the API's relay after the claim.
const RELAY_WITHIN: Duration = Duration::from_secs(10);

pub struct LiveSttPipeline {
    pub catalog: Arc<SttCatalog>,
}

/// What the session's loop tells the engine.
enum Command {
    Audio(Vec<f32>),
    Commit,
    /// Commit what is left, then stop.
    Finish,
    /// New settings from now on.
    Update(SessionUpdate),
    /// Drop the turn being spoken.
    Clear,
}

/// How a session ended.
struct Ended {
    code: u16,
    reason: String,
    /// Seconds of sound received.
    seconds: f64,
    turns: usize,
}

#[async_trait::async_trait]
impl RequestPipeline for LiveSttPipeline {
    type Request = LiveSttRequest;

    async fn work(&self, ctx: JobContext, req: LiveSttRequest) -> Result<Value, JobFailure> {
        let model = crate::stt::installed(&self.catalog, &req.model)?;
        let link = ctx.session_link(RELAY_WITHIN).await?;
        let ended = run(&ctx, &req, model, self.catalog.clone(), link).await;
        let result = json!({
            "seconds": ended.seconds,
            "turns": ended.turns,
            "closeCode": ended.code,
            "closeReason": ended.reason,
        });
        ctx.meter(ended.seconds).await.ok();
        if ended.code == close::NO_CREDITS {
            return Err(JobFailure::Cut(
                mediagen_core::job::JobError::new(ErrorCode::InsufficientCredits, ended.reason),
                ended.seconds.ceil(),
            ));
        }
        Ok(result)
    }
}

/// The session: frames in, events out, until the client leaves, finishes,
/// idles, runs out of credits or the job is stopped.
async fn run(
    ctx: &JobContext,
    req: &LiveSttRequest,
    model: Arc<dyn SpeechToText>,
    catalog: Arc<SttCatalog>,
    link: Link,
) -> Ended {
    let Link {
        mut incoming,
        outgoing,
    } = link;
    let catalog_multilingual = model.multilingual();
    let (commands, queue) = sync_channel::<Command>(QUEUED);
    let (events_tx, mut events) = mpsc::unbounded_channel::<Value>();
    let engine = {
        let (req, ctx2) = (req.clone(), ctx.clone());
        ctx.blocking(move || {
            let mut turns = Turns::new(req, model.as_ref(), &catalog, &events_tx);
            turns.run(queue, &|| ctx2.is_cancelled());
            turns.committed
        })
    };
    let say = |event: Value| outgoing.try_send(Outgoing::Text(event.to_string())).is_ok();
    say(settings("session.started", ctx.job.id.as_str(), req));
    let mut current = req.clone();
    let multilingual = catalog_multilingual;
    let idle = Duration::from_secs_f64(req.idle_seconds.max(1.0));
    let mut received = 0usize;
    let mut held = HOLD_AHEAD;
    let mut finishing = false;
    // The job's time limit is the session's longest life: it ends with its
    // own close a moment before the runner would stop it.
    let longest = Duration::from_millis(ctx.job.timeout_ms.max(0) as u64)
        .saturating_sub(Duration::from_secs(2));
    let deadline = tokio::time::sleep(longest);
    tokio::pin!(deadline);
    let (code, reason) = loop {
        let frame = tokio::select! {
            _ = &mut deadline => break (
                close::TIMED_OUT,
                format!("The session reached its longest length, {} s.", longest.as_secs()),
            ),
            frame = tokio::time::timeout(idle, incoming.recv()), if !finishing => frame,
            event = events.recv() => {
                match event {
                    Some(e) => {
                        if !say(e) {
                            break (close::BAD_MESSAGE, "The client did not read its events.".to_owned());
                        }
                        continue;
                    }
                    // The engine stopped: finished, or cancelled.
                    None => break (close::NORMAL, "The session ended.".to_owned()),
                }
            }
        };
        let command = match frame {
            Err(_) => {
                break (
                    close::TIMED_OUT,
                    format!("No audio for {} s.", idle.as_secs()),
                )
            }
            Ok(None) => break (close::NORMAL, "The client left.".to_owned()),
            Ok(Some(Incoming::Binary(bytes))) => {
                if bytes.len() % 2 != 0 || bytes.len() > MAX_FRAME_BYTES {
                    break (
                        close::BAD_MESSAGE,
                        format!("A binary frame is 16-bit PCM: an even number of bytes, at most {MAX_FRAME_BYTES}."),
                    );
                }
                let samples = pcm16(&bytes);
                received += samples.len();
                let seconds = received as f64 / f64::from(req.sample_rate);
                ctx.set_used(seconds);
                if seconds + HOLD_AHEAD / 3.0 > held {
                    held = seconds + HOLD_AHEAD;
                    if ctx.meter(held).await.is_err() {
                        break (
                            close::NO_CREDITS,
                            format!("The balance does not cover more sound; {seconds:.1} s were charged."),
                        );
                    }
                }
                Command::Audio(resample(&samples, req.sample_rate, RATE as u32))
            }
            Ok(Some(Incoming::Text(text))) => {
                match control(&text) {
                    Some(Control::Commit) => Command::Commit,
                    Some(Control::Finish) => {
                        finishing = true;
                        Command::Finish
                    }
                    Some(Control::Clear) => {
                        say(json!({"type": "cleared"}));
                        Command::Clear
                    }
                    Some(Control::Update(message)) => {
                        match SessionUpdate::parse(
                            &message,
                            &mediagen_speech::stt::languages(),
                            multilingual,
                        ) {
                            Ok(update) => {
                                update.apply(&mut current);
                                say(settings("session.updated", ctx.job.id.as_str(), &current));
                                Command::Update(update)
                            }
                            Err(e) => {
                                // A refused update leaves the session as it was.
                                say(json!({
                                    "type": "error",
                                    "code": e.code.as_str(),
                                    "param": e.details.get("parameter"),
                                    "message": e.message,
                                }));
                                continue;
                            }
                        }
                    }
                    None => break (
                        close::BAD_MESSAGE,
                        "A text frame is a JSON message of type commit, finish, clear or update."
                            .to_owned(),
                    ),
                }
            }
        };
        match commands.try_send(command) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                break (
                    close::OVERLOADED,
                    "The recogniser fell too far behind the sound; try again later.".to_owned(),
                )
            }
            Err(TrySendError::Disconnected(_)) => {
                break (close::INTERNAL, "The recogniser stopped.".to_owned())
            }
        }
        if ctx.is_cancelled() {
            break (close::NORMAL, "The session was cancelled.".to_owned());
        }
    };
    // The engine stops at its next check (it sees the queue closed).
    drop(commands);
    let turns = if code == close::NORMAL && finishing {
        // Its last events (the final commit) go out before the close.
        while let Some(e) = events.recv().await {
            say(e);
        }
        engine.await.unwrap_or(0)
    } else {
        ctx.scope().cancel();
        engine.await.unwrap_or(0)
    };
    let seconds = received as f64 / f64::from(req.sample_rate);
    say(json!({"type": "session.ended", "seconds": seconds, "turns": turns}));
    let _ = outgoing.try_send(Outgoing::Close(code, reason.clone()));
    Ended {
        code,
        reason,
        seconds,
        turns,
    }
}

enum Control {
    Commit,
    Finish,
    Update(Value),
    Clear,
}

fn control(text: &str) -> Option<Control> {
    let v: Value = serde_json::from_str(text).ok()?;
    match v.get("type")?.as_str()? {
        "commit" => Some(Control::Commit),
        "finish" => Some(Control::Finish),
        "clear" => Some(Control::Clear),
        "update" => Some(Control::Update(v)),
        _ => None,
    }
}

/// The settings a session runs with, as its `session.started` and
/// `session.updated` events state them.
fn settings(kind: &str, id: &str, req: &LiveSttRequest) -> Value {
    json!({
        "type": kind,
        "sessionId": id,
        "model": req.model,
        "language": req.language,
        "sampleRate": req.sample_rate,
        "commit": req.commit,
        "silenceMs": req.silence_ms,
        "prompt": req.prompt,
    })
}

/// 16-bit little-endian PCM as samples in [-1, 1).
fn pcm16(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect()
}

/// The engine's side: the sound heard since the last turn ended, the
/// detector's view of it, and the turn being spoken.
struct Turns<'a> {
    req: LiveSttRequest,
    model: &'a dyn SpeechToText,
    catalog: &'a SttCatalog,
    events: &'a mpsc::UnboundedSender<Value>,
    /// 16-kHz sound from session sample `base`.
    audio: Vec<f32>,
    base: usize,
    /// Frames of `audio` the detector has scored, and whether each is speech.
    speech: Vec<bool>,
    on: bool,
    /// Where the turn starts in `audio`, once speech was heard.
    turn: Option<usize>,
    /// The last speech frame's end in `audio`.
    last_speech: usize,
    /// `audio`'s length at the last partial decode.
    decoded_at: usize,
    previous: Vec<String>,
    /// The commit decoded ahead in the turn's pause: the session sample
    /// it ends at, and its transcript ([`Turns::guess`]).
    guessed: Option<(usize, Option<Transcript>)>,
    /// Commits decoded ahead in this turn.
    guesses: usize,
    /// The turn's language once a decode found it (when none was given):
    /// its later decodes do not detect it again.
    heard_in: Option<String>,
    committed: usize,
}

impl<'a> Turns<'a> {
    fn new(
        req: LiveSttRequest,
        model: &'a dyn SpeechToText,
        catalog: &'a SttCatalog,
        events: &'a mpsc::UnboundedSender<Value>,
    ) -> Self {
        Self {
            req,
            model,
            catalog,
            events,
            audio: Vec::new(),
            base: 0,
            speech: Vec::new(),
            on: false,
            turn: None,
            last_speech: 0,
            decoded_at: 0,
            previous: Vec::new(),
            guessed: None,
            guesses: 0,
            heard_in: None,
            committed: 0,
        }
    }

    fn run(&mut self, queue: Receiver<Command>, stopped: &dyn Fn() -> bool) {
        loop {
            if stopped() {
                return;
            }
            let first = match queue.recv_timeout(Duration::from_millis(100)) {
                Ok(c) => c,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // Whatever else waits is read before any decode, in order.
            let mut batch = vec![first];
            while let Ok(c) = queue.try_recv() {
                batch.push(c);
            }
            let mut heard = false;
            for command in batch {
                match command {
                    Command::Audio(samples) => {
                        self.audio.extend_from_slice(&samples);
                        heard = true;
                    }
                    Command::Commit => {
                        self.commit();
                        heard = false;
                    }
                    Command::Finish => {
                        self.commit();
                        return;
                    }
                    Command::Update(update) => {
                        update.apply(&mut self.req);
                        // A commit guessed with the old settings is not
                        // the one they ask for.
                        self.guessed = None;
                    }
                    Command::Clear => {
                        self.clear();
                        heard = false;
                    }
                }
            }
            if heard {
                self.step();
            }
        }
    }

    /// Drops the turn being spoken and the sound heard so far.
    fn clear(&mut self) {
        self.end_turn();
        self.forget(self.audio.len());
    }

    /// Scores the frames not yet scored (re-reading a few before them),
    /// up to the first end of a turn: where `silenceMs` of silence follow
    /// its speech (`vad`), or where it reaches [`MAX_TURN`]. Returns that
    /// end (a sample of `audio`); the frames after it are scored after
    /// the commit.
    fn listen(&mut self) -> Option<usize> {
        let vad: &dyn Vad = self.catalog.vad();
        let quiet = self.req.silence_ms as usize * RATE / 1000;
        // Block by block, each read with the same context before it: a
        // frame's score is the same however the sound arrived.
        while self.speech.len() + VAD_BLOCK <= self.audio.len() / FRAME {
            let first = self.speech.len();
            let from = first.saturating_sub(VAD_CONTEXT);
            let p = vad
                .probabilities(&self.audio[from * FRAME..(first + VAD_BLOCK) * FRAME])
                .ok()?;
            for (k, &prob) in p.iter().enumerate().skip(first - from) {
                let f = from + k;
                self.on = if self.on { prob >= OFF } else { prob >= ON };
                self.speech.push(self.on);
                if self.on {
                    self.last_speech = (f + 1) * FRAME;
                    if self.turn.is_none() {
                        self.turn = Some((f * FRAME).saturating_sub(PRE_ROLL));
                        self.decoded_at = f * FRAME;
                    }
                }
                let Some(start) = self.turn else { continue };
                let at = (f + 1) * FRAME;
                if self.req.commit == CommitMode::Vad && !self.on && at - self.last_speech >= quiet
                {
                    return Some((self.last_speech + POST_ROLL).min(at));
                }
                if at - start >= MAX_TURN {
                    return Some(at);
                }
            }
        }
        None
    }

    /// Commits every turn that ended in the sound heard; then, within a
    /// turn, a partial when enough is new; between turns, sound no turn
    /// needs is let go.
    fn step(&mut self) {
        while let Some(end) = self.listen() {
            self.commit_to(end);
        }
        if let (Some(start), Some(end)) = (self.turn, self.pause_end()) {
            return self.guess(start, end);
        }
        match self.turn {
            None => self.forget(
                self.audio
                    .len()
                    .saturating_sub(PRE_ROLL + VAD_CONTEXT * FRAME),
            ),
            // Half a second new, and a sixth of the turn: a turn's partial
            // decodes add up to a few times its length, however the sound
            // is paced.
            Some(start)
                if self.audio.len()
                    >= self.decoded_at + PARTIAL_EVERY.max((self.audio.len() - start) / 6) =>
            {
                self.partial(start)
            }
            Some(_) => {}
        }
    }

    /// Where the turn would end if the pause it is in is its end: once half
    /// the silence that ends a turn has been heard (at least [`POST_ROLL`]),
    /// in voice-activity mode, when this pause was not guessed at yet and
    /// the turn has guesses left.
    fn pause_end(&self) -> Option<usize> {
        if self.req.commit != CommitMode::Vad || self.on || self.guesses >= GUESSES {
            return None;
        }
        let quiet = (self.req.silence_ms as usize * RATE / 1000 / 2).max(POST_ROLL);
        let end = self.last_speech + POST_ROLL;
        let scored = self.speech.len() * FRAME;
        let fresh = self.guessed.as_ref().map(|g| g.0) != Some(self.base + end);
        (scored >= self.last_speech + quiet && fresh).then_some(end)
    }

    /// Decodes the turn's commit ahead, in its pause: if the pause goes on
    /// to end the turn, the commit is sent as soon as it does (its lag is
    /// then the rest of the silence, not a whole decode after it); if
    /// speech comes back, the guess is dropped. The decode is sent as a
    /// partial meanwhile (it is the best reading of the turn so far).
    fn guess(&mut self, start: usize, end: usize) {
        self.guesses += 1;
        self.decoded_at = self.audio.len();
        let t = self.decode(&self.audio[start..end], self.req.words, false);
        if let Some(t) = &t {
            self.send_partial(start, t);
        }
        self.guessed = Some((self.base + end, t));
    }

    /// The client's commit (or finish): the turns that ended, then the
    /// rest of what was heard.
    fn commit(&mut self) {
        while let Some(end) = self.listen() {
            self.commit_to(end);
        }
        self.commit_to(self.audio.len());
    }

    /// A commit's options (`quick`: a partial's draft).
    fn options(&self, words: bool, quick: bool) -> SttOptions {
        SttOptions {
            language: self.req.language.clone().or_else(|| self.heard_in.clone()),
            translate: false,
            prompt: self.req.prompt.clone(),
            words,
            quick,
        }
    }

    fn decode(&self, audio: &[f32], words: bool, quick: bool) -> Option<Transcript> {
        self.decode_with(self.model, audio, words, quick)
    }

    fn decode_with(
        &self,
        model: &dyn SpeechToText,
        audio: &[f32],
        words: bool,
        quick: bool,
    ) -> Option<Transcript> {
        let opts = self.options(words, quick);
        transcribe(model, self.catalog.gate(), self.catalog.vad(), audio, &opts).ok()
    }

    /// A draft of the turn so far: by the catalog's smaller model for the
    /// turn's language where there is one (English: `tiny.en`), else by
    /// the session's own, greedily.
    fn partial(&mut self, start: usize) {
        self.decoded_at = self.audio.len();
        let language = self.req.language.as_deref().or(self.heard_in.as_deref());
        let draft = language.and_then(|l| self.catalog.draft(self.model.name(), l));
        let model = draft.as_deref().unwrap_or(self.model);
        let Some(t) = self.decode_with(model, &self.audio[start..], false, true) else {
            return;
        };
        self.send_partial(start, &t);
    }

    /// A partial transcript of the turn from `start`: `t`'s text, its
    /// stable part the words the previous partial began with too.
    fn send_partial(&mut self, start: usize, t: &Transcript) {
        let words: Vec<String> = t.text.split_whitespace().map(str::to_owned).collect();
        let stable = self
            .previous
            .iter()
            .zip(&words)
            .take_while(|(a, b)| a == b)
            .count();
        let _ = self.events.send(json!({
            "type": "transcript.partial",
            "turn": self.committed,
            "text": t.text.trim(),
            "stableText": words[..stable].join(" "),
            "start": self.seconds(start),
        }));
        self.previous = words;
        self.heard_in = Some(t.language.clone());
    }

    /// Decodes the turn up to `end` whole and sends it; the sound before
    /// `end` is let go.
    fn commit_to(&mut self, end: usize) {
        // A commit without speech heard commits nothing.
        let Some(start) = self.turn else {
            self.forget(end.saturating_sub(PRE_ROLL));
            return;
        };
        let guessed = match self.guessed.take() {
            Some((at, t)) if at == self.base + end => t,
            _ => self.decode(&self.audio[start..end], self.req.words, false),
        };
        if let Some(mut t) = guessed {
            let offset = self.seconds(start);
            for w in &mut t.words {
                w.start += offset;
                w.end += offset;
            }
            let text = t.text.trim();
            if !text.is_empty() {
                let _ = self.events.send(json!({
                    "type": "transcript.committed",
                    "turn": self.committed,
                    "text": text,
                    "language": t.language,
                    "start": offset,
                    "end": self.seconds(end),
                    "words": t.words,
                }));
                self.committed += 1;
            }
        }
        self.end_turn();
        self.forget(end);
    }

    /// Forgets the turn being spoken (its sound is let go by the caller).
    fn end_turn(&mut self) {
        self.turn = None;
        self.previous.clear();
        self.heard_in = None;
        self.guessed = None;
        self.guesses = 0;
    }

    /// Seconds of the session at `audio` sample `at`.
    fn seconds(&self, at: usize) -> f64 {
        (self.base + at) as f64 / RATE as f64
    }

    /// Drops `audio` before sample `n` (rounded down to whole frames).
    fn forget(&mut self, n: usize) {
        let frames = (n / FRAME).min(self.speech.len());
        if frames == 0 {
            return;
        }
        let n = frames * FRAME;
        self.audio.drain(..n);
        self.speech.drain(..frames);
        self.base += n;
        self.last_speech = self.last_speech.saturating_sub(n);
        self.decoded_at = self.decoded_at.saturating_sub(n);
        if let Some(t) = self.turn.as_mut() {
            *t = t.saturating_sub(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcm_is_little_endian_sixteen_bit() {
        assert_eq!(
            pcm16(&[0x00, 0x80, 0xff, 0x7f, 0, 0]),
            vec![-1.0, 32767.0 / 32768.0, 0.0]
        );
    }

    #[test]
    fn control_messages_are_typed() {
        assert!(matches!(
            control(r#"{"type":"commit"}"#),
            Some(Control::Commit)
        ));
        assert!(matches!(
            control(r#"{"type":"finish"}"#),
            Some(Control::Finish)
        ));
        assert!(control(r#"{"type":"other"}"#).is_none());
        assert!(control("not json").is_none());
    }
}
