//! Tidying word times from cross-attention alignment. The alignment gives
//! a word all the time up to the next word, so a word before a pause (the
//! end of a sentence, the end of a window) takes the pause in too, and the
//! first word after one may start early. Such a word is cut to at most
//! [`LONGEST`] times the median word's length, as whisper's own word
//! timestamps do.

use super::Word;

/// Longest a word at a pause may last, in medians of the window's words.
const LONGEST: f64 = 2.0;
/// The median used is at most this, seconds (slow speech has long words,
/// but none that long).
const MEDIAN_CAP: f64 = 0.7;

fn ends_sentence(word: &str) -> bool {
    word.ends_with(['.', '!', '?', '。', '！', '？'])
}

/// Cuts words that run into a pause: a sentence's last word, and the last
/// word of all, end at most [`LONGEST`] medians after they start; a
/// sentence's first word starts at most that long before it ends.
pub fn clamp_long_words(words: &mut [Word]) {
    let mut lengths: Vec<f64> = words
        .iter()
        .map(|w| w.end - w.start)
        .filter(|&d| d > 0.0)
        .collect();
    if lengths.is_empty() {
        return;
    }
    lengths.sort_by(f64::total_cmp);
    let median = lengths[lengths.len() / 2].min(MEDIAN_CAP);
    let longest = LONGEST * median;
    let last = words.len() - 1;
    for i in 0..words.len() {
        let before_pause = i == last || ends_sentence(&words[i].word);
        let after_pause = i > 0 && ends_sentence(&words[i - 1].word);
        let w = &mut words[i];
        if w.end - w.start > longest {
            if before_pause {
                w.end = w.start + longest;
            } else if after_pause {
                w.start = w.end - longest;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(w: &str, start: f64, end: f64) -> Word {
        Word {
            word: w.into(),
            start,
            end,
            probability: 1.0,
            speaker: None,
        }
    }

    #[test]
    fn words_at_pauses_lose_the_pause() {
        let mut words = vec![
            word("He", 0.0, 0.2),
            word("lit", 0.2, 0.5),
            word("the", 0.5, 0.7),
            word("lamp.", 0.7, 2.9), // runs through the pause
            word("Then", 1.0, 3.3),  // starts in it
            word("he", 3.3, 3.5),
            word("slept", 3.5, 3.8),
            word("well", 3.8, 6.0), // the last word
        ];
        clamp_long_words(&mut words);
        // Median word: 0.3 s, so at most 0.6 s.
        let times: Vec<(f64, f64)> = words.iter().map(|w| (w.start, w.end)).collect();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(times[3].1, 1.3), "{times:?}");
        assert!(close(times[4].0, 2.7), "{times:?}");
        assert!(close(times[7].1, 4.4), "{times:?}");
        // Other words are left as they were.
        assert_eq!(times[1], (0.2, 0.5));
        assert_eq!(times[5], (3.3, 3.5));
    }

    #[test]
    fn a_long_word_mid_sentence_is_kept() {
        let mut words = vec![
            word("a", 0.0, 0.2),
            word("loooong", 0.2, 2.0),
            word("word.", 2.0, 2.3),
        ];
        clamp_long_words(&mut words);
        assert_eq!((words[1].start, words[1].end), (0.2, 2.0));
        clamp_long_words(&mut []);
    }
}
