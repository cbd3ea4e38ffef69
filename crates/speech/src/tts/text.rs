//! Splitting text into sentences (synthesis units) and clauses (phrasing).

/// Whether `c` is part of a word: letters, digits, apostrophes and hyphens.
/// The translator's kept words and the runs a voice reads them in are cut
/// by it alike, so a kept word is found where it was left.
pub fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '\'' || c == '-'
}

/// Longest sentence sent to an engine at once; longer ones are cut at the
/// last clause break (or space) before this many characters.
const MAX_SENTENCE: usize = 300;

/// Splits at `.`, `!`, `?`, `…`, the full-width `。`, `！`, `？` and line
/// breaks, keeping the punctuation. A period after a single capital letter
/// or inside a number does not end a sentence.
pub fn sentences(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '\n' || c == '\r' {
            push(&mut out, &mut cur);
            continue;
        }
        cur.push(c);
        let next = chars.get(i + 1).copied();
        let ends = match c {
            '!' | '?' | '…' => next.is_none_or(|n| n.is_whitespace() || n == '"' || n == '\''),
            // Japanese and Chinese sentences end without a space after.
            '。' | '！' | '？' => next != Some('」'),
            '.' => {
                let after_space = next.is_none_or(char::is_whitespace);
                let initial = i >= 1
                    && chars[i - 1].is_uppercase()
                    && (i < 2 || !chars[i - 2].is_alphanumeric());
                after_space && !initial
            }
            _ => false,
        };
        if ends {
            push(&mut out, &mut cur);
        }
    }
    push(&mut out, &mut cur);
    out.into_iter().flat_map(|s| cut_long(&s)).collect()
}

fn push(out: &mut Vec<String>, cur: &mut String) {
    let s = cur.trim();
    if s.chars().any(char::is_alphanumeric) {
        out.push(s.to_owned());
    }
    cur.clear();
}

fn cut_long(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = s.to_owned();
    while rest.chars().count() > MAX_SENTENCE {
        let head: String = rest.chars().take(MAX_SENTENCE).collect();
        let cut = head
            .char_indices()
            .rev()
            .find(|(_, c)| [',', ';', ':', '、', '，'].contains(c))
            .map(|(i, c)| i + c.len_utf8())
            .or_else(|| head.rfind(' '))
            .unwrap_or(head.len());
        parts.push(rest[..cut].trim().to_owned());
        rest = rest[cut..].trim().to_owned();
    }
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts
}

/// Splits a sentence into clauses at `, ; : . ! ?`, each with the
/// punctuation that ends it (`None` for a final clause without one).
pub fn clauses(sentence: &str) -> Vec<(String, Option<char>)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = sentence.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let breaks = matches!(c, ',' | ';' | ':' | '.' | '!' | '?')
            && chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        if breaks {
            if cur.chars().any(char::is_alphanumeric) {
                out.push((cur.trim().to_owned(), Some(c)));
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if cur.chars().any(char::is_alphanumeric) {
        out.push((cur.trim().to_owned(), None));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sentences_but_not_initials_or_decimals() {
        assert_eq!(
            sentences("Hello there. J. Smith paid 3.50 today! Really?\nNew line"),
            [
                "Hello there.",
                "J. Smith paid 3.50 today!",
                "Really?",
                "New line"
            ]
        );
        assert!(sentences("  ... ").is_empty());
    }

    #[test]
    fn long_sentences_are_cut_at_clause_breaks() {
        let long = format!("{}, {}", "word ".repeat(50), "more ".repeat(40));
        let parts = sentences(&long);
        assert!(parts.len() >= 2);
        assert!(parts.iter().all(|p| p.chars().count() <= 300));
    }

    #[test]
    fn japanese_sentences_end_at_full_width_stops_and_cut_at_commas() {
        assert_eq!(
            sentences("今日は晴れです。明日は雨でしょうか？「はい。」そうです！"),
            [
                "今日は晴れです。",
                "明日は雨でしょうか？",
                "「はい。」そうです！"
            ]
        );
        let long = format!("{}、{}", "あ".repeat(200), "い".repeat(200));
        let parts = sentences(&long);
        assert_eq!(parts[0], format!("{}、", "あ".repeat(200)));
        assert!(parts.iter().all(|p| p.chars().count() <= 300));
    }

    #[test]
    fn clauses_keep_their_punctuation() {
        assert_eq!(
            clauses("Well, hello there: friend!"),
            [
                ("Well".to_owned(), Some(',')),
                ("hello there".to_owned(), Some(':')),
                ("friend".to_owned(), Some('!'))
            ]
        );
        assert_eq!(clauses("no stop"), [("no stop".to_owned(), None)]);
    }
}
