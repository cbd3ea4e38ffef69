//! Long audio: a file planned into windows at pauses, cut into sections
//! decoded side by side where that finishes sooner, each window given the
//! text before it; progress reported, stopped on cancel.

use super::*;

/// What a window costs over the decoding of its audio, in seconds of audio
/// decoded (a window's beam search takes about 0.09 s a second of audio on
/// base, one thread): its encoding, about 0.7 s on the encoder's two
/// threads when a file is decoded in one section (the windows after the
/// first are encoded while the one before is decoded, so mostly hidden),
/// 1.2 s on one thread beside another section's decoding.
const ENCODE_ALONE: f64 = 10.0;
const ENCODE_BESIDE: f64 = 17.0;
/// The share of windows after the first whose encoding is not hidden in
/// one section: the next window is encoded for where the plan ends the
/// window before, and on real speech whisper often stops short of that
/// (it leaves a last sentence it judges unfinished to the next window),
/// so the encoding made ahead is for the wrong audio. 2 of 3 windows on a
/// LibriSpeech reader, 1 of 2 on a LibriVox one (`bench/stt_real.sh`).
const RESUMED_EARLY: f64 = 0.5;
/// Sections side by side are chosen when they are expected to take less
/// than this share of one section's time (they cost more in all: each
/// section starts with an encoding of its own, and its first window has no
/// text before it). A 19-s clip cut in two (6.6 + 12.2 s, expected 0.98 of
/// one section) took 1.99–2.11 s against 1.97 s whole, at 5.3 % WER
/// against 3.5 % (`stt_bench`, 2026-11-27).
const SIDE_BY_SIDE_GAIN: f64 = 0.85;
/// Audio before a section's start decoded with it as context (a section
/// after the first otherwise starts as a file does, with no text before
/// it; on `bench/stt_corpus.sh 8370` that cost two clips of nine 0.7 and
/// 1.8 points of WER), from the start of a pause where one lies there.
const LEAD_IN: usize = 3 * RATE;

/// 16 kHz mono audio that can be read from any point.
pub trait AudioSource: Sync {
    /// Samples in all.
    fn samples(&self) -> usize;
    /// Up to `max` samples from sample `at`; fewer only at the end.
    fn read_at(&self, at: usize, max: usize) -> Result<Vec<f32>, SttError>;
}

impl AudioSource for &[f32] {
    fn samples(&self) -> usize {
        self.len()
    }

    fn read_at(&self, at: usize, max: usize) -> Result<Vec<f32>, SttError> {
        let at = at.min(self.len());
        Ok(self[at..(at + max).min(self.len())].to_vec())
    }
}

/// A file of 16 kHz samples (see [`mediagen_media::pcm::decode`]).
impl AudioSource for mediagen_media::pcm::PcmFile {
    fn samples(&self) -> usize {
        debug_assert_eq!(self.rate(), RATE as u32);
        self.len()
    }

    fn read_at(&self, at: usize, max: usize) -> Result<Vec<f32>, SttError> {
        mediagen_media::pcm::PcmFile::read_at(self, at, max)
            .map_err(|e| SttError::Input(e.to_string()))
    }
}

/// Transcribes audio of any length, read piece by piece from `audio`:
/// silence is skipped, speech is decoded in chunks of one window cut at
/// pauses, each chunk under a permit of `gate`, and times are shifted onto
/// the whole file's clock. `progress` gets the fraction done (0–1) after
/// each chunk and returns false to cancel. Memory stays at two windows of
/// audio a decoding, whatever the length.
///
/// Whisper decodes one window after another, each given the text before
/// it, and a decoding step is too small to gain from more threads; so where
/// the model decodes several windows at once ([`SpeechToText::lanes`]) and
/// the gate lets them, audio that would take fewer windows' time that way
/// ([`sections`]) is cut at pauses into that many sections, decoded side by
/// side, each begun as a file is (without the text before it).
pub fn transcribe_stream(
    model: &dyn SpeechToText,
    gate: &DecodeGate,
    vad: &dyn Vad,
    opts: &SttOptions,
    audio: &dyn AudioSource,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Transcript, SttError> {
    let total = audio.samples();
    // Speech probabilities for the whole file first (a few milliseconds a
    // second of audio): the sections are planned from them, and each plan
    // reads them rather than running the detector again over audio it has
    // seen. Frame `i` starts at sample `i * FRAME`.
    let speech = chunk::probabilities(vad, audio, 0, total)?;
    let lanes = model.lanes().min(gate.permits());
    let bounds = if lanes < 2 {
        vec![0, total]
    } else {
        sections(audio, &speech, lanes)?
    };
    let lanes = bounds.len() - 1;
    if lanes < 2 {
        let lane = Lane {
            range: 0..total,
            alone: true,
            lead: None,
        };
        return transcribe_lane(model, gate, opts, audio, &speech, lane, progress);
    }
    let mut opts = opts.clone();
    let mut detected = None;
    if opts.language.is_none() {
        let first = audio.read_at(0, 2 * MAX_CHUNK)?;
        let found = detect_language(model, gate, first_chunk(&speech, &first))?;
        opts.language = Some(found.0.clone());
        detected = Some(found);
    }
    // Where each section's decoding starts: its lead-in (the end of the
    // section before it) and where, in seconds from there, its own words
    // begin (the middle of the pause at its start).
    let mut starts: Vec<(usize, Option<(usize, f64)>)> = vec![(0, None)];
    for k in 1..lanes {
        starts.push(lead_in(
            audio,
            &speech,
            [bounds[k - 1], bounds[k], bounds[k + 1]],
        )?);
    }
    let done: Vec<AtomicUsize> = (0..lanes).map(|_| AtomicUsize::new(0)).collect();
    let cancel = AtomicBool::new(false);
    let results: Vec<Result<Transcript, SttError>> = std::thread::scope(|s| {
        let others: Vec<_> = (1..lanes)
            .map(|k| {
                let (range, done, cancel) = (starts[k].0..bounds[k + 1], &done[k], &cancel);
                // Decoded after its lead-in (the request's prompt before
                // that), not after the text of the section before it.
                let (opts, speech, lead) = (opts.clone(), &speech, starts[k].1);
                s.spawn(mediagen_media::process::in_this_scope(move || {
                    let len = range.len() as f64;
                    let mut progress = |f: f64| {
                        done.store((f * len) as usize, Ordering::Relaxed);
                        !cancel.load(Ordering::Relaxed)
                    };
                    let lane = Lane {
                        range,
                        alone: false,
                        lead,
                    };
                    transcribe_lane(model, gate, &opts, audio, speech, lane, &mut progress)
                }))
            })
            .collect();
        let len = (bounds[1] - bounds[0]) as f64;
        let lane = Lane {
            range: bounds[0]..bounds[1],
            alone: false,
            lead: None,
        };
        let first = transcribe_lane(model, gate, &opts, audio, &speech, lane, &mut |f| {
            done[0].store((f * len) as usize, Ordering::Relaxed);
            let sum: usize = done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
            // (Lead-ins are counted twice: at most a few seconds.)
            let go = progress((sum as f64 / total as f64).min(1.0));
            if !go {
                cancel.store(true, Ordering::Relaxed);
            }
            go
        });
        let mut all = vec![first];
        all.extend(others.into_iter().map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(SttError::Failed("a decoding thread panicked".into())))
        }));
        all
    });
    let mut out = Transcript::default();
    for (k, result) in results.into_iter().enumerate() {
        let t = result?;
        if !t.text.is_empty() {
            if !out.text.is_empty() {
                out.text.push(' ');
            }
            out.text.push_str(&t.text);
        }
        let at = starts[k].0 as f64 / RATE as f64;
        for mut seg in t.segments {
            seg.id = out.segments.len();
            seg.start += at;
            seg.end += at;
            out.segments.push(seg);
        }
        out.words.extend(t.words.into_iter().map(|mut w| {
            w.start += at;
            w.end += at;
            w
        }));
    }
    if !progress(1.0) {
        return Err(SttError::Cancelled);
    }
    (out.language, out.language_probability) =
        detected.unwrap_or_else(|| (opts.language.unwrap_or_default(), 1.0));
    out.duration = total as f64 / RATE as f64;
    Ok(out)
}

/// Where to cut `audio` into at most `lanes` sections decoded side by side
/// (sample bounds, from 0 to its end, each on a frame; `[0, end]` for one
/// section). Two cuts are weighed: the chunks of the whole file's plan in
/// groups of about equal length (no window more than one section would
/// take), and equal shares cut in a pause (shorter windows, for a file of
/// few windows: 38 s planned as 28 + 10 s is decoded sooner as two of
/// 19 s). Each is costed as its longest section (the decoding of its audio
/// and an encoding per window), against one section with its encodings
/// mostly hidden; the cheapest is taken.
fn sections(audio: &dyn AudioSource, speech: &[f32], lanes: usize) -> Result<Vec<usize>, SttError> {
    let total = audio.samples();
    let seconds = |c: &std::ops::Range<usize>| c.len() as f64 / RATE as f64;
    let plan_of = |r: std::ops::Range<usize>| plan_of(audio, speech, r);
    let whole = plan_of(0..total)?;
    if whole.is_empty() {
        // No speech: nothing to share.
        return Ok(vec![0, total]);
    }
    let unhidden = 1.0 + RESUMED_EARLY * whole.len().saturating_sub(1) as f64;
    let alone = ENCODE_ALONE * unhidden + whole.iter().map(seconds).sum::<f64>();
    let mut best = (alone * SIDE_BY_SIDE_GAIN, vec![0, total]);
    // The whole plan's chunks in groups: a cut where the running length
    // passes each equal share (at the nearer chunk boundary).
    let weight = |c: &std::ops::Range<usize>| ENCODE_BESIDE + seconds(c);
    let all: f64 = whole.iter().map(weight).sum();
    let mut grouped = vec![0];
    let mut run = 0.0;
    for (i, c) in whole.iter().enumerate() {
        let share = all * grouped.len() as f64 / lanes as f64;
        if i > 0 && grouped.len() < lanes && run + weight(c) / 2.0 >= share {
            grouped.push(whole[i - 1].end / FRAME * FRAME);
        }
        run += weight(c);
    }
    grouped.push(total);
    // Equal shares, each cut in the longest pause within 5 s.
    let mut equal = vec![0];
    for k in 1..lanes {
        let at = total * k / lanes;
        let from = at.saturating_sub(5 * RATE) / FRAME * FRAME;
        let around = audio.read_at(from, 10 * RATE)?;
        let frames = &speech
            [(from / FRAME).min(speech.len())..((from + around.len()) / FRAME).min(speech.len())];
        let cut = from + chunk::split_near(&around, frames, at - from);
        equal.push((cut / FRAME * FRAME).clamp(equal[k - 1], total));
    }
    equal.push(total);
    for mut bounds in [grouped, equal] {
        // Each section after the first begins with the whole pause before
        // it (see `chunk::pause_start`).
        for k in 1..bounds.len() - 1 {
            bounds[k] = chunk::pause_start(speech, bounds[k]).max(bounds[k - 1]);
        }
        bounds.dedup();
        if bounds.len() < 3 {
            continue;
        }
        let mut cost = 0.0f64;
        for pair in bounds.windows(2) {
            let chunks = plan_of(pair[0]..pair[1])?;
            let section: f64 = chunks.iter().map(weight).sum();
            cost = cost.max(section);
        }
        if cost < best.0 {
            best = (cost, bounds);
        }
    }
    Ok(best.1)
}

/// The chunks (windows) `range` of `audio` is decoded in; `speech` holds
/// the speech probabilities of all of it.
fn plan_of(
    audio: &dyn AudioSource,
    speech: &[f32],
    range: std::ops::Range<usize>,
) -> Result<Vec<std::ops::Range<usize>>, SttError> {
    let frames = &speech[(range.start / FRAME).min(speech.len())..];
    chunk::chunks(audio, range, frames)
}

/// Where the section `at..end` (after the one that starts at `before`) is
/// decoded from, and its lead-in if it has one
/// (see [`Lane`]): about [`LEAD_IN`] of the section before, or half of
/// that, beginning in a pause ([`chunk::lead_start`]), whichever does not make
/// the section take a window more (a window costs an encoding, more than
/// the lead-in's words are worth); none when both do.
fn lead_in(
    audio: &dyn AudioSource,
    speech: &[f32],
    [before, at, end]: [usize; 3],
) -> Result<(usize, Option<(usize, f64)>), SttError> {
    let windows = plan_of(audio, speech, at..end)?.len();
    let resumes = chunk::pause_end(speech, at).min(end);
    for lead in [LEAD_IN, LEAD_IN / 2] {
        let from = chunk::lead_start(speech, at.saturating_sub(lead), at).max(before);
        if from < at && plan_of(audio, speech, from..end)?.len() <= windows {
            let split = ((at + resumes) / 2 - from) as f64 / RATE as f64;
            return Ok((from, Some((at - from, split))));
        }
    }
    Ok((at, None))
}

/// The first chunk [`plan`] gives for the whole of `audio` (its start, when
/// all of it is silence); `speech` holds the probabilities of its frames.
fn first_chunk<'a>(speech: &[f32], whole: &'a [f32]) -> &'a [f32] {
    match chunk_after(whole, speech, 0, 0, true) {
        [] => &whole[..whole.len().min(MAX_CHUNK)],
        first => first,
    }
}

/// What one decoding lane covers: samples of the audio; whether it runs
/// alone (see [`transcribe_lane`]); and its lead-in, when it starts before
/// its section: the samples of it and where, in seconds from the range's
/// start, the section's own words begin.
struct Lane {
    range: std::ops::Range<usize>,
    alone: bool,
    lead: Option<(usize, f64)>,
}

/// One decoding after another over `range` of `audio` (samples), times
/// from the range's start ([`transcribe_stream`] for one section); `speech`
/// holds the speech probabilities of all of `audio` (`range` starts on a
/// frame). A lane `alone` tells each decoding the chunk after it when a
/// second permit of `gate` is free (no other decoding wants the core its
/// one-thread decoder leaves idle), to be encoded there meanwhile; lanes
/// side by side use both cores already (there, it made two clips of 80 s
/// 9–12 % slower), and each encodes on its own decoding thread.
fn transcribe_lane(
    model: &dyn SpeechToText,
    gate: &DecodeGate,
    opts: &SttOptions,
    audio: &dyn AudioSource,
    speech: &[f32],
    lane: Lane,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Transcript, SttError> {
    let Lane { range, alone, lead } = lane;
    let duration = range.len() as f64 / RATE as f64;
    let mut session = model.session(opts)?;
    if !alone {
        session.beside_others();
    }
    // A lead-in the session cannot take is skipped (times stay from the
    // range's start); one it takes ends `split` seconds in, told to each
    // window that starts before that.
    let (skipped, split) = match lead {
        Some((_, split)) if session.takes_lead_in() => (0, split),
        Some((samples, _)) => (samples, 0.0),
        None => (0, 0.0),
    };
    let mut pos = range.start + skipped;
    let mut read = |n: usize| {
        let piece = audio.read_at(pos, n.min(range.end - pos))?;
        pos += piece.len();
        Ok::<_, SttError>(piece)
    };
    let mut language = opts.language.clone().map(|l| (l, 1.0));
    if language.is_none() && !model.multilingual() {
        language = Some(("en".to_owned(), 1.0));
    }
    let speech = &speech[(range.start / FRAME).min(speech.len())..];
    let (mut buf, mut offset, mut ended) = (Vec::<f32>::new(), skipped, false);
    let (mut segments, mut words) = (Vec::<Segment>::new(), Vec::<Word>::new());
    loop {
        if !ended && buf.len() < 2 * MAX_CHUNK {
            let want = 2 * MAX_CHUNK - buf.len();
            let more = read(want)?;
            ended = more.len() < want;
            buf.extend_from_slice(&more);
        }
        // `offset` need not fall on a frame: the frame it lies in stands
        // for the first (within 32 ms).
        match plan(&buf, &speech[(offset / FRAME).min(speech.len())..], ended) {
            Plan::Done => break,
            Plan::NeedMore => continue,
            Plan::Skip(n) => {
                buf.drain(..n);
                offset += n;
            }
            Plan::Chunk { end } => {
                let at = offset as f64 / RATE as f64;
                let Window {
                    segments: mut segs,
                    words: mut ws,
                    consumed,
                } = {
                    let _permit = gate.acquire();
                    if at < split {
                        session.lead_in(split - at);
                    }
                    if language.is_none() {
                        language = Some(session.detect_language(&buf[..end])?);
                    }
                    let code = language.as_ref().map(|l| l.0.clone()).unwrap_or_default();
                    // The chunk after this one, if the decoder takes it all,
                    // where a second decoding could run now (it is encoded
                    // on that decoder's thread).
                    let spare = if alone { gate.try_acquire() } else { None };
                    let next = match spare {
                        Some(_) => chunk_after(&buf, speech, offset, end, ended),
                        None => &[],
                    };
                    session.transcribe_before(&buf[..end], &code, next)?
                };
                // At least a second forward, whatever the decoder says.
                let end = consumed.clamp(end.min(RATE), end);
                let limit = at + end as f64 / RATE as f64;
                let floor = segments.last().map_or(0.0, |s| s.start);
                for s in &mut segs {
                    s.start = (s.start + at).clamp(floor, limit);
                    s.end = (s.end + at).clamp(s.start, limit);
                    s.id = segments.len();
                    segments.push(s.clone());
                }
                for w in &mut ws {
                    w.start = (w.start + at).min(limit);
                    w.end = (w.end + at).clamp(w.start, limit);
                }
                words.append(&mut ws);
                buf.drain(..end);
                offset += end;
                let done = offset as f64 / RATE as f64 / duration.max(0.001);
                if !progress(done.min(1.0)) {
                    return Err(SttError::Cancelled);
                }
            }
        }
    }
    let text = segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let (language, language_probability) = language.unwrap_or_else(|| ("en".to_owned(), 0.0));
    Ok(Transcript {
        text,
        language,
        language_probability,
        duration: (offset + buf.len()) as f64 / RATE as f64,
        segments,
        words,
        ..Transcript::default()
    })
}

/// The chunk [`plan`] gives from sample `at` of `buf` on (silence skipped;
/// `buf` starts `offset` samples into the range `speech` covers); empty
/// when more audio must be read first or none is left.
fn chunk_after<'b>(
    buf: &'b [f32],
    speech: &[f32],
    offset: usize,
    mut at: usize,
    ended: bool,
) -> &'b [f32] {
    loop {
        let rest = &buf[at..];
        match plan(
            rest,
            &speech[((offset + at) / FRAME).min(speech.len())..],
            ended,
        ) {
            Plan::Skip(n) => at += n,
            Plan::Chunk { end } => return &rest[..end],
            Plan::NeedMore | Plan::Done => return &[],
        }
    }
}

/// The spoken language of the first window of `audio` (16 kHz mono): an
/// ISO 639-1 code and its probability; English for English-only models.
pub fn detect_language(
    model: &dyn SpeechToText,
    gate: &DecodeGate,
    audio: &[f32],
) -> Result<(String, f64), SttError> {
    if !model.multilingual() {
        return Ok(("en".to_owned(), 1.0));
    }
    let mut session = model.session(&SttOptions::default())?;
    let _permit = gate.acquire();
    session.detect_language(&audio[..audio.len().min(MAX_CHUNK)])
}

/// Transcribes audio held in memory (short clips).
pub fn transcribe(
    model: &dyn SpeechToText,
    gate: &DecodeGate,
    vad: &dyn Vad,
    audio: &[f32],
    opts: &SttOptions,
) -> Result<Transcript, SttError> {
    transcribe_stream(model, gate, vad, opts, &audio, &mut |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Mutex;

    /// A recogniser that hears one segment per window, spanning it, and
    /// notes which threads decoded.
    struct Echo {
        threads: Mutex<HashSet<std::thread::ThreadId>>,
        /// Samples of each session's first window.
        firsts: Mutex<Vec<usize>>,
        /// Each window heard, with the audio it was told would come next.
        windows: Mutex<Vec<(Vec<f32>, Vec<f32>)>>,
        /// Sessions told they decode beside others.
        beside: AtomicUsize,
        /// Decodings the model runs at once.
        lanes: usize,
        /// Whether sessions take a lead-in, and those they were given.
        takes_lead: bool,
        leads: Mutex<Vec<f64>>,
    }

    impl Echo {
        fn new() -> Self {
            Self {
                threads: Mutex::new(HashSet::new()),
                firsts: Mutex::new(Vec::new()),
                windows: Mutex::new(Vec::new()),
                beside: AtomicUsize::new(0),
                lanes: 2,
                takes_lead: false,
                leads: Mutex::new(Vec::new()),
            }
        }
    }

    /// The recogniser, whether its first window was heard, and the next
    /// window's lead-in (seconds whose words are left out).
    struct EchoSession<'a>(&'a Echo, bool, f64);

    /// `seconds` of sound, silent for the last `gap` seconds of every
    /// `period` and after `sound_until`.
    fn sound(seconds: usize, period: f32, gap: f32, sound_until: f32) -> Vec<f32> {
        (0..seconds * RATE)
            .map(|i| {
                let t = i as f32 / RATE as f32;
                if t % period > period - gap || t > sound_until {
                    0.0
                } else {
                    0.3 * (i as f32 * 0.05).sin()
                }
            })
            .collect()
    }

    impl SpeechToText for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn multilingual(&self) -> bool {
            true
        }
        fn session(&self, _: &SttOptions) -> Result<Box<dyn SttSession + '_>, SttError> {
            Ok(Box::new(EchoSession(self, false, 0.0)))
        }
        fn lanes(&self) -> usize {
            self.lanes
        }
    }

    impl SttSession for EchoSession<'_> {
        fn detect_language(&mut self, _: &[f32]) -> Result<(String, f64), SttError> {
            Ok(("de".into(), 0.9))
        }
        fn transcribe(&mut self, audio: &[f32], _: &str) -> Result<Window, SttError> {
            if !std::mem::replace(&mut self.1, true) {
                self.0.firsts.lock().unwrap().push(audio.len());
            }
            self.0
                .threads
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            let (lead, end) = (
                std::mem::take(&mut self.2),
                audio.len() as f64 / RATE as f64,
            );
            let heard = Segment {
                id: 0,
                start: lead,
                end,
                text: "x".into(),
                avg_logprob: 0.0,
                no_speech_prob: 0.0,
                compression_ratio: 0.0,
                speaker: None,
            };
            Ok(Window {
                segments: if lead < end { vec![heard] } else { Vec::new() },
                words: Vec::new(),
                consumed: audio.len(),
            })
        }
        fn transcribe_before(
            &mut self,
            audio: &[f32],
            language: &str,
            next: &[f32],
        ) -> Result<Window, SttError> {
            let w = self.transcribe(audio, language)?;
            let seen = (audio.to_vec(), next.to_vec());
            self.0.windows.lock().unwrap().push(seen);
            Ok(w)
        }
        fn beside_others(&mut self) {
            self.0.beside.fetch_add(1, Ordering::Relaxed);
        }
        fn takes_lead_in(&self) -> bool {
            self.0.takes_lead
        }
        fn lead_in(&mut self, seconds: f64) {
            self.0.leads.lock().unwrap().push(seconds);
            self.2 = seconds;
        }
    }

    /// Each window is decoded told the audio of the window after it (which
    /// a session may encode meanwhile) where a permit is free for that, the
    /// last told nothing.
    #[test]
    fn each_window_is_told_the_next() {
        // 75 s: sound with a second of silence every 7 s, then 3 s of silence.
        let audio = sound(75, 7.0, 1.0, 72.0);
        // One section (the model decodes one window at a time), a second
        // permit free for the encoding.
        let echo = Echo {
            lanes: 1,
            ..Echo::new()
        };
        let opts = SttOptions::default();
        let vad = mediagen_speakers::vad::Energy;
        transcribe(&echo, &DecodeGate::new(2), &vad, &audio, &opts).unwrap();
        let windows = echo.windows.lock().unwrap();
        assert!(windows.len() >= 3, "{} windows", windows.len());
        for pair in windows.windows(2) {
            assert_eq!(pair[0].1.len(), pair[1].0.len());
            assert!(pair[0].1 == pair[1].0, "the next window is another audio");
        }
        assert!(windows.last().unwrap().1.is_empty());
        drop(windows);
        // With no permit to spare (another request decodes), none is told.
        let busy = Echo {
            lanes: 1,
            ..Echo::new()
        };
        transcribe(&busy, &DecodeGate::new(1), &vad, &audio, &opts).unwrap();
        let windows = busy.windows.lock().unwrap();
        assert!(windows.len() >= 3 && windows.iter().all(|w| w.1.is_empty()));
    }

    /// A file planned as a full window and a short one (38 s: 27.75 +
    /// 10.25 s) is cut into shares nearer equal, in a pause, so neither
    /// section waits on a full window; 20 s stays whole.
    #[test]
    fn few_windows_are_shared_between_sections() {
        use mediagen_speakers::vad::Energy;
        // Sound with half a second of silence every 4 s.
        let audio = sound(38, 4.0, 0.5, 38.0);
        let whole = |a: &[f32]| {
            let speech = Energy.probabilities(a).unwrap();
            sections(&a, &speech, 2).unwrap()
        };
        let bounds = whole(&audio);
        assert_eq!(bounds.len(), 3, "{bounds:?}");
        assert_eq!(bounds[1] % FRAME, 0);
        let cut = bounds[1] as f64 / RATE as f64;
        assert!(
            (14.0..=24.0).contains(&cut) && cut % 4.0 > 3.5,
            "cut at {cut}"
        );
        let short = &audio[..20 * RATE];
        assert_eq!(whole(short), vec![0, short.len()]);
        let silent = vec![0.0; 60 * RATE];
        assert_eq!(whole(&silent), vec![0, silent.len()]);
    }

    #[test]
    fn long_audio_is_decoded_in_sections_side_by_side_on_one_clock() {
        // 100 s of sound with a second of silence every 7 s.
        let audio = sound(100, 7.0, 1.0, 100.0);
        let echo = Echo::new();
        let mut seen = Vec::new();
        let t = transcribe_stream(
            &echo,
            &DecodeGate::new(2),
            &mediagen_speakers::vad::Energy,
            &SttOptions::default(),
            &audio.as_slice(),
            &mut |f| {
                seen.push(f);
                true
            },
        )
        .unwrap();
        assert_eq!(echo.threads.lock().unwrap().len(), 2, "two decodings");
        // Each section starts with a window of its own (no audio decoded
        // twice for context), cut in a pause: the whole file's plan in two
        // groups of two windows (all in all as many as one section takes).
        let firsts = echo.firsts.lock().unwrap().clone();
        assert_eq!(firsts.len(), 2, "{firsts:?}");
        assert!(firsts.iter().all(|&n| n <= MAX_CHUNK), "{firsts:?}");
        // Both decode beside the other, told no window to prepare (no core
        // is idle).
        assert_eq!(echo.beside.load(Ordering::Relaxed), 2);
        let windows = echo.windows.lock().unwrap();
        assert_eq!(windows.len(), 4);
        assert!(windows.iter().all(|w| w.1.is_empty()));
        assert_eq!((t.language.as_str(), t.duration), ("de", 100.0));
        // Segments in order, ids renumbered, the whole file heard once (the
        // chunks are cut inside the pauses, so they cover them too).
        assert!(t.segments.iter().enumerate().all(|(i, s)| s.id == i));
        heard_once(&t, 7.0);
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&1.0));
    }

    /// `audio` transcribed by `echo` with `permits` decodings at once,
    /// speech found by frame energy.
    fn energy_transcript(echo: &Echo, permits: usize, audio: &[f32]) -> Transcript {
        transcribe(
            echo,
            &DecodeGate::new(permits),
            &mediagen_speakers::vad::Energy,
            audio,
            &SttOptions::default(),
        )
        .unwrap()
    }

    /// Segments in order and 100 s of sound with a second of silence every
    /// `period` seconds heard once: each stretch of sound within a segment,
    /// the segments no longer than the file.
    fn heard_once(t: &Transcript, period: f64) {
        assert!(
            t.segments.windows(2).all(|w| w[0].end <= w[1].start + 1e-6),
            "{:?}",
            t.segments
        );
        let heard: f64 = t.segments.iter().map(|s| s.end - s.start).sum();
        assert!((95.0..=100.0).contains(&heard), "{heard} s heard");
        for k in 0..(100.0 / period) as usize {
            let mid = k as f64 * period + (period - 1.0) / 2.0;
            assert!(
                t.segments.iter().any(|s| s.start <= mid && mid <= s.end),
                "{mid} s not heard: {:?}",
                t.segments
            );
        }
    }

    /// A section after the first is decoded after the end of the one
    /// before it (about 3 s, from the start of a pause),
    /// whose words are left out: every second is heard once, at its time.
    #[test]
    fn a_section_is_decoded_after_a_lead_in_heard_once() {
        // 100 s of sound with a second of silence every 3 s (windows of
        // about 25 s, with room for a lead-in, which begins in a pause).
        let audio = sound(100, 3.0, 1.0, 100.0);
        let echo = Echo {
            takes_lead: true,
            ..Echo::new()
        };
        let t = energy_transcript(&echo, 2, &audio);
        // The second section starts in the pause 3 s before its own; its
        // own words from that pause's middle (the detector hears each
        // pause as 0.5-1 s).
        let leads = echo.leads.lock().unwrap().clone();
        assert_eq!(leads.len(), 1, "{leads:?}");
        assert!((2.7..=3.7).contains(&leads[0]), "{leads:?}");
        assert!(
            t.segments.last().unwrap().end <= 100.0 + 1e-6,
            "{:?}",
            t.segments
        );
        heard_once(&t, 3.0);
    }

    #[test]
    fn short_audio_or_one_decoding_stays_in_one_section() {
        let audio = vec![0.1f32; 20 * RATE];
        let echo = Echo::new();
        energy_transcript(&echo, 2, &audio);
        assert_eq!(echo.threads.lock().unwrap().len(), 1);
        let audio = vec![0.1f32; 90 * RATE];
        energy_transcript(&echo, 1, &audio);
        assert_eq!(echo.threads.lock().unwrap().len(), 1);
    }
}
