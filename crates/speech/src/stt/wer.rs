//! Word error rate: how far a transcript is from the words it should be.

use crate::tts::normalize::normalize;

/// The word error rate of `hypothesis` against `reference`: substitutions,
/// insertions and deletions over the reference's words, the words
/// lower-cased and punctuation ignored (an apostrophe kept).
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c.is_whitespace() || c == '\'' {
                    c
                } else {
                    ' '
                }
            })
            .collect::<String>()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    error_rate(&words(reference), &words(hypothesis))
}

/// [`word_error_rate`] of the words as they are said in `language`
/// (BCP-47): numbers, ordinals, symbols and abbreviations written out by
/// the text normaliser ([`normalize`]) on both sides first, so a
/// recogniser's "4 hours" is the "Four hours" a voice said (as the
/// normalisers of published recogniser figures do). For a round trip,
/// where what was said is known; the recogniser benches compare text as
/// written.
pub fn spoken_word_error_rate(language: &str, reference: &str, hypothesis: &str) -> f64 {
    word_error_rate(
        &normalize(reference, language),
        &normalize(hypothesis, language),
    )
}

/// The character error rate of `hypothesis` against `reference`, for
/// languages written without spaces between words (Japanese, Chinese):
/// edits over the reference's letters and digits (lower-cased), everything
/// else ignored.
pub fn character_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let letters = |s: &str| -> Vec<char> {
        s.to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect()
    };
    error_rate(&letters(reference), &letters(hypothesis))
}

/// Substitutions, insertions and deletions turning `r` into `h`, over
/// `r`'s length.
fn error_rate<T: PartialEq>(r: &[T], h: &[T]) -> f64 {
    // One row of the edit-distance table at a time.
    let mut row: Vec<usize> = (0..=h.len()).collect();
    for i in 1..=r.len() {
        let mut diagonal = row[0];
        row[0] = i;
        for j in 1..=h.len() {
            let substituted = diagonal + usize::from(r[i - 1] != h[j - 1]);
            diagonal = row[j];
            row[j] = substituted.min(row[j] + 1).min(row[j - 1] + 1);
        }
    }
    row[h.len()] as f64 / r.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::{character_error_rate, word_error_rate};

    #[test]
    fn counts_character_edits_without_punctuation() {
        assert_eq!(character_error_rate("今日は晴れ。", "今日は晴れ"), 0.0);
        assert_eq!(character_error_rate("今日は晴れ", "今日は雨"), 2.0 / 5.0);
    }

    #[test]
    fn numbers_count_as_said() {
        use super::spoken_word_error_rate as spoken;
        assert_eq!(spoken("en", "Four hours of work.", "4 hours of work"), 0.0);
        assert_eq!(spoken("en", "On the 5th day", "on the fifth day"), 0.0);
        assert_eq!(spoken("es", "Cuatro horas", "4 horas"), 0.0);
        // A homophone is still a word misheard.
        assert_eq!(spoken("en", "Four hours", "for hours"), 0.5);
        assert_eq!(word_error_rate("Four hours", "4 hours"), 0.5);
    }

    #[test]
    fn counts_edits_over_the_reference_words() {
        assert_eq!(word_error_rate("The cat sat.", "the cat sat"), 0.0);
        assert_eq!(word_error_rate("the cat sat", "the dog sat"), 1.0 / 3.0);
        assert_eq!(word_error_rate("the cat sat", "the cat"), 1.0 / 3.0);
        assert_eq!(word_error_rate("the cat", "the big cat sat"), 1.0);
        assert_eq!(word_error_rate("", ""), 0.0);
    }
}
