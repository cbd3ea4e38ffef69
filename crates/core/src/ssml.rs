//! A small SSML subset shared by every engine: `<speak>`, `<break>`,
//! `<say-as interpret-as="characters|spell-out|cardinal|number|date">`,
//! `<sub alias>`, `<phoneme alphabet="ipa" ph>`, `<prosody rate>`, and `<p>`
//! / `<s>` as sentence breaks. Anything else is refused with its position.

/// One piece of what to say.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// Text, normalised and split into sentences before synthesis, spoken at
    /// `rate` × the request's speed.
    Text { text: String, rate: f32 },
    /// Silence, seconds.
    Break(f64),
    /// IPA to speak as given; `text` is said instead by engines that cannot
    /// take phonemes.
    Phonemes {
        ipa: String,
        text: String,
        rate: f32,
    },
}

/// Why SSML was refused: the message and the character position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (at character {position})")]
pub struct SsmlError {
    pub position: usize,
    pub message: String,
}

/// Longest `<break>`, seconds.
pub const MAX_BREAK: f64 = 10.0;

/// Most silence one text may ask for with `<break>`, seconds in all.
pub const MAX_TOTAL_BREAK: f64 = 30.0;

/// Slowest and fastest speech, as a factor of the voice's own pace. The
/// request's `speed` times every `<prosody rate>` in force, however deeply
/// nested, is kept within this range on every engine.
pub const MIN_RATE: f32 = 0.5;
/// See [`MIN_RATE`].
pub const MAX_RATE: f32 = 2.0;

/// The pace an engine is asked for: `speed` × the SSML rate, clamped to
/// [`MIN_RATE`]..=[`MAX_RATE`].
pub fn effective_rate(speed: f32, rate: f32) -> f32 {
    let r = speed * rate;
    if r.is_finite() {
        r.clamp(MIN_RATE, MAX_RATE)
    } else {
        1.0
    }
}

/// Most seconds of speech an engine may make for one sentence of
/// `characters` characters (after normalisation) at `rate` (clamped): a
/// generous pace for the slowest voices (4 characters a second at rate 1)
/// plus a second. A pipeline that makes more stops with
/// `output_limit_exceeded` rather than spend work the price does not cover.
pub fn max_speech_seconds(characters: usize, rate: f32) -> f64 {
    1.0 + characters as f64 * 0.25 / f64::from(effective_rate(1.0, rate))
}

/// The characters of `text` as [`max_speech_seconds`] and the price count
/// them: what an engine reads aloud, not what was typed. Text reaches here
/// normalised ([`crate::normalize`]: numbers, money, ordinals and dates
/// written out where the language has rules), and what engines still
/// expand weighs more:
/// - a CJK ideograph (a kanji) is read as up to several syllables (今日 kyō,
///   承る uketamawaru): 3;
/// - a digit left (a language without number rules: the engine reads it
///   out, "7" as "sept", long numbers digit by digit): 6;
/// - a letter that is spelled (a word of Latin letters with no vowel: "B",
///   "XKCD" as "ex kay see dee"; "a" and "I" are words): 4;
/// - a line break (a sentence of its own, with its pause): 4;
/// - anything else: 1.
pub fn spoken_characters(text: &str) -> usize {
    let mut total = 0;
    let mut word = String::new();
    let flush = |word: &mut String, total: &mut usize| {
        *total += word_weight(word);
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut total);
        total += if c == '\n' { 4 } else { 1 };
    }
    flush(&mut word, &mut total);
    total
}

/// What one word (a run of letters and digits) weighs in
/// [`spoken_characters`].
fn word_weight(word: &str) -> usize {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let latin = |c: char| c.is_ascii_alphabetic();
    let vowel = |c: char| "aeiouyAEIOUY".contains(c);
    // A word of one vowel is a word ("a", "I", Spanish "y", "o"); one of
    // one consonant, or of consonants only, is said letter by letter.
    let spelled = letters > 0
        && word.chars().all(|c| latin(c) || c.is_ascii_digit())
        && !word.chars().any(vowel);
    word.chars()
        .map(|c| match c {
            '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' => 3,
            c if c.is_numeric() => 6,
            c if spelled && c.is_alphabetic() => 4,
            _ => 1,
        })
        .sum()
}

/// What a text costs to speak, in characters (the `tts` unit): the text as
/// the engines read it — SSML parsed (markup is not spoken; `say-as
/// characters` spelled out), each run normalised for `language`, then
/// weighed by [`spoken_characters`]; a `<phoneme>` by its phonemes or its
/// text, whichever is longer. Never less than the characters as sent
/// (markup included), so plain prose costs what it always did. SSML that
/// does not parse is counted as plain text (it is refused elsewhere).
pub fn priced_characters(text: &str, language: &str) -> usize {
    let segments = if is_ssml(text) {
        parse(text).unwrap_or_else(|_| plain(text))
    } else {
        plain(text)
    };
    let spoken: usize = segments
        .iter()
        .map(|s| match s {
            Segment::Text { text, .. } => {
                spoken_characters(&crate::normalize::normalize(text, language))
            }
            Segment::Phonemes { ipa, text, .. } => ipa.chars().count().max(spoken_characters(text)),
            Segment::Break(_) => 0,
        })
        .sum();
    spoken.max(text.chars().count())
}

/// A speaking pace most voices reach at rate 1, characters a second: what a
/// text is priced at where the price is in seconds of speech.
pub const CHARACTERS_PER_SECOND: f64 = 14.0;

/// Seconds of audio `text` (plain or SSML) asks for at a normal pace: its
/// words at [`CHARACTERS_PER_SECOND`] slowed by their rate, plus its breaks.
/// SSML that does not parse is counted as plain text (it is refused
/// elsewhere).
pub fn estimated_seconds(text: &str, language: &str) -> f64 {
    let segments = if is_ssml(text) {
        parse(text).unwrap_or_else(|_| plain(text))
    } else {
        plain(text)
    };
    segments
        .iter()
        .map(|s| match s {
            Segment::Text { text, rate } => {
                spoken_characters(&crate::normalize::normalize(text, language)) as f64
                    / CHARACTERS_PER_SECOND
                    / f64::from(effective_rate(1.0, *rate))
            }
            Segment::Phonemes { ipa, text, rate } => {
                ipa.chars().count().max(spoken_characters(text)) as f64
                    / CHARACTERS_PER_SECOND
                    / f64::from(effective_rate(1.0, *rate))
            }
            Segment::Break(secs) => *secs,
        })
        .sum()
}

/// True when `text` is SSML (starts with `<speak`).
pub fn is_ssml(text: &str) -> bool {
    text.trim_start().starts_with("<speak")
}

/// Plain text as one segment.
pub fn plain(text: &str) -> Vec<Segment> {
    vec![Segment::Text {
        text: text.to_owned(),
        rate: 1.0,
    }]
}

struct Tag {
    name: String,
    attrs: Vec<(String, String)>,
    closing: bool,
    self_closing: bool,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    _src: &'a str,
}

fn err(position: usize, message: impl Into<String>) -> SsmlError {
    SsmlError {
        position,
        message: message.into(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn name(&mut self) -> String {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || c == '-' || c == ':' || c == '_')
        {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    /// Parses a tag; `self.pos` is at `<`.
    fn tag(&mut self) -> Result<Tag, SsmlError> {
        let start = self.pos;
        self.pos += 1;
        let closing = self.peek() == Some('/');
        if closing {
            self.pos += 1;
        }
        let name = self.name();
        if name.is_empty() {
            return Err(err(start, "expected an element name after `<`"));
        }
        let mut attrs = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Err(err(start, format!("unterminated tag <{name}>"))),
                Some('>') => {
                    self.pos += 1;
                    return Ok(Tag {
                        name,
                        attrs,
                        closing,
                        self_closing: false,
                    });
                }
                Some('/') if self.chars.get(self.pos + 1) == Some(&'>') => {
                    self.pos += 2;
                    return Ok(Tag {
                        name,
                        attrs,
                        closing,
                        self_closing: true,
                    });
                }
                Some(_) => {
                    let at = self.pos;
                    let key = self.name();
                    if key.is_empty() {
                        return Err(err(at, format!("unexpected character in <{name}>")));
                    }
                    self.skip_ws();
                    if self.peek() != Some('=') {
                        return Err(err(self.pos, format!("attribute `{key}` needs a value")));
                    }
                    self.pos += 1;
                    self.skip_ws();
                    let quote = self.peek().filter(|q| *q == '"' || *q == '\'');
                    let Some(quote) = quote else {
                        return Err(err(
                            self.pos,
                            format!("the value of `{key}` must be quoted"),
                        ));
                    };
                    self.pos += 1;
                    let vstart = self.pos;
                    while self.peek().is_some_and(|c| c != quote) {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return Err(err(vstart, format!("unterminated value of `{key}`")));
                    }
                    let value: String = self.chars[vstart..self.pos].iter().collect();
                    self.pos += 1;
                    attrs.push((key, unescape(&value, vstart)?));
                }
            }
        }
    }
}

/// Replaces the five XML entities in `s`, which starts at character `at` of
/// the input. Errors point at the `&` (positions count characters).
fn unescape(s: &str, at: usize) -> Result<String, SsmlError> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let here = at + s[..s.len() - rest.len() + i].chars().count();
        let tail = &rest[i..];
        let end = tail
            .find(';')
            .ok_or_else(|| err(here, "`&` must start an entity such as &amp;"))?;
        let entity = &tail[..=end];
        let numeric = entity
            .strip_prefix("&#x")
            .or_else(|| entity.strip_prefix("&#X"))
            .map(|h| u32::from_str_radix(&h[..h.len() - 1], 16))
            .or_else(|| {
                entity
                    .strip_prefix("&#")
                    .map(|d| d[..d.len() - 1].parse::<u32>())
            });
        match numeric {
            // A character reference: any character but the controls.
            Some(Ok(code)) => match char::from_u32(code).filter(|c| !c.is_control()) {
                Some(c) => out.push(c),
                None => return Err(err(here, format!("{entity} is not a character"))),
            },
            Some(Err(_)) => return Err(err(here, format!("unknown entity {entity}"))),
            None => out.push_str(match entity {
                "&amp;" => "&",
                "&lt;" => "<",
                "&gt;" => ">",
                "&quot;" => "\"",
                "&apos;" => "'",
                other => return Err(err(here, format!("unknown entity {other}"))),
            }),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `500ms`, `1.5s` → seconds (at most [`MAX_BREAK`]).
fn duration(value: &str, at: usize) -> Result<f64, SsmlError> {
    let v = value.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(err(at, format!("break time `{value}` must end in ms or s")));
    };
    let secs = num
        .trim()
        .parse::<f64>()
        .map_err(|_| err(at, format!("break time `{value}` is not a number")))?
        * scale;
    if !(0.0..=MAX_BREAK).contains(&secs) {
        return Err(err(
            at,
            format!("break time must be from 0 to {MAX_BREAK} s"),
        ));
    }
    Ok(secs)
}

/// `slow`, `fast`, `80%` → a speed factor.
fn rate(value: &str, at: usize) -> Result<f32, SsmlError> {
    let r = match value.trim() {
        "x-slow" => 0.6,
        "slow" => 0.8,
        "medium" | "default" => 1.0,
        "fast" => 1.25,
        "x-fast" => 1.5,
        v => {
            let pct = v
                .strip_suffix('%')
                .and_then(|n| n.trim().parse::<f32>().ok());
            pct.map(|p| p / 100.0).ok_or_else(|| {
                err(
                    at,
                    format!("prosody rate `{v}` must be x-slow…x-fast or a percentage"),
                )
            })?
        }
    };
    if !(0.5..=2.0).contains(&r) {
        return Err(err(at, "prosody rate must be from 50% to 200%"));
    }
    Ok(r)
}

/// Spells a word letter by letter ("ABC" → "A. B. C.").
fn spell(text: &str) -> String {
    let letters: Vec<String> = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_string())
        .collect();
    format!("{}.", letters.join(". "))
}

/// Parses SSML into segments.
pub fn parse(input: &str) -> Result<Vec<Segment>, SsmlError> {
    let mut p = Parser {
        chars: input.chars().collect(),
        pos: 0,
        _src: input,
    };
    p.skip_ws();
    if p.peek() != Some('<') {
        return Err(err(p.pos, "SSML must start with <speak>"));
    }
    let root = p.tag()?;
    if root.name != "speak" || root.closing || root.self_closing {
        return Err(err(0, "SSML must start with <speak>"));
    }
    // Open elements: (name, position, rate in force, say-as, sub alias, phoneme).
    struct Open {
        name: String,
        at: usize,
        rate: f32,
        mode: Mode,
    }
    #[derive(Clone, PartialEq)]
    enum Mode {
        Normal,
        Characters,
        Alias(String),
        Phoneme(String),
    }
    let mut stack = vec![Open {
        name: "speak".into(),
        at: 0,
        rate: 1.0,
        mode: Mode::Normal,
    }];
    let mut out: Vec<Segment> = Vec::new();
    let mut text = String::new();
    let mut silence = 0.0;
    let flush = |out: &mut Vec<Segment>, text: &mut String, rate: f32| {
        if !text.trim().is_empty() {
            out.push(Segment::Text {
                text: text.trim().to_owned(),
                rate,
            });
        }
        text.clear();
    };
    while p.pos < p.chars.len() {
        let current_rate = stack.last().map(|o| o.rate).unwrap_or(1.0);
        if p.peek() != Some('<') {
            let start = p.pos;
            while p.peek().is_some_and(|c| c != '<') {
                p.pos += 1;
            }
            let raw: String = p.chars[start..p.pos].iter().collect();
            text.push_str(&unescape(&raw, start)?);
            continue;
        }
        if stack.is_empty() {
            return Err(err(p.pos, "nothing may follow </speak>"));
        }
        let at = p.pos;
        let tag = p.tag()?;
        if tag.closing {
            let open = stack
                .pop()
                .ok_or_else(|| err(at, format!("unexpected </{}>", tag.name)))?;
            if open.name != tag.name {
                return Err(err(
                    at,
                    format!(
                        "</{}> closes <{}> opened at character {}",
                        tag.name, open.name, open.at
                    ),
                ));
            }
            match open.mode {
                Mode::Normal => flush(&mut out, &mut text, open.rate),
                Mode::Characters => {
                    let spelled = spell(&text);
                    text = spelled;
                    flush(&mut out, &mut text, open.rate);
                }
                Mode::Alias(alias) => {
                    text = alias;
                    flush(&mut out, &mut text, open.rate);
                }
                Mode::Phoneme(ipa) => {
                    out.push(Segment::Phonemes {
                        ipa,
                        text: text.trim().to_owned(),
                        rate: open.rate,
                    });
                    text.clear();
                }
            }
            if matches!(tag.name.as_str(), "p" | "s") {
                if let Some(Segment::Text { text, .. }) = out.last_mut() {
                    if !text.ends_with(['.', '!', '?']) {
                        text.push('.');
                    }
                }
            }
            continue;
        }
        if stack.last().is_some_and(|o| o.mode != Mode::Normal) {
            return Err(err(
                at,
                format!(
                    "<{}> cannot be nested inside <{}>",
                    tag.name,
                    stack.last().map(|o| o.name.as_str()).unwrap_or("")
                ),
            ));
        }
        match tag.name.as_str() {
            "break" => {
                flush(&mut out, &mut text, current_rate);
                let secs = match (tag.attr("time"), tag.attr("strength")) {
                    (Some(t), _) => duration(t, at)?,
                    (None, Some(s)) => match s {
                        "none" => 0.0,
                        "x-weak" => 0.1,
                        "weak" => 0.25,
                        "medium" => 0.5,
                        "strong" => 0.75,
                        "x-strong" => 1.2,
                        other => return Err(err(at, format!("unknown break strength `{other}`"))),
                    },
                    (None, None) => 0.5,
                };
                silence += secs;
                if silence > MAX_TOTAL_BREAK {
                    return Err(err(
                        at,
                        format!("breaks may add up to at most {MAX_TOTAL_BREAK} s of silence"),
                    ));
                }
                out.push(Segment::Break(secs));
                if !tag.self_closing {
                    stack.push(Open {
                        name: tag.name,
                        at,
                        rate: current_rate,
                        mode: Mode::Normal,
                    });
                }
                continue;
            }
            "speak" => return Err(err(at, "<speak> cannot be nested")),
            _ => {}
        }
        flush(&mut out, &mut text, current_rate);
        let (rate_here, mode) = match tag.name.as_str() {
            "p" | "s" => (current_rate, Mode::Normal),
            "prosody" => match tag.attr("rate") {
                // Nested rates multiply, within one range (so no nesting
                // asks an engine for more than twice the voice's length).
                Some(r) => (
                    (current_rate * rate(r, at)?).clamp(MIN_RATE, MAX_RATE),
                    Mode::Normal,
                ),
                None => (current_rate, Mode::Normal),
            },
            "say-as" => match tag.attr("interpret-as") {
                Some("characters" | "spell-out" | "verbatim") => (current_rate, Mode::Characters),
                // Numbers and dates are read by the text normaliser.
                Some("cardinal" | "number" | "date" | "ordinal" | "telephone") => {
                    (current_rate, Mode::Normal)
                }
                Some(other) => {
                    return Err(err(
                        at,
                        format!("unsupported say-as interpret-as `{other}`"),
                    ))
                }
                None => return Err(err(at, "<say-as> needs interpret-as")),
            },
            "sub" => {
                let alias = tag
                    .attr("alias")
                    .ok_or_else(|| err(at, "<sub> needs alias"))?;
                (current_rate, Mode::Alias(alias.to_owned()))
            }
            "phoneme" => {
                if tag.attr("alphabet").is_some_and(|a| a != "ipa") {
                    return Err(err(at, "only alphabet=\"ipa\" is supported"));
                }
                let ph = tag
                    .attr("ph")
                    .ok_or_else(|| err(at, "<phoneme> needs ph"))?;
                (current_rate, Mode::Phoneme(ph.to_owned()))
            }
            other => return Err(err(at, format!("unsupported SSML element <{other}>"))),
        };
        if tag.self_closing {
            continue;
        }
        stack.push(Open {
            name: tag.name,
            at,
            rate: rate_here,
            mode,
        });
    }
    if let Some(open) = stack.last() {
        return Err(err(open.at, format!("<{}> is never closed", open.name)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str, rate: f32) -> Segment {
        Segment::Text {
            text: t.into(),
            rate,
        }
    }

    #[test]
    fn parses_the_subset() {
        let s = parse(
            "<speak>Hello <break time=\"500ms\"/> <say-as interpret-as=\"characters\">ABC</say-as> \
             <sub alias=\"World Wide Web\">WWW</sub> <prosody rate=\"slow\">slowly &amp; surely</prosody> \
             <phoneme alphabet=\"ipa\" ph=\"təˈmɑːtoʊ\">tomato</phoneme><p>Done</p></speak>",
        )
        .unwrap();
        assert_eq!(
            s,
            vec![
                text("Hello", 1.0),
                Segment::Break(0.5),
                text("A. B. C.", 1.0),
                text("World Wide Web", 1.0),
                text("slowly & surely", 0.8),
                Segment::Phonemes {
                    ipa: "təˈmɑːtoʊ".into(),
                    text: "tomato".into(),
                    rate: 1.0
                },
                text("Done.", 1.0),
            ]
        );
        assert_eq!(
            parse("<speak>a<break time='2s'/>b</speak>").unwrap()[1],
            Segment::Break(2.0)
        );
        assert!(is_ssml("  <speak>x</speak>") && !is_ssml("x <speak>"));
    }

    #[test]
    fn character_references_are_read() {
        let segments = parse("<speak>caf&#233; &#x2014; na&#xEF;ve</speak>").unwrap();
        match &segments[..] {
            [Segment::Text { text, .. }] => assert_eq!(text, "café — naïve"),
            other => panic!("{other:?}"),
        }
        for bad in ["&#0;", "&#x110000;", "&#12a;", "&#;"] {
            let e = parse(&format!("<speak>a {bad}</speak>")).unwrap_err();
            assert_eq!(e.position, 9, "{bad}: {e}");
        }
    }

    #[test]
    fn estimates_count_words_rates_and_breaks() {
        let plain_text = "a".repeat(140);
        assert!((estimated_seconds(&plain_text, "en") - 10.0).abs() < 1e-9);
        let slow =
            format!("<speak><prosody rate='50%'>{plain_text}</prosody><break time='3s'/></speak>");
        assert!((estimated_seconds(&slow, "en") - 23.0).abs() < 1e-9);
        // Numbers are estimated as they are said.
        let digits = "7777777777777777777 ".repeat(5);
        assert!(estimated_seconds(&digits, "en") > 6.0 * digits.len() as f64 / 14.0);
    }

    /// The outside probe's texts (issue 70): numbers, money, ordinals and
    /// spelled letters cost what they are spoken as; prose costs its
    /// characters.
    #[test]
    fn texts_are_priced_as_they_are_spoken() {
        let prose = "I saw a quick brown fox jump over the lazy dog, then rest in the shade.";
        assert_eq!(priced_characters(prose, "en"), prose.chars().count());
        let ratio = |text: &str, language: &str| {
            priced_characters(text, language) as f64 / text.chars().count() as f64
        };
        let digits = "7777777777777777777 ".repeat(30);
        assert!(ratio(&digits, "en") > 6.0, "{}", ratio(&digits, "en"));
        assert!(ratio(&digits, "fr") > 5.0, "{}", ratio(&digits, "fr"));
        let money = "$9,999,999.99 ".repeat(40);
        assert!(ratio(&money, "en") > 5.0, "{}", ratio(&money, "en"));
        let ordinals = "777th ".repeat(100);
        assert!(ratio(&ordinals, "en") > 4.0, "{}", ratio(&ordinals, "en"));
        let spelled = format!(
            "<speak><say-as interpret-as='characters'>{}</say-as></speak>",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ".repeat(20)
        );
        assert!(ratio(&spelled, "en") > 3.0, "{}", ratio(&spelled, "en"));
        let letters = "x b c d ".repeat(100);
        assert!(ratio(&letters, "en") > 2.0, "{}", ratio(&letters, "en"));
        let lines = "Ok\n".repeat(600);
        assert!(ratio(&lines, "en") >= 2.0, "{}", ratio(&lines, "en"));
        // Markup is never cheaper than it was: at least the text as sent.
        let marked = "<speak><break time='1s'/>Hi.</speak>";
        assert_eq!(priced_characters(marked, "en"), marked.chars().count());
    }

    #[test]
    fn nested_rates_stay_within_one_range() {
        let nested = |n: usize, pct: &str| {
            let open = format!("<prosody rate='{pct}'>").repeat(n);
            let close = "</prosody>".repeat(n);
            format!("<speak>{open}Hello there.{close}</speak>")
        };
        for n in [1, 6, 7, 9, 40] {
            let rate = match &parse(&nested(n, "50%")).unwrap()[0] {
                Segment::Text { rate, .. } => *rate,
                other => panic!("{other:?}"),
            };
            assert_eq!(rate, MIN_RATE, "{n} levels of 50%");
            let rate = match &parse(&nested(n, "200%")).unwrap()[0] {
                Segment::Text { rate, .. } => *rate,
                other => panic!("{other:?}"),
            };
            assert_eq!(rate, MAX_RATE, "{n} levels of 200%");
        }
        // The request's speed and the SSML rate together, too.
        assert_eq!(effective_rate(0.5, 0.5), MIN_RATE);
        assert_eq!(effective_rate(2.0, 2.0), MAX_RATE);
        assert_eq!(effective_rate(f32::NAN, 1.0), 1.0);
        assert_eq!(effective_rate(1.25, 0.8), 1.0);
        // The speech ceiling grows with the text and the slowness only.
        assert!(max_speech_seconds(12, 0.001) <= 1.0 + 12.0 * 0.5 + 1e-9);
        // A kanji may stand for several syllables; kana and letters one.
        assert_eq!(spoken_characters("今日は"), 7);
        assert_eq!(spoken_characters("Hi, あ"), 5);
    }

    #[test]
    fn errors_carry_the_position() {
        let cases = [
            (
                "<speak>Hello <b>x</b></speak>",
                13,
                "unsupported SSML element <b>",
            ),
            (
                "<speak>Hello <break time=\"5 minutes\"/></speak>",
                13,
                "is not a number",
            ),
            (
                "<speak>Hello <break time=\"5m\"/></speak>",
                13,
                "must end in ms or s",
            ),
            (
                "<speak><prosody rate=\"slow\">x</speak>",
                29,
                "closes <prosody>",
            ),
            ("<speak>x", 0, "never closed"),
            ("<speak>a &nbsp; b</speak>", 9, "unknown entity"),
            // Found by fuzzing: positions past an entity or a multi-byte
            // character were counted in bytes from the wrong place.
            ("<speak>é &amp; ü &nbsp;</speak>", 17, "unknown entity"),
            ("<speak>⎛t&amp;⎛t & b</speak>", 17, "must start an entity"),
            ("<speak><break time=\"30s\"/></speak>", 7, "from 0 to 10"),
            (
                "<speak>a<break time='10s'/><break time='10s'/><break time='10s'/><break time='1s'/></speak>",
                65,
                "at most 30 s of silence",
            ),
        ];
        for (input, position, message) in cases {
            let e = parse(input).unwrap_err();
            assert_eq!(e.position, position, "{input}: {e}");
            assert!(e.message.contains(message), "{input}: {e}");
        }
    }
}
