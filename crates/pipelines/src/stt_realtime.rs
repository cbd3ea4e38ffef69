//! `stt.realtime`: a live transcription session. The client's 16-bit PCM
//! arrives over the session's relay ([`mediagen_worker::session`]); turns
//! are found by voice activity (or ended by the client's `commit`), each is
//! drafted again as it grows (a partial transcript, by a smaller model
//! where one knows the turn's language; its stable part the words two
//! drafts agree on) and decoded once whole by the session's model (the
//! committed transcript, word times in session seconds). A long turn is
//! not left to grow: once it passes [`CUT_AFTER`] its drafts carry word
//! times, and where two drafts agree on the words each side of a boundary
//! well behind the sound, the turn is cut there: the turn so far is
//! decoded whole, its words before the boundary are committed (`final:
//! false`), and the rest goes on from the quietest spot between them,
//! decoded on conditioned on the committed text. The commit at the
//! turn's end then decodes only what followed the last cut.
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
use mediagen_speech::stt::{
    compression_ratio, transcribe, Decoding, SpeechToText, SttCatalog, SttOptions, Transcript, Word,
};
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
/// A turn this long (samples, 6 s) is drafted with word times, to be cut
/// where two drafts agree.
const CUT_AFTER: usize = 6 * RATE;
/// A cut leaves at least this much before it (seconds)...
const MIN_PIECE: f64 = 4.0;
/// ...and is at least this far behind the sound heard (seconds): the last
/// words of a draft are the ones the next changes.
const HOLD_BACK: f64 = 1.5;
/// Two drafts agree on a boundary they place this close (seconds).
const BOUNDARY_SLACK: f64 = 0.3;
/// A cut goes to the quietest 20 ms within this of the boundary (seconds),
/// and at most [`EDGE`] into the words each side.
const SNAP: f64 = 0.15;
const EDGE: f64 = 0.03;
/// A cut's decode more repetitive than this (whisper's loop test) is not
/// cut at.
const MAX_COMPRESSION: f64 = 2.4;
/// Characters of a turn's committed pieces its later decodes are
/// conditioned on (with the session's prompt).
const CONTEXT_CHARS: usize = 400;

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
    guessed: Option<(usize, Transcript)>,
    /// Commits decoded ahead in this turn.
    guesses: usize,
    /// The last draft's words (seconds from the turn's start), once the
    /// turn is long enough to be cut.
    drafted: Vec<Word>,
    /// The text of this turn's pieces committed at cuts.
    context: String,
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
            drafted: Vec::new(),
            context: String::new(),
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
    /// end (a sample of `audio`) and whether a pause ends it there; the
    /// frames after it are scored after the commit.
    fn listen(&mut self) -> Option<(usize, bool)> {
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
                    return Some(((self.last_speech + POST_ROLL).min(at), true));
                }
                if at - start >= MAX_TURN {
                    return Some((at, false));
                }
            }
        }
        None
    }

    /// Commits every turn that ended in the sound heard; then, within a
    /// turn, a partial when enough is new; between turns, sound no turn
    /// needs is let go.
    fn step(&mut self) {
        while let Some((end, pause)) = self.listen() {
            self.commit_to(end, pause);
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
        // A guess that loops is dropped: the commit decodes in full.
        let Some(t) = self.decode_ahead(&self.audio[start..end], self.req.words) else {
            self.guessed = None;
            return;
        };
        self.send_partial(start, &t);
        self.guessed = Some((self.base + end, t));
    }

    /// The client's commit (or finish): the turns that ended, then the
    /// rest of what was heard.
    fn commit(&mut self) {
        while let Some((end, pause)) = self.listen() {
            self.commit_to(end, pause);
        }
        self.commit_to(self.audio.len(), true);
    }

    /// A decode's options (a commit's bounded search, or a partial's
    /// draft): the session's prompt, then the text committed at the turn's
    /// cuts.
    fn options(&self, words: bool, decoding: Decoding) -> SttOptions {
        let tail = tail_chars(&self.context, CONTEXT_CHARS);
        let prompt = match (self.req.prompt.as_deref(), tail.is_empty()) {
            (p, true) => p.map(str::to_owned),
            (None, false) => Some(tail.to_owned()),
            (Some(p), false) => Some(format!("{p} {tail}")),
        };
        SttOptions {
            language: self.req.language.clone().or_else(|| self.heard_in.clone()),
            translate: false,
            prompt,
            words,
            decoding,
        }
    }

    /// A commit's decode by the session's model, where none was made
    /// ahead (the client's commit, or a pause whose guess failed): someone
    /// waits for it, so one greedy decoding (0.4 s less than a beam of 5 on
    /// the last piece here), and the bounded beam search only where that
    /// loops.
    fn decode(&self, audio: &[f32], words: bool) -> Option<Transcript> {
        self.decode_with(self.model, audio, words, Decoding::Draft)
            .filter(|t| compression_ratio(&t.text) <= MAX_COMPRESSION)
            .or_else(|| self.decode_with(self.model, audio, words, Decoding::Bounded))
    }

    /// A decode ahead of its need (a cut, a guessed commit) by the
    /// session's model: one beam search, refused where it loops (the cut
    /// waits for the next drafts; the commit decodes again).
    fn decode_ahead(&self, audio: &[f32], words: bool) -> Option<Transcript> {
        self.decode_with(self.model, audio, words, Decoding::Beam)
            .filter(|t| compression_ratio(&t.text) <= MAX_COMPRESSION)
    }

    fn decode_with(
        &self,
        model: &dyn SpeechToText,
        audio: &[f32],
        words: bool,
        decoding: Decoding,
    ) -> Option<Transcript> {
        let opts = self.options(words, decoding);
        transcribe(model, self.catalog.gate(), self.catalog.vad(), audio, &opts).ok()
    }

    /// A draft of the turn so far: by the catalog's smaller model for the
    /// turn's language where there is one (English: `tiny.en`), else by
    /// the session's own, greedily. A long turn's draft has word times,
    /// and the turn is cut where it agrees with the one before.
    fn partial(&mut self, start: usize) {
        self.decoded_at = self.audio.len();
        let language = self.req.language.as_deref().or(self.heard_in.as_deref());
        let draft = language.and_then(|l| self.catalog.draft(self.model.name(), l));
        let model = draft.as_deref().unwrap_or(self.model);
        let long = self.audio.len() - start >= CUT_AFTER;
        let Some(t) = self.decode_with(model, &self.audio[start..], long, Decoding::Draft) else {
            return;
        };
        self.send_partial(start, &t);
        if long {
            let before = std::mem::replace(&mut self.drafted, t.words);
            let heard = (self.audio.len() - start) as f64 / RATE as f64;
            if let Some(at) = cut_point(&before, &self.drafted, heard) {
                self.cut(start, at);
            }
        }
    }

    /// Cuts the turn at the boundary `at` (seconds into it) the drafts
    /// agree on: the turn so far is decoded whole by the session's model
    /// (so the words each side of the cut are heard with what follows
    /// them), its words before the boundary are committed, and the rest
    /// goes on as the turn from the quietest spot between the last of
    /// them and the next.
    fn cut(&mut self, start: usize, at: f64) {
        let Some(mut t) = self.decode_ahead(&self.audio[start..], true) else {
            return;
        };
        let k = t
            .words
            .iter()
            .position(|w| (w.start + w.end) / 2.0 >= at)
            .unwrap_or(t.words.len());
        // The whole decode must have words on both sides of the boundary.
        if k == 0 || k == t.words.len() {
            return;
        }
        let (last, next) = (&t.words[k - 1], &t.words[k]);
        let middle = (last.end + next.start) / 2.0;
        let from = (last.end - EDGE).max(middle - SNAP);
        let to = (next.start + EDGE).min(middle + SNAP).max(from);
        let end = start + snap(&self.audio[start..], from, to);
        t.words.truncate(k);
        t.text = t
            .words
            .iter()
            .map(|w| w.word.trim())
            .collect::<Vec<_>>()
            .join(" ");
        if !self.req.words {
            t.words.clear();
        }
        if let Some(text) = self.send_committed(start, end, t, false) {
            self.context.push(' ');
            self.context.push_str(&text);
            let keep = tail_chars(&self.context, CONTEXT_CHARS).len();
            self.context.drain(..self.context.len() - keep);
        }
        self.turn = Some(end);
        self.previous.clear();
        self.drafted.clear();
        self.guessed = None;
        self.guesses = 0;
        self.forget(end);
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

    /// Decodes the turn up to `end` whole and sends it (`last`: as the
    /// turn's end, not a cut at its longest); the sound before `end` is
    /// let go.
    fn commit_to(&mut self, end: usize, last: bool) {
        // A commit without speech heard commits nothing.
        let Some(start) = self.turn else {
            self.forget(end.saturating_sub(PRE_ROLL));
            return;
        };
        let guessed = match self.guessed.take() {
            Some((at, t)) if at == self.base + end => Some(t),
            _ => self.decode(&self.audio[start..end], self.req.words),
        };
        if let Some(t) = guessed {
            self.send_committed(start, end, t, last);
        }
        self.end_turn();
        self.forget(end);
    }

    /// Sends `t`, the turn's words from `start` to `end`, as committed
    /// (`last`: the turn ends there, at a pause or the client's commit,
    /// rather than at a cut); returns its text, if any.
    fn send_committed(
        &mut self,
        start: usize,
        end: usize,
        mut t: Transcript,
        last: bool,
    ) -> Option<String> {
        let offset = self.seconds(start);
        for w in &mut t.words {
            w.start += offset;
            w.end += offset;
        }
        let text = t.text.trim();
        if text.is_empty() {
            return None;
        }
        let _ = self.events.send(json!({
            "type": "transcript.committed",
            "turn": self.committed,
            "text": text,
            "language": t.language,
            "start": offset,
            "end": self.seconds(end),
            "final": last,
            "words": t.words,
        }));
        self.committed += 1;
        Some(text.to_owned())
    }

    /// Forgets the turn being spoken (its sound is let go by the caller).
    fn end_turn(&mut self) {
        self.turn = None;
        self.previous.clear();
        self.heard_in = None;
        self.guessed = None;
        self.guesses = 0;
        self.drafted.clear();
        self.context.clear();
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

/// The last at most `n` bytes of `text`, from a word's start.
fn tail_chars(text: &str, n: usize) -> &str {
    let text = text.trim();
    if text.len() <= n {
        return text;
    }
    let mut from = text.len() - n;
    while !text.is_char_boundary(from) {
        from += 1;
    }
    match text[from..].find(' ') {
        Some(space) => text[from + space..].trim_start(),
        None => &text[from..],
    }
}

/// A word as two drafts are compared: lower case, without punctuation.
fn plain(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Where a turn may be cut (seconds from its start), from two successive
/// drafts of it (`before`, `now`) with `heard` seconds of it heard: a
/// boundary both drafts place alike (within [`BOUNDARY_SLACK`]) between
/// the same two words, at least [`MIN_PIECE`] in and [`HOLD_BACK`] behind
/// the sound; the one after a sentence's end (else a clause's) and with
/// the widest gap, the latest of equals. (The words before it are decoded
/// again for the commit: the drafts need only agree on where it falls.)
fn cut_point(before: &[Word], now: &[Word], heard: f64) -> Option<f64> {
    let middle = |w: &[Word], i: usize| (w[i - 1].end + w[i].start) / 2.0;
    let same = |a: &Word, b: &Word| {
        let a = plain(&a.word);
        !a.is_empty() && a == plain(&b.word)
    };
    (1..now.len())
        .filter_map(|i| {
            let at = middle(now, i);
            let placed = (1..before.len()).any(|j| {
                (at - middle(before, j)).abs() <= BOUNDARY_SLACK
                    && same(&now[i - 1], &before[j - 1])
                    && same(&now[i], &before[j])
            });
            let inside = at >= MIN_PIECE && at <= heard - HOLD_BACK;
            let last = now[i - 1].word.trim_end();
            let pause = if last.ends_with(['.', '!', '?']) {
                2.0
            } else if last.ends_with([',', ';', ':']) {
                1.0
            } else {
                0.0
            };
            let score = pause + (now[i].start - now[i - 1].end).max(0.0);
            (placed && inside).then_some((score, at))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
        .map(|(_, at)| at)
}

/// The sample of `audio` where a cut between `from` and `to` seconds goes:
/// the middle of the quietest 20 ms there.
fn snap(audio: &[f32], from: f64, to: f64) -> usize {
    let (hop, span) = (RATE / 100, RATE / 50);
    let sample = |t: f64| ((t.max(0.0) * RATE as f64) as usize).min(audio.len());
    let (a, b) = (sample(from), sample(to));
    let first = a.saturating_sub(span / 2);
    let last = b
        .saturating_sub(span / 2)
        .min(audio.len().saturating_sub(span));
    (first..=last.max(first))
        .step_by(hop)
        .filter(|&s| s + span <= audio.len())
        .min_by(|&x, &y| {
            let energy = |s: usize| audio[s..s + span].iter().map(|v| v * v).sum::<f32>();
            energy(x).total_cmp(&energy(y))
        })
        .map_or((a + b) / 2, |s| s + span / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[(&str, f64, f64)]) -> Vec<Word> {
        list.iter()
            .map(|&(w, start, end)| Word {
                word: w.to_owned(),
                start,
                end,
                probability: 1.0,
                speaker: None,
            })
            .collect()
    }

    #[test]
    fn a_turn_is_cut_where_two_drafts_agree() {
        let before = words(&[
            ("Well,", 0.0, 1.0),
            ("I", 1.2, 2.0),
            ("went", 2.0, 4.2),
            ("home.", 4.3, 5.0),
            ("Then", 5.6, 6.0),
            ("we", 6.0, 6.5),
        ]);
        let mut now = before.clone();
        now[5].word = "he".into();
        now.extend(words(&[("ate", 6.5, 7.0), ("supper", 7.0, 8.0)]));
        // After "home." (a sentence's end, 4 s in, well behind the sound).
        let at = cut_point(&before, &now, 9.0).expect("a cut");
        assert!((at - 5.3).abs() < 1e-9, "{at}");
        // Not within the hold-back of the sound, nor where they differ.
        assert_eq!(cut_point(&before, &now, 5.5), None);
        let mut other = now.clone();
        other[3].word = "Rome.".into();
        assert_eq!(cut_point(&before, &other, 9.0), None);
        // A word they differ on before it does not matter.
        let mut early = now.clone();
        early[1].word = "you".into();
        assert_eq!(cut_point(&before, &early, 9.0), Some(5.3));
        // Nor where the drafts place the boundary apart: then at the
        // boundary before, which both place alike.
        let mut moved = now.clone();
        moved[4].start = 6.4;
        moved[3].end = 5.6;
        assert_eq!(cut_point(&before, &moved, 9.0), Some(4.25));
    }

    #[test]
    fn a_cut_goes_to_the_quietest_spot_near_it() {
        let mut audio = vec![0.5f32; RATE * 2];
        for x in &mut audio[RATE + 1600..RATE + 2400] {
            *x = 0.0;
        }
        let at = snap(&audio, 0.9, 1.2);
        assert!((RATE + 1600..RATE + 2400).contains(&at), "{at}");
        // Never outside the span it is given.
        let near = snap(&audio, 0.5, 0.6);
        assert!((RATE / 2..=RATE * 6 / 10).contains(&near), "{near}");
        assert_eq!(tail_chars("one two three four", 9), "four");
        assert_eq!(tail_chars("one two", 9), "one two");
    }

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
