//! Machine translation of text lines: the `Translator` trait and Apertium
//! (rule-based, Debian packages, run as a subprocess: GPL), with routes
//! through English or Spanish where no direct pair is installed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

use mediagen_media::process::run;

use crate::tts::text::word_char;

#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    #[error("no translation from {0} to {1} is installed")]
    Unsupported(String, String),
    #[error("translation failed: {0}")]
    Failed(String),
}

/// A line translated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Translated {
    pub text: String,
    /// Words of `text` the translator did not know and left as they were
    /// in the source language (once each, as first written).
    pub kept: Vec<String>,
}

/// Translates lines of text between ISO 639-1 languages.
pub trait Translator: Send + Sync {
    fn name(&self) -> &'static str;
    /// Every (source, target) pair this translator can do, pivots included.
    fn pairs(&self) -> Vec<(String, String)>;
    /// The lines translated one for one (blocking).
    fn translate(
        &self,
        from: &str,
        to: &str,
        lines: &[String],
    ) -> Result<Vec<Translated>, TranslateError>;
}

/// Apertium's marks before a word: `*` unknown, `@` not in the bilingual
/// dictionary (both the source word left as it was), `#` not generated
/// (a target word, uninflected).
const MARKS: [char; 3] = ['*', '@', '#'];

/// Apertium's output with its marks taken out, and the words marked as
/// left in the source language. Only words also in `source` count when
/// `direct` is false (a pivot's own unknown words are the pivot's). The
/// marks are Apertium's alone: the input had these characters taken out.
fn unmark(output: &str, source: &str, direct: bool) -> Translated {
    let source_words: HashSet<String> = source
        .split(|c: char| !word_char(c))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut text = String::with_capacity(output.len());
    let mut kept: Vec<String> = Vec::new();
    let mut kept_lower: HashSet<String> = HashSet::new();
    let chars: Vec<(usize, char)> = output.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if !MARKS.contains(&c) {
            text.push(c);
            i += 1;
            continue;
        }
        let mut source_word = false;
        while i < chars.len() && MARKS.contains(&chars[i].1) {
            source_word |= chars[i].1 != '#';
            i += 1;
        }
        let start = chars.get(i).map_or(output.len(), |&(k, _)| k);
        while i < chars.len() && word_char(chars[i].1) {
            i += 1;
        }
        let end = chars.get(i).map_or(output.len(), |&(k, _)| k);
        let word = &output[start..end];
        text.push_str(word);
        let lower = word.to_lowercase();
        if source_word
            && !word.is_empty()
            && (direct || source_words.contains(&lower))
            && kept_lower.insert(lower)
        {
            kept.push(word.to_owned());
        }
    }
    Translated { text, kept }
}

/// Apertium's installed modes, by language pair.
#[derive(Debug, Default, Clone)]
pub struct Apertium {
    /// (source, target) ISO 639-1 → the mode that translates it.
    modes: HashMap<(String, String), String>,
}

/// Languages tried as a middle step, in order.
const PIVOTS: [&str; 2] = ["en", "es"];

/// An Apertium language code (2 or 3 letters) as ISO 639-1, for the
/// languages whose pairs Debian ships.
fn iso(code: &str) -> Option<&'static str> {
    Some(match code {
        "en" | "eng" => "en",
        "es" | "spa" => "es",
        "fr" | "fra" => "fr",
        "it" | "ita" => "it",
        "pt" | "por" => "pt",
        "ca" | "cat" => "ca",
        "gl" | "glg" => "gl",
        "eu" | "eus" => "eu",
        "ro" | "ron" => "ro",
        "oc" | "oci" => "oc",
        "ast" => return None,
        "eo" | "epo" => "eo",
        "is" | "isl" => "is",
        "sv" | "swe" => "sv",
        "da" | "dan" => "da",
        "nn" | "nno" => "nn",
        "nb" | "nob" => "nb",
        "ru" | "rus" => "ru",
        "uk" | "ukr" => "uk",
        "af" | "afr" => "af",
        "nl" | "nld" => "nl",
        "id" | "ind" => "id",
        "ms" | "zlm" => "ms",
        "mk" | "mkd" => "mk",
        "bg" | "bul" => "bg",
        "sr" | "hbs" => "sr",
        "sl" | "slv" => "sl",
        "be" | "bel" => "be",
        "an" | "arg" => "an",
        "sc" | "srd" => "sc",
        "pl" | "pol" => "pl",
        "hi" | "hin" => "hi",
        "ur" | "urd" => "ur",
        _ => return None,
    })
}

impl Apertium {
    /// The pairs of `apertium -l` (plain modes only: no variants such as
    /// `spa-cat_valencia`, no `eco-` or debugging modes). Empty when
    /// Apertium is not installed.
    pub fn discover() -> Self {
        let mut cmd = Command::new("apertium");
        cmd.arg("-l");
        let listed = run(cmd, b"", std::time::Duration::from_secs(30))
            .map(|o| String::from_utf8_lossy(&o).into_owned())
            .unwrap_or_default();
        Self::from_listing(&listed)
    }

    /// The modes of an `apertium -l` listing.
    pub fn from_listing(listing: &str) -> Self {
        let mut modes = HashMap::new();
        for mode in listing.split_whitespace() {
            let parts: Vec<&str> = mode.split('-').collect();
            if let [a, b] = parts[..] {
                if let (Some(a), Some(b)) = (iso(a), iso(b)) {
                    modes
                        .entry((a.to_owned(), b.to_owned()))
                        .or_insert_with(|| mode.to_owned());
                }
            }
        }
        Self { modes }
    }

    /// The modes to run one after the other for `from` → `to`: a direct
    /// pair, or two through a pivot language.
    pub fn route(&self, from: &str, to: &str) -> Option<Vec<&str>> {
        let mode = |a: &str, b: &str| {
            self.modes
                .get(&(a.to_owned(), b.to_owned()))
                .map(String::as_str)
        };
        if let Some(m) = mode(from, to) {
            return Some(vec![m]);
        }
        PIVOTS
            .iter()
            .find_map(|p| Some(vec![mode(from, p)?, mode(p, to)?]))
    }

    fn run_mode(mode: &str, text: &str) -> Result<String, TranslateError> {
        let mut cmd = Command::new("apertium");
        // Unknown words keep Apertium's marks ([`MARKS`]), read by [`unmark`].
        cmd.args(["-f", "txt", mode]);
        let limit = Duration::from_secs(30 + text.len() as u64 / 200);
        let out =
            run(cmd, text.as_bytes(), limit).map_err(|e| TranslateError::Failed(e.to_string()))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

impl Translator for Apertium {
    fn name(&self) -> &'static str {
        "apertium"
    }

    fn pairs(&self) -> Vec<(String, String)> {
        let languages: BTreeSet<&String> = self.modes.keys().flat_map(|(a, b)| [a, b]).collect();
        let mut out = Vec::new();
        for a in &languages {
            for b in &languages {
                if a != b && self.route(a, b).is_some() {
                    out.push(((*a).clone(), (*b).clone()));
                }
            }
        }
        out
    }

    /// One run per mode for all lines (Apertium keeps line breaks; a
    /// line count that does not match falls back to a run per line).
    fn translate(
        &self,
        from: &str,
        to: &str,
        lines: &[String],
    ) -> Result<Vec<Translated>, TranslateError> {
        let route = self
            .route(from, to)
            .ok_or_else(|| TranslateError::Unsupported(from.into(), to.into()))?;
        // Apertium's mark characters are taken out of the text (they are not
        // spoken), so every mark in its output is its own.
        let clean: Vec<String> = lines
            .iter()
            .map(|l| l.split(MARKS).collect::<Vec<_>>().join(" "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let through = |text: &str| -> Result<String, TranslateError> {
            route
                .iter()
                .try_fold(text.to_owned(), |t, mode| Self::run_mode(mode, &t))
        };
        let direct = route.len() == 1;
        let joined = through(&format!("{}\n", clean.join("\n")))?;
        let out: Vec<&str> = joined.lines().map(str::trim).collect();
        if out.len() == clean.len() {
            return Ok(out
                .iter()
                .zip(&clean)
                .map(|(t, source)| unmark(t, source, direct))
                .collect());
        }
        clean
            .iter()
            .map(|l| {
                let t = through(l)?;
                let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
                Ok(unmark(&t, l, direct))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "  cat-spa\n  eco-es-fr\n  eng-spa\n  es-fr\n  es-pt\n  es-pt_BR\n  fr-es\n  spa-cat_valencia\n  spa-eng\n  spa-eng_US\n  spa-ita\n";

    #[test]
    fn listings_become_routes_with_pivots() {
        let a = Apertium::from_listing(LISTING);
        assert_eq!(a.route("en", "es"), Some(vec!["eng-spa"]));
        assert_eq!(a.route("es", "en"), Some(vec!["spa-eng"]));
        // No English–French pair: through Spanish.
        assert_eq!(a.route("en", "fr"), Some(vec!["eng-spa", "es-fr"]));
        assert_eq!(a.route("fr", "en"), Some(vec!["fr-es", "spa-eng"]));
        assert_eq!(a.route("en", "de"), None);
        // Variants and eco- modes are not pairs of their own.
        assert_eq!(a.route("es", "ca"), None);
        let pairs = a.pairs();
        assert!(pairs.contains(&("ca".into(), "en".into())));
        assert!(!pairs.contains(&("en".into(), "ca".into())));
    }

    /// Needs the packages `scripts/setup.sh` installs.
    #[test]
    fn apertium_translates_lines_one_for_one() {
        let a = Apertium::discover();
        let out = a
            .translate(
                "en",
                "es",
                &["Good morning.".into(), "The house is big.".into()],
            )
            .unwrap();
        assert_eq!(out.len(), 2);
        assert!(out[1].text.to_lowercase().contains("casa"), "{out:?}");
        assert!(out.iter().all(|t| t.kept.is_empty()), "{out:?}");
        // A word Apertium does not know is kept, unmarked; a `*` of the
        // caller's own is not a mark.
        let out = a
            .translate("en", "es", &["They swarmed up the *stairs.".into()])
            .unwrap();
        assert_eq!(out[0].kept, ["swarmed"], "{out:?}");
        assert!(out[0].text.contains("swarmed") && !out[0].text.contains('*'));
    }

    #[test]
    fn marks_are_taken_out_and_source_words_kept() {
        let t = unmark(
            "*Swarmed arriba, #ir y @sneak **creepy, *swarmed.",
            "",
            true,
        );
        assert_eq!(t.text, "Swarmed arriba, ir y sneak creepy, swarmed.");
        assert_eq!(t.kept, ["Swarmed", "sneak", "creepy"]);
        // Through a pivot, only words of the source line are its own.
        let t = unmark("Ils *swarmed et *quizá", "They swarmed and", false);
        assert_eq!(t.kept, ["swarmed"]);
        assert_eq!(t.text, "Ils swarmed et quizá");
    }
}
