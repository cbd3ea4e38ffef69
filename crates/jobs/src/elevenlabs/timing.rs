//! Times in ElevenLabs' shapes: the character alignment of speech made
//! with word timestamps, and a transcript's words with the spacing between
//! them. Our engines time words; a word's characters share its span
//! evenly, and what lies between words shares the gap.

use serde_json::{json, Value};

/// A timed word: text, start and end in seconds.
pub type Timed = (String, f64, f64);

/// Our words (`[{word, start, end, …}]`) as timed words.
pub fn timed_words(words: &Value) -> Vec<Timed> {
    let list = words.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .map(|w| {
            (
                w["word"].as_str().unwrap_or("").to_owned(),
                w["start"].as_f64().unwrap_or(0.0),
                w["end"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

/// `{characters, character_start_times_seconds,
/// character_end_times_seconds}` for `text`, whose words (white-space
/// separated, with a letter or digit) were timed as `words`, in order.
pub fn alignment(text: &str, words: &[Timed], duration: f64) -> Value {
    let chars: Vec<char> = text.chars().collect();
    let mut spans: Vec<Option<(f64, f64)>> = vec![None; chars.len()];
    let mut timed = words.iter();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let end = (i..chars.len())
            .find(|&j| chars[j].is_whitespace())
            .unwrap_or(chars.len());
        if chars[i..end].iter().any(|c| c.is_alphanumeric()) {
            if let Some((_, start, stop)) = timed.next() {
                let each = (stop - start).max(0.0) / (end - i) as f64;
                for (k, span) in spans[i..end].iter_mut().enumerate() {
                    let s = start + each * k as f64;
                    *span = Some((s, s + each));
                }
            }
        }
        i = end;
    }
    let times = fill_gaps(&spans, duration);
    json!({
        "characters": chars.iter().map(char::to_string).collect::<Vec<_>>(),
        "character_start_times_seconds": times.iter().map(|t| round(t.0)).collect::<Vec<_>>(),
        "character_end_times_seconds": times.iter().map(|t| round(t.1)).collect::<Vec<_>>(),
    })
}

/// Characters without a time share the gap between the timed characters
/// around them (from 0 before the first, to `duration` after the last).
fn fill_gaps(spans: &[Option<(f64, f64)>], duration: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(spans.len());
    let mut i = 0;
    while i < spans.len() {
        if let Some(span) = spans[i] {
            out.push(span);
            i += 1;
            continue;
        }
        let run_end = (i..spans.len())
            .find(|&j| spans[j].is_some())
            .unwrap_or(spans.len());
        let from = out.last().map_or(0.0, |t: &(f64, f64)| t.1);
        let to = spans
            .get(run_end)
            .copied()
            .flatten()
            .map_or(duration.max(from), |t| t.0);
        let each = (to - from).max(0.0) / (run_end - i) as f64;
        for k in 0..run_end - i {
            let s = from + each * k as f64;
            out.push((s, s + each));
        }
        i = run_end;
    }
    out
}

/// A transcript's words (ours: `[{word, start, end, probability,
/// speaker?}]`) as ElevenLabs lists them: each word (`type: "word"`,
/// `logprob`, `speaker_id` when diarized), a `spacing` between two (its
/// speaker the word's before it), and with `characters` each word's
/// characters.
pub fn transcript_words(words: &Value, characters: bool) -> Value {
    let list = words.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::new();
    let mut last_end: Option<f64> = None;
    for w in list {
        let text = w["word"].as_str().unwrap_or("").trim();
        let (start, end) = (
            w["start"].as_f64().unwrap_or(0.0),
            w["end"].as_f64().unwrap_or(0.0),
        );
        if let Some(previous) = last_end {
            let mut spacing = json!({"text": " ", "start": previous, "end": start.max(previous), "type": "spacing"});
            if let Some(who) = out
                .last()
                .and_then(|w: &Value| w.get("speaker_id"))
                .cloned()
            {
                spacing["speaker_id"] = who;
            }
            out.push(spacing);
        }
        let probability = w["probability"].as_f64().unwrap_or(1.0).max(1e-6);
        let mut word = json!({
            "text": text, "start": start, "end": end, "type": "word",
            "logprob": round(probability.ln()),
        });
        if let Some(who) = w.get("speaker").filter(|s| s.is_string()) {
            word["speaker_id"] = who.clone();
        }
        if characters {
            let count = text.chars().count().max(1) as f64;
            let each = (end - start).max(0.0) / count;
            word["characters"] = text
                .chars()
                .enumerate()
                .map(|(k, c)| {
                    let s = start + each * k as f64;
                    json!({"text": c.to_string(), "start": round(s), "end": round(s + each)})
                })
                .collect();
        }
        out.push(word);
        last_end = Some(end);
    }
    Value::Array(out)
}

/// Milliseconds' precision, as ElevenLabs reports.
fn round(t: f64) -> f64 {
    (t * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_share_their_words_time_and_spaces_the_gaps() {
        let words = vec![("Hi,".to_owned(), 0.1, 0.4), ("you".to_owned(), 0.6, 0.9)];
        let a = alignment("Hi, you!", &words, 1.0);
        let chars: Vec<&str> = a["characters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(chars.concat(), "Hi, you!");
        let starts = a["character_start_times_seconds"].as_array().unwrap();
        let ends = a["character_end_times_seconds"].as_array().unwrap();
        assert_eq!(
            (starts[0].as_f64(), ends[2].as_f64()),
            (Some(0.1), Some(0.4))
        );
        // The space fills the gap; "you!" is one timed word of four characters.
        assert_eq!(
            (starts[3].as_f64(), ends[3].as_f64()),
            (Some(0.4), Some(0.6))
        );
        assert_eq!(
            (starts[4].as_f64(), ends[7].as_f64()),
            (Some(0.6), Some(0.9))
        );
        let mut last = 0.0;
        for (s, e) in starts.iter().zip(ends) {
            let (s, e) = (s.as_f64().unwrap(), e.as_f64().unwrap());
            assert!(s >= last - 1e-9 && e >= s, "{a}");
            last = e;
        }
    }

    #[test]
    fn transcript_words_have_spacing_between_them() {
        let ours = json!([
            {"word": "Hello", "start": 0.0, "end": 0.5, "probability": 1.0},
            {"word": " there", "start": 0.7, "end": 1.0, "probability": 0.5},
        ]);
        let w = transcript_words(&ours, true);
        let kinds: Vec<&str> = w
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["word", "spacing", "word"]);
        assert_eq!(w[1]["start"], 0.5);
        assert_eq!(w[2]["text"], "there");
        assert_eq!(w[2]["characters"].as_array().unwrap().len(), 5);
        assert!(w[2]["logprob"].as_f64().unwrap() < 0.0);
    }
}
