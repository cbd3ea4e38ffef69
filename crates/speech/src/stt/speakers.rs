//! Speakers in a transcript: every word and segment takes the speaker who
//! speaks most during it (by a [`Diarization`]), a segment whose words
//! change speaker is cut there, and each segment spans its words (its
//! speaker's speech, not the pause after it).

use mediagen_speakers::diarize::Diarization;

use super::{Overlap, Segment, SpeakerTime, Transcript, RATE};

/// Overlapped speech shorter than this (s) is not reported.
const MIN_OVERLAP: f64 = 0.2;

fn label(speaker: usize) -> String {
    format!("speaker_{speaker}")
}

fn samples(seconds: f64) -> usize {
    (seconds.max(0.0) * RATE as f64) as usize
}

/// Each segment's words, as a range of `t.words`. The words are the
/// segments' text in order, so they are dealt out by each segment's count
/// of words; where the counts disagree (text the words do not cover),
/// each segment takes the words whose middle lies before its end. Times
/// alone are not enough: a segment's end and its words' times come from
/// different steps of the recogniser, and a turn's first word often lies
/// before the end of the segment before it.
fn words_of_segments(t: &Transcript) -> Vec<std::ops::Range<usize>> {
    let counts: Vec<usize> = t
        .segments
        .iter()
        .map(|s| s.text.split_whitespace().count())
        .collect();
    let mut next = 0;
    if counts.iter().sum::<usize>() == t.words.len() {
        return counts
            .iter()
            .map(|n| {
                next += n;
                next - n..next
            })
            .collect();
    }
    t.segments
        .iter()
        .map(|seg| {
            let first = next;
            while next < t.words.len() && (t.words[next].start + t.words[next].end) / 2.0 <= seg.end
            {
                next += 1;
            }
            first..next
        })
        .collect()
}

/// Labels `t`'s words and segments with `d`'s speakers, cutting segments
/// at speaker changes between their words, and lists the speakers with
/// their speaking time. Needs word timestamps to cut segments (without
/// them, each segment takes one speaker).
pub fn attribute(t: &mut Transcript, d: &Diarization) {
    if d.voices.is_empty() {
        return;
    }
    for w in &mut t.words {
        w.speaker = d
            .speaker_of(samples(w.start)..samples(w.end).max(samples(w.start) + 1))
            .map(label);
    }
    let mut out: Vec<Segment> = Vec::with_capacity(t.segments.len());
    let owned = words_of_segments(t);
    for (seg, range) in std::mem::take(&mut t.segments).into_iter().zip(owned) {
        let words = &t.words[range];
        let whole = d
            .speaker_of(samples(seg.start)..samples(seg.end).max(samples(seg.start) + 1))
            .map(label);
        let changes = words.windows(2).any(|p| p[0].speaker != p[1].speaker);
        if !changes {
            let speaker = words.first().and_then(|w| w.speaker.clone()).or(whole);
            // A turn is its speech: bounded by its words where there are
            // any (a segment's own bounds often take in the pause after it).
            let (start, end) = match (words.first(), words.last()) {
                (Some(a), Some(b)) => (a.start, b.end),
                _ => (seg.start, seg.end),
            };
            out.push(Segment {
                speaker,
                start,
                end,
                ..seg
            });
            continue;
        }
        // Runs of one speaker's words, each a segment of its own.
        let mut k = 0;
        while k < words.len() {
            let mut j = k;
            while j + 1 < words.len() && words[j + 1].speaker == words[k].speaker {
                j += 1;
            }
            let run = &words[k..=j];
            let text = run
                .iter()
                .map(|w| w.word.trim())
                .collect::<Vec<_>>()
                .join(" ");
            out.push(Segment {
                start: run[0].start,
                end: run[run.len() - 1].end,
                text,
                speaker: run[0].speaker.clone(),
                ..seg.clone()
            });
            k = j + 1;
        }
    }
    for (i, s) in out.iter_mut().enumerate() {
        s.id = i;
    }
    t.segments = out;
    t.overlaps = d
        .overlaps((MIN_OVERLAP * RATE as f64) as usize)
        .into_iter()
        .map(|(r, who)| Overlap {
            start: r.start as f64 / RATE as f64,
            end: r.end as f64 / RATE as f64,
            speakers: who.into_iter().map(label).collect(),
        })
        .collect();
    t.speakers = d
        .speaking()
        .iter()
        .enumerate()
        .map(|(k, &n)| SpeakerTime {
            id: label(k),
            seconds: n as f64 / RATE as f64,
        })
        .collect();
}

/// `t`'s segments as subtitles show them: a segment during which another
/// speaker is also heard (for half a second, or a third of it) names both
/// (`speaker_0 + speaker_1`).
pub fn with_overlaps(t: &Transcript) -> Vec<Segment> {
    t.segments
        .iter()
        .map(|s| {
            let Some(main) = &s.speaker else {
                return s.clone();
            };
            let enough = (0.5f64).min((s.end - s.start) / 3.0);
            let mut who = vec![main.clone()];
            for o in &t.overlaps {
                let shared = o.end.min(s.end) - o.start.max(s.start);
                if shared >= enough && o.speakers.contains(main) {
                    for other in &o.speakers {
                        if !who.contains(other) {
                            who.push(other.clone());
                        }
                    }
                }
            }
            Segment {
                speaker: Some(who.join(" + ")),
                ..s.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stt::Word;
    use mediagen_speakers::diarize::Turn;
    use mediagen_speakers::encoder::Embedding;

    fn word(w: &str, start: f64, end: f64) -> Word {
        Word {
            word: format!(" {w}"),
            start,
            end,
            probability: 1.0,
            speaker: None,
        }
    }

    fn segment(text: &str, start: f64, end: f64) -> Segment {
        Segment {
            id: 0,
            start,
            end,
            text: text.into(),
            avg_logprob: 0.0,
            no_speech_prob: 0.0,
            compression_ratio: 1.0,
            speaker: None,
        }
    }

    /// Speaker 0 until 1.6 s, speaker 1 from 2.4 s to 3.5 s.
    fn two_turns() -> Diarization {
        let s = |x: f64| (x * RATE as f64) as usize;
        Diarization {
            turns: vec![
                Turn {
                    speaker: 0,
                    range: s(0.0)..s(1.6),
                },
                Turn {
                    speaker: 1,
                    range: s(2.4)..s(3.5),
                },
            ],
            voices: vec![Embedding(vec![1.0]), Embedding(vec![0.0])],
        }
    }

    /// "Are you there?", said from 0 to 1.5 s.
    fn asked() -> Vec<Word> {
        vec![
            word("Are", 0.0, 0.4),
            word("you", 0.4, 0.8),
            word("there?", 0.8, 1.5),
        ]
    }

    fn lines(t: &Transcript) -> Vec<(String, Option<String>, f64, f64)> {
        t.segments
            .iter()
            .map(|s| (s.text.clone(), s.speaker.clone(), s.start, s.end))
            .collect()
    }

    #[test]
    fn a_segment_is_cut_where_its_words_change_speaker() {
        let mut t = Transcript {
            segments: vec![segment("Are you there? Yes.", 0.0, 4.0)],
            words: [asked(), vec![word("Yes.", 2.5, 3.0)]].concat(),
            ..Transcript::default()
        };
        attribute(&mut t, &two_turns());
        assert_eq!(
            lines(&t),
            vec![
                ("Are you there?".into(), Some("speaker_0".into()), 0.0, 1.5),
                ("Yes.".into(), Some("speaker_1".into()), 2.5, 3.0),
            ]
        );
        assert_eq!(t.words[3].speaker.as_deref(), Some("speaker_1"));
        assert_eq!(t.speakers.len(), 2);
        assert!((t.speakers[0].seconds - 1.6).abs() < 1e-3);
    }

    /// A segment whose end takes in the next turn's first word keeps its
    /// own words: that word is neither a line of its own nor said twice.
    #[test]
    fn words_stay_with_the_segment_that_says_them() {
        let mut t = Transcript {
            segments: vec![
                segment("Are you there?", 0.0, 2.8),
                segment("Yes indeed.", 2.6, 3.5),
            ],
            words: [
                asked(),
                vec![word("Yes", 2.5, 2.8), word("indeed.", 2.8, 3.3)],
            ]
            .concat(),
            ..Transcript::default()
        };
        attribute(&mut t, &two_turns());
        assert_eq!(
            lines(&t),
            vec![
                ("Are you there?".into(), Some("speaker_0".into()), 0.0, 1.5),
                ("Yes indeed.".into(), Some("speaker_1".into()), 2.5, 3.3),
            ]
        );
    }
}
