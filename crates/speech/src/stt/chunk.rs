//! Voice-activity-based chunking of long audio: silence is skipped, and
//! speech is cut into pieces of at most one recogniser window (30 s) at the
//! longest pause, so words are not split and memory stays bounded. Which
//! frames hold speech comes from a voice-activity detector
//! ([`mediagen_speakers::vad`]: Silero, or frame energy without its model).

use mediagen_speakers::vad::energy::{levels, threshold};
use mediagen_speakers::vad::{self, Vad, VadError, FRAME};

use super::SttError;

/// Samples per second of recogniser input.
pub const RATE: usize = mediagen_speakers::RATE;
/// Longest chunk: whisper's window.
pub const MAX_CHUNK: usize = RATE * 30 - FRAME;
/// Shortest chunk cut before the end of the audio.
const MIN_CHUNK: usize = RATE * 12;
/// Chunks are cut at a pause before this length where they can: whisper
/// tends to leave out the last words of a window filled to its end, and
/// what it leaves out is decoded again at the start of the next window
/// (see `Window::consumed`). On our 294-s benchmark clip, engine alone:
/// cuts by 24 s took 47.5 s at 2.7 % WER, by 27 s 45.5 s at 2.7 %, by 28 s
/// 44.0 s at 3.1 %.
const AIM: usize = RATE * 29;
/// Audio kept around speech.
const PAD: usize = RATE * 3 / 10;
/// Silent frames that make a clear pause (192 ms).
const CLEAR_PAUSE: usize = 6;
/// Audio a detector is given at once (60 s, whole frames).
const BLOCK: usize = FRAME * 1875;

/// What to do with the buffered audio next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Read more audio first.
    NeedMore,
    /// Drop this many leading samples: no speech in them.
    Skip(usize),
    /// Transcribe the first `end` samples (then drop them).
    Chunk { end: usize },
    /// Nothing left.
    Done,
}

/// Speech frames held for `hold` frames either side (7: 224 ms, so short
/// gaps inside words do not count as pauses). Erring towards speech only
/// costs decoding time; erring the other way would lose words.
fn voiced(speech: &[bool], hold: usize) -> Vec<bool> {
    (0..speech.len())
        .map(|i| {
            let lo = i.saturating_sub(hold);
            let hi = (i + hold + 1).min(speech.len());
            speech[lo..hi].iter().any(|&v| v)
        })
        .collect()
}

/// The speech probability of every frame of `len` samples of `audio` from
/// sample `at`, by `vad`, read a minute at a time (so memory stays
/// bounded); frame `i` starts at sample `at + i * FRAME`.
pub fn probabilities(
    vad: &dyn Vad,
    audio: &dyn super::AudioSource,
    at: usize,
    len: usize,
) -> Result<Vec<f32>, SttError> {
    let mut out = Vec::with_capacity(len / FRAME + 1);
    let mut from = at;
    while from < at + len {
        let piece = audio.read_at(from, BLOCK.min(at + len - from))?;
        if piece.is_empty() {
            break;
        }
        out.extend(vad.probabilities(&piece).map_err(failed)?);
        from += piece.len();
    }
    Ok(out)
}

/// Every chunk [`plan`] cuts `range` of `audio` into when the decoder
/// takes each whole, as sample ranges of `audio`; `speech` holds the speech
/// probabilities of the range's frames (frame `i` from sample
/// `range.start + i * FRAME`, as [`probabilities`] gives them). Reads two
/// windows at a time.
pub fn chunks(
    audio: &dyn super::AudioSource,
    range: std::ops::Range<usize>,
    speech: &[f32],
) -> Result<Vec<std::ops::Range<usize>>, SttError> {
    let (mut buf, mut offset, mut ended) = (Vec::<f32>::new(), 0usize, false);
    let mut out = Vec::new();
    loop {
        if !ended && buf.len() < 2 * MAX_CHUNK {
            let at = range.start + offset + buf.len();
            let want = 2 * MAX_CHUNK - buf.len();
            let more = audio.read_at(at, want.min(range.end - at))?;
            ended = more.len() < want;
            buf.extend_from_slice(&more);
        }
        match plan(&buf, &speech[(offset / FRAME).min(speech.len())..], ended) {
            Plan::Done => return Ok(out),
            Plan::NeedMore => continue,
            Plan::Skip(n) => {
                buf.drain(..n);
                offset += n;
            }
            Plan::Chunk { end } => {
                out.push(range.start + offset..range.start + offset + end);
                buf.drain(..end);
                offset += end;
            }
        }
    }
}

fn failed(e: VadError) -> SttError {
    SttError::Failed(e.to_string())
}

/// Plans the next step for `buf` (the audio not yet handled), whose frames
/// have the speech probabilities `speech` (frame `i` from sample
/// `i * FRAME`; frames past its end count as silence); `ended` when no
/// more audio will come. Feed it at least two windows when you can.
pub fn plan(buf: &[f32], speech: &[f32], ended: bool) -> Plan {
    if buf.is_empty() {
        return if ended { Plan::Done } else { Plan::NeedMore };
    }
    if !ended && buf.len() < MAX_CHUNK {
        return Plan::NeedMore;
    }
    let levels = levels(buf);
    let mut flags = vad::speech(&speech[..speech.len().min(buf.len().div_ceil(FRAME))]);
    flags.resize(buf.len().div_ceil(FRAME), false);
    let voiced = voiced(&flags, 7);
    let Some(first) = voiced.iter().position(|&v| v) else {
        // No speech: drop all of it (but keep a little to be joined with
        // what comes next, in case speech starts right at the end).
        let keep = if ended { 0 } else { PAD };
        return Plan::Skip(buf.len() - keep.min(buf.len())).nonzero_or(ended);
    };
    let start = (first * FRAME).saturating_sub(PAD);
    if start > 0 {
        return Plan::Skip(start);
    }
    if ended && buf.len() <= MAX_CHUNK {
        let last = voiced.iter().rposition(|&v| v).unwrap_or(0);
        let end = ((last + 1) * FRAME + PAD).min(buf.len());
        return Plan::Chunk { end };
    }
    // Cut in the middle of the latest pause between MIN_CHUNK and AIM
    // that is about as long as the longest there (a frame shorter, or a
    // clear pause: 160 ms or more between words), so the recogniser runs
    // few windows and none so full that it drops its last words: a voice
    // that pauses 130 ms between sentences is cut there, not at the one
    // longer pause half a window in (a window more to encode). With none
    // there, at the first clear pause up to MAX_CHUNK; else in the longest
    // pause of 90 ms or more; with no pause at all, at the quietest frame
    // of the last five seconds.
    let voiced = flags;
    let lo = MIN_CHUNK / FRAME;
    let hi = (MAX_CHUNK / FRAME).min(voiced.len());
    let aim = AIM / FRAME;
    let all: Vec<(usize, usize)> = pauses(&voiced, lo, hi).collect();
    let by_aim = || all.iter().filter(|&&(_, middle)| middle <= aim);
    let latest = by_aim().map(|&(run, _)| run).max().and_then(|top| {
        let enough = top.min(CLEAR_PAUSE).saturating_sub(1).max(3);
        by_aim().rfind(|&&(run, _)| run >= enough).map(|&(_, m)| m)
    });
    let later = all
        .iter()
        .find(|&&(run, middle)| middle > aim && run >= CLEAR_PAUSE)
        .map(|&(_, middle)| middle);
    // The longest, the later of equals.
    let longest = all
        .iter()
        .max_by_key(|&&(run, _)| run)
        .filter(|&&(run, _)| run >= 3)
        .map(|&(_, middle)| middle);
    let best = latest.or(later).or(longest);
    let cut = best.unwrap_or_else(|| {
        quietest(&levels, hi.saturating_sub(5 * RATE / FRAME)..hi).unwrap_or(hi)
    });
    Plan::Chunk {
        end: (cut * FRAME).clamp(FRAME, buf.len()),
    }
}

/// The pauses (runs of unvoiced frames) between frames `lo` and `hi`: their
/// length and middle frame, in order.
fn pauses(voiced: &[bool], lo: usize, hi: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = lo;
    std::iter::from_fn(move || {
        while i < hi && voiced[i] {
            i += 1;
        }
        if i >= hi {
            return None;
        }
        let start = i;
        while i < hi && !voiced[i] {
            i += 1;
        }
        Some((i - start, start + (i - start) / 2))
    })
}

/// The quietest frame of `frames`.
fn quietest(levels: &[f32], frames: std::ops::Range<usize>) -> Option<usize> {
    frames.min_by(|&a, &b| levels[a].total_cmp(&levels[b]))
}

/// Where to split `audio` near sample `at` into parts decoded apart: in the
/// middle of the longest pause within 5 s either side (by the speech
/// probabilities `speech` of its frames, frame `i` from sample `i * FRAME`),
/// else at the quietest frame there.
pub fn split_near(audio: &[f32], speech: &[f32], at: usize) -> usize {
    let levels = levels(audio);
    let voiced = vad::speech(speech);
    let lo = at.saturating_sub(5 * RATE) / FRAME;
    // A detector may leave out a last partial frame.
    let hi = ((at + 5 * RATE) / FRAME)
        .min(levels.len())
        .min(voiced.len());
    if lo >= hi {
        return at.min(audio.len());
    }
    let longest = pauses(&voiced, lo, hi).fold(None, |best: Option<(usize, usize)>, p| {
        best.filter(|b| b.0 >= p.0).or(Some(p))
    });
    let frame = longest
        .map(|(_, middle)| middle)
        .or_else(|| quietest(&levels, lo..hi))
        .unwrap_or(lo);
    (frame * FRAME).min(audio.len())
}

/// The first frame (as a sample) of the pause that sample `at` lies in,
/// by the speech probabilities `speech` of the whole audio (frame `i` from
/// sample `i * FRAME`), looking back at most a second; `at` on its frame
/// when it is not in a pause. A part cut there begins with the whole
/// pause: whisper, at the start of a window with no text before it, can
/// drop a first syllable heard after too little silence ("Prendía" for
/// "Aprendí a" after 80 ms, right after 110 ms; tried on the corpus).
pub fn pause_start(speech: &[f32], at: usize) -> usize {
    let frame = (at / FRAME).min(speech.len());
    let from = frame.saturating_sub(RATE / FRAME);
    let flags = vad::speech(&speech[from..frame]);
    let silent = flags.iter().rev().take_while(|&&v| !v).count();
    (frame - silent) * FRAME
}

/// Where a lead-in meant to begin at sample `start` begins, before a
/// section that begins in the pause at sample `at`: at the start of the
/// pause `start` lies in or of the last one in the 1.5 s before it, or
/// else of the first one after it; `at` (no lead-in) when none comes
/// before. One begun inside a word made whisper skip the sentence after it
/// (a whole sentence lost on a sparse espeak-ng clip of the corpus, seed
/// 25577).
pub fn lead_start(speech: &[f32], start: usize, at: usize) -> usize {
    let frame = (start / FRAME).min(speech.len());
    let end = (at / FRAME).min(speech.len());
    if frame >= end {
        return at;
    }
    let back = 3 * RATE / 2 / FRAME;
    // A second more before it, for the detector's hysteresis.
    let from = frame.saturating_sub(back + RATE / FRAME);
    let flags = vad::speech(&speech[from..end]);
    let (here, earliest) = (frame - from, (frame - from).saturating_sub(back));
    if let Some(j) = flags[earliest..=here].iter().rposition(|&v| !v) {
        return pause_start(speech, (from + earliest + j) * FRAME);
    }
    flags[here..]
        .iter()
        .position(|&v| !v)
        .map_or(at, |j| (frame + j) * FRAME)
}

/// The first sample of speech at or after sample `at`, by the speech
/// probabilities `speech` of the whole audio, looking ahead at most two
/// seconds (`at` on its frame when no speech follows within them).
pub fn pause_end(speech: &[f32], at: usize) -> usize {
    let frame = (at / FRAME).min(speech.len());
    let to = (frame + 2 * RATE / FRAME).min(speech.len());
    let flags = vad::speech(&speech[frame..to]);
    let silent = flags.iter().take_while(|&&v| !v).count();
    if silent == flags.len() {
        frame * FRAME
    } else {
        (frame + silent) * FRAME
    }
}

/// Whether `audio` holds speech (judged against the level of `context`,
/// the audio around it): at least 0.3 s of it.
pub fn has_speech(audio: &[f32], context: &[f32]) -> bool {
    let all = levels(context);
    if all.is_empty() {
        return false;
    }
    let threshold = threshold(&all);
    levels(audio).iter().filter(|&&l| l > threshold).count() * FRAME >= RATE * 3 / 10
}

impl Plan {
    fn nonzero_or(self, ended: bool) -> Plan {
        match self {
            Plan::Skip(0) if ended => Plan::Done,
            Plan::Skip(0) => Plan::NeedMore,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mediagen_speakers::vad::Energy;

    fn tone(seconds: f64) -> Vec<f32> {
        (0..(seconds * RATE as f64) as usize)
            .map(|i| 0.3 * (i as f32 * 0.05).sin())
            .collect()
    }

    fn silence(seconds: f64) -> Vec<f32> {
        vec![0.0; (seconds * RATE as f64) as usize]
    }

    /// The chunks of `audio` as (start, end) seconds.
    fn chunks(audio: &[f32]) -> Vec<(f64, f64)> {
        let speech = Energy.probabilities(audio).unwrap();
        super::chunks(&audio, 0..audio.len(), &speech)
            .unwrap()
            .into_iter()
            .map(|c| (c.start as f64 / RATE as f64, c.end as f64 / RATE as f64))
            .collect()
    }

    #[test]
    fn silence_is_skipped_and_speech_padded() {
        let mut audio = silence(5.0);
        audio.extend(tone(3.0));
        audio.extend(silence(10.0));
        let c = chunks(&audio);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!((c[0].0 - 4.5).abs() < 0.1, "{c:?}");
        assert!((c[0].1 - 8.5).abs() < 0.1, "{c:?}");
        assert!(chunks(&silence(70.0)).is_empty());
    }

    #[test]
    fn long_speech_is_cut_at_pauses_within_one_window() {
        // 8 s phrases with 0.3 s pauses and one long pause.
        let mut audio = Vec::new();
        for i in 0..12 {
            audio.extend(tone(8.0));
            audio.extend(silence(if i == 2 { 1.5 } else { 0.5 }));
        }
        let c = chunks(&audio);
        for (i, (s, e)) in c.iter().enumerate() {
            assert!(e - s <= 30.0, "{c:?}");
            if i > 0 {
                assert!(*s >= c[i - 1].1, "{c:?}");
            }
        }
        // The first cut falls in the last pause before 27 s (the long one,
        // after the third phrase), the next ones likewise.
        assert!((c[0].1 - 25.75).abs() < 0.1, "{c:?}");
        assert!(c.len() <= 6, "{c:?}");
        // Nothing is lost: every phrase lies inside some chunk.
        let total: f64 = c.iter().map(|(s, e)| e - s).sum();
        assert!(total >= 12.0 * 8.0, "{c:?}");
    }

    /// A speaker who pauses briefly between sentences: the cut falls in
    /// the late short pause (a frame shorter than the early long one), not
    /// half a window in, so the file takes two windows rather than three.
    #[test]
    fn a_late_short_pause_beats_an_early_long_one() {
        let audio: Vec<f32> = [
            tone(14.0),
            silence(0.4),
            tone(12.0),
            silence(0.2),
            tone(12.0),
        ]
        .concat();
        let c = chunks(&audio);
        assert_eq!(c.len(), 2, "{c:?}");
        assert!((c[0].1 - 26.5).abs() < 0.15, "{c:?}");
    }

    #[test]
    fn unbroken_sound_is_cut_at_most_one_window_long() {
        let c = chunks(&tone(75.0));
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c.iter().all(|(s, e)| e - s <= 30.0));
        assert!((c[2].1 - 75.0).abs() < 0.05);
    }

    #[test]
    fn a_short_file_ending_mid_frame_is_split_within_it() {
        // 3.3 s: the last frame is partial; a detector leaves it out (as
        // Silero does), all of it speech.
        let audio = tone(3.3);
        let speech = vec![1.0; audio.len() / FRAME];
        assert!(split_near(&audio, &speech, audio.len() / 2) <= audio.len());
    }

    #[test]
    fn a_pause_is_found_back_to_its_start() {
        // Sound, 0.5 s of silence from 2 s, sound again.
        let audio: Vec<f32> = [tone(2.0), silence(0.5), tone(2.0)].concat();
        let speech = Energy.probabilities(&audio).unwrap();
        let start = pause_start(&speech, (2.3 * RATE as f64) as usize);
        let at = start as f64 / RATE as f64;
        assert!((1.95..=2.05).contains(&at), "pause from {at}");
        assert_eq!(start % FRAME, 0);
        // In sound: the frame of `at` itself.
        assert_eq!(pause_start(&speech, RATE + 100), RATE / FRAME * FRAME);
    }

    #[test]
    fn a_lead_in_begins_in_a_pause() {
        // Sound to 2 s, a pause to 2.5 s, sound to 5 s, the section's pause
        // from 5 s.
        let audio: Vec<f32> = [tone(2.0), silence(0.5), tone(2.5), silence(1.0)].concat();
        let speech = Energy.probabilities(&audio).unwrap();
        let secs = |s: usize| s as f64 / RATE as f64;
        let section = pause_start(&speech, (5.5 * RATE as f64) as usize);
        let from = |start: f64| secs(lead_start(&speech, (start * RATE as f64) as usize, section));
        // Meant to begin inside the pause, or in the sound up to 1.5 s
        // after it: at its start, not inside a word.
        for start in [2.3, 3.0, 3.9] {
            assert!(
                (1.95..=2.05).contains(&from(start)),
                "from {} for {start}",
                from(start)
            );
        }
        // In the sound before it: at that pause (the first after).
        assert!((1.95..=2.05).contains(&from(1.0)), "from {}", from(1.0));
        // Later in the sound after it: no pause before the section's own,
        // so no lead-in.
        assert_eq!(
            lead_start(&speech, (4.2 * RATE as f64) as usize, section),
            section
        );
    }

    #[test]
    fn parts_are_split_in_the_longest_pause_near_the_cut() {
        // Sound with a short pause 2 s before the cut and a long one 3 s
        // after it: the split falls in the middle of the long one.
        let audio: Vec<f32> = [
            tone(98.0),
            silence(0.2),
            tone(4.8),
            silence(0.8),
            tone(20.0),
        ]
        .concat();
        let speech = Energy.probabilities(&audio).unwrap();
        let at = split_near(&audio, &speech, 100 * RATE) as f64 / RATE as f64;
        assert!((at - 103.4).abs() < 0.1, "split at {at}");
        // No pause within 5 s: the quietest frame there, still near the cut.
        let loud: Vec<f32> = (0..30 * RATE)
            .map(|i| {
                (0.2 + 0.1 * (i as f32 / RATE as f32 - 12.0).abs().min(1.0))
                    * (i as f32 * 0.05).sin()
            })
            .collect();
        let speech = Energy.probabilities(&loud).unwrap();
        let at = split_near(&loud, &speech, 10 * RATE) as f64 / RATE as f64;
        assert!((at - 12.0).abs() < 0.1, "split at {at}");
    }
}
