//! A dub's lines are sentences: the recogniser cuts its segments by time
//! (about every few seconds, often mid-sentence), and a fragment such as
//! "taken." or "on to do so." is translated without the words that give it
//! sense, then spoken as a line of its own. Consecutive segments of one
//! speaker are joined while the first does not end a sentence, the pause
//! between them is short and the line stays within a length that can still
//! be fitted to its place.

use mediagen_speech::stt::Segment;

/// The longest pause, seconds, a sentence is joined across.
const PAUSE: f64 = 1.0;
/// The longest line, seconds, joining makes.
const LONGEST: f64 = 15.0;

fn ends_sentence(text: &str) -> bool {
    text.trim_end()
        .trim_end_matches(['"', '\'', ')', '»', '”', '’'])
        .ends_with(['.', '!', '?', '…', '。', '！', '？'])
}

/// `segments` (in time order) with each unfinished sentence joined to the
/// segments that finish it.
pub(super) fn sentences(segments: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(segments.len());
    for s in segments {
        if let Some(last) = out.last_mut() {
            let joins = last.speaker == s.speaker
                && !ends_sentence(&last.text)
                && s.start - last.end <= PAUSE
                && s.end - last.start <= LONGEST;
            if joins {
                last.text = format!("{} {}", last.text.trim_end(), s.text.trim_start());
                last.end = s.end;
                continue;
            }
        }
        out.push(s);
    }
    for (i, s) in out.iter_mut().enumerate() {
        s.id = i;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(text: &str, start: f64, end: f64, speaker: &str) -> Segment {
        Segment {
            id: 0,
            start,
            end,
            text: text.into(),
            avg_logprob: 0.0,
            no_speech_prob: 0.0,
            compression_ratio: 1.0,
            speaker: Some(speaker.into()),
        }
    }

    fn said(s: &[Segment]) -> Vec<(&str, f64, f64)> {
        s.iter()
            .map(|s| (s.text.as_str(), s.start, s.end))
            .collect()
    }

    #[test]
    fn a_sentence_cut_by_the_recogniser_is_one_line() {
        let got = sentences(vec![
            segment(" He should make inquiries as to", 0.0, 4.0, "a"),
            segment(" the time of the last meal.", 4.1, 6.0, "a"),
            segment(" Yes.", 6.5, 7.0, "a"),
        ]);
        assert_eq!(
            said(&got),
            vec![
                (
                    " He should make inquiries as to the time of the last meal.",
                    0.0,
                    6.0
                ),
                (" Yes.", 6.5, 7.0),
            ]
        );
        assert_eq!(got[1].id, 1);
    }

    #[test]
    fn speakers_long_pauses_and_long_lines_are_not_joined() {
        let got = sentences(vec![
            segment(" So you", 0.0, 1.0, "a"),
            segment(" say", 1.2, 1.6, "b"),
            segment(" and then", 3.0, 4.0, "b"),
            segment(" after a while", 4.2, 12.0, "b"),
            segment(" it ended", 12.1, 20.0, "b"),
        ]);
        assert_eq!(
            said(&got),
            vec![
                (" So you", 0.0, 1.0),
                (" say", 1.2, 1.6),
                (" and then after a while", 3.0, 12.0),
                (" it ended", 12.1, 20.0),
            ]
        );
        assert!(ends_sentence("He said \"stop.\""));
        assert!(!ends_sentence("Mr"));
    }
}
