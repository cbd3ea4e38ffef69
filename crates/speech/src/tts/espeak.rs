//! espeak-ng: about 130 languages with a formant synthesizer, and the
//! phonemizer (IPA) of the neural voices. GPL-3, so it runs as a
//! subprocess and is never linked.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Command};
use std::sync::mpsc::Receiver;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use crate::tts::{text, voice_id, TextToSpeech, TtsError, VoiceInfo};
use mediagen_media::audio::{parse_wav, Audio};
use mediagen_media::process::{run, Piped};

const TIMEOUT: Duration = Duration::from_secs(60);
/// espeak-ng's default speaking rate, words per minute.
const DEFAULT_WPM: f32 = 175.0;

fn espeak() -> Command {
    let mut c = Command::new("espeak-ng");
    // Text always comes on stdin, so it can never be taken for an option.
    c.arg("-b").arg("1");
    c
}

/// True when the espeak-ng program runs.
pub fn available() -> Result<(), String> {
    let mut c = Command::new("espeak-ng");
    c.arg("--version");
    run(c, b"", Duration::from_secs(10))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// IPA phonemes of `text`, one string per clause as espeak-ng splits it.
/// Uses a long-lived espeak-ng process per voice (starting one costs ~10 ms,
/// a sentence ~1 ms); falls back to a one-off process if that one fails.
/// With `tie`, multi-letter phonemes are joined by `^` (`a^ɪ`).
pub fn phonemize(voice: &str, text: &str, tie: bool) -> Result<Vec<String>, TtsError> {
    match PHONEMIZER.phonemize(voice, text, tie) {
        Ok(lines) => Ok(lines),
        Err(e) => {
            tracing::warn!(
                voice,
                "persistent espeak-ng phonemizer failed ({e}); using a one-off process"
            );
            phonemize_once(voice, text, tie)
        }
    }
}

/// The sentence's phonemes with its clause punctuation put back (espeak-ng
/// drops punctuation but writes one line per clause), as the neural voices
/// were trained.
pub fn sentence_phonemes(voice: &str, sentence: &str, tie: bool) -> Result<String, TtsError> {
    let clauses = text::clauses(sentence);
    let lines = phonemize(voice, sentence, tie)?;
    if lines.len() == clauses.len() {
        let parts: Vec<String> = lines
            .iter()
            .zip(&clauses)
            .map(|(ph, (_, punct))| format!("{ph}{}", punct.map(String::from).unwrap_or_default()))
            .collect();
        Ok(parts.join(" "))
    } else {
        let end = clauses.last().and_then(|c| c.1).unwrap_or('.');
        Ok(format!("{}{end}", lines.join(", ")))
    }
}

fn ipa_args(voice: &str, tie: bool) -> Vec<&str> {
    // espeak-ng writes phonemes as it synthesizes (then discards the sound,
    // `-q`); at its fastest rate without time-stretching (449 words a
    // minute; from 450 on it runs Sonic, slower) that sound takes half the
    // time, and the phonemes are the same (checked on English, Spanish,
    // French, Italian, Portuguese and Hindi text).
    let mut args = vec!["-q", "--ipa", "-s", "449", "-v", voice];
    if tie {
        args.push("--tie=^");
    }
    args
}

fn phonemize_once(voice: &str, text: &str, tie: bool) -> Result<Vec<String>, TtsError> {
    let mut c = espeak();
    c.args(ipa_args(voice, tie));
    let out = run(c, text.as_bytes(), TIMEOUT).map_err(|e| TtsError::Failed(e.to_string()))?;
    Ok(ipa_lines(&String::from_utf8_lossy(&out)))
}

fn ipa_lines(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

static PHONEMIZER: LazyLock<Phonemizer> = LazyLock::new(Phonemizer::default);

#[derive(Default)]
struct Phonemizer {
    procs: Mutex<HashMap<String, EspeakProcess>>,
}

/// A long-lived espeak-ng process shared by every request of its voice.
///
/// Each request is framed by a marker that no text can know in advance: a
/// fresh random made-up word, written on its own line before and after the
/// text.
/// espeak-ng reads both copies alike, so the request's phonemes are the lines
/// between the first line of the answer and the next line equal to it. A
/// text cannot end its frame early without guessing the number, and a
/// process found out of step (lines waiting before a request is written, a
/// frame that never closes) is killed, never reused.
struct EspeakProcess {
    /// Killed with its process group when dropped.
    _tool: Piped,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

/// A frame marker: a random made-up word of six syllables (70^6, some
/// 10^11 possibilities), which espeak-ng reads as one short word. (Twelve
/// random digits, read as a long number, tripled the phonemizer's time:
/// 2.64-3.06 s against 0.89-1.07 s for 300 sentences; this word adds a
/// quarter to a half.)
fn frame_marker() -> String {
    use rand::seq::SliceRandom;
    const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
    const VOWELS: &[u8] = b"aeiou";
    let mut rng = rand::thread_rng();
    let mut word = String::with_capacity(13);
    for _ in 0..6 {
        word.push(char::from(*CONSONANTS.choose(&mut rng).expect("not empty")));
        word.push(char::from(*VOWELS.choose(&mut rng).expect("not empty")));
    }
    word.push('.');
    word
}

impl EspeakProcess {
    fn spawn(voice: &str, tie: bool) -> Result<Self, String> {
        let mut c = espeak();
        c.args(ipa_args(voice, tie));
        let mut tool = Piped::spawn_kept(c).map_err(|e| e.to_string())?;
        let stdin = tool.stdin.take().ok_or("no stdin")?;
        let stdout = tool.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            _tool: tool,
            stdin,
            lines,
        })
    }

    /// The next non-empty line the process writes.
    fn next_line(&self) -> Result<String, String> {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(5))
                .map_err(|e| e.to_string())?;
            let line = line.trim();
            if !line.is_empty() {
                return Ok(line.to_owned());
            }
        }
    }

    /// The phoneme lines of `text` (one line, ending a clause), framed by a
    /// fresh marker.
    fn ask(&mut self, text: &str) -> Result<Vec<String>, String> {
        if self.lines.try_recv().is_ok() {
            return Err("the phonemizer is out of step".into());
        }
        let marker = frame_marker();
        // A blank line ends a paragraph, so nothing in `text` can join the
        // marker into its own clause.
        let payload = format!("{marker}\n\n{text}\n\n{marker}\n");
        self.stdin
            .write_all(payload.as_bytes())
            .and_then(|_| self.stdin.flush())
            .map_err(|e| e.to_string())?;
        let opening = self.next_line()?;
        let mut out = Vec::new();
        loop {
            let line = self.next_line()?;
            if line == opening {
                return Ok(out);
            }
            out.push(line);
        }
    }
}

impl Phonemizer {
    fn phonemize(&self, voice: &str, text: &str, tie: bool) -> Result<Vec<String>, String> {
        // One line, ending a clause.
        let mut text: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if !text.trim_end().ends_with(['.', '!', '?', ',', ';', ':']) {
            text.push('.');
        }
        let key = format!("{voice}{}", if tie { "+tie" } else { "" });
        let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        if !procs.contains_key(&key) {
            procs.insert(key.clone(), EspeakProcess::spawn(voice, tie)?);
        }
        let p = procs.get_mut(&key).expect("inserted above");
        let result = p.ask(&text);
        if result.is_err() {
            procs.remove(&key);
        }
        result
    }
}

/// The formant voices of espeak-ng.
pub struct EspeakEngine {
    voices: Vec<VoiceInfo>,
}

impl EspeakEngine {
    /// Lists the installed espeak-ng voices.
    pub fn load() -> Result<Self, String> {
        let mut c = Command::new("espeak-ng");
        c.arg("--voices");
        let out = run(c, b"", Duration::from_secs(10)).map_err(|e| e.to_string())?;
        let voices = parse_voice_list(&String::from_utf8_lossy(&out));
        if voices.is_empty() {
            return Err("espeak-ng lists no voices".into());
        }
        Ok(Self { voices })
    }
}

/// Parses `espeak-ng --voices`.
pub fn parse_voice_list(text: &str) -> Vec<VoiceInfo> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 5 {
                return None;
            }
            let (lang, age_gender, name, file) = (cols[1], cols[2], cols[3], cols[4]);
            let gender = match age_gender.rsplit('/').next() {
                Some("F") => "female",
                Some("M") => "male",
                _ => "neutral",
            };
            let language = bcp47(lang);
            let display = name.replace('_', " ");
            // Spoken by its file: espeak-ng does not find every voice by the
            // language it lists (`chr-US-Qaaa-x-west` is "no such voice";
            // `iro/chr` speaks).
            Some(VoiceInfo {
                id: voice_id("espeak", lang),
                key: file.to_owned(),
                name: format!("{display} (eSpeak)"),
                languages: vec![language.clone()],
                accent: display
                    .split_once(" (")
                    .map(|(_, a)| a.trim_end_matches(')').to_owned()),
                language,
                gender: gender.to_owned(),
                engine: "espeak",
                quality: "low",
                sample_rate: 22050,
                description: format!(
                    "eSpeak NG formant voice for {display}: robotic but intelligible, very fast."
                ),
                espeak_voice: file.to_owned(),
            })
        })
        .collect()
}

/// `en-us` → `en-US`, `cmn-latn-pinyin` → `cmn-Latn-pinyin`.
pub fn bcp47(tag: &str) -> String {
    tag.split('-')
        .enumerate()
        .map(|(i, part)| match (i, part.len()) {
            (0, _) => part.to_ascii_lowercase(),
            (_, 2) => part.to_ascii_uppercase(),
            (_, 4) => {
                let mut c = part.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase())
                    .unwrap_or_default()
            }
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("-")
}

impl TextToSpeech for EspeakEngine {
    fn engine(&self) -> &'static str {
        "espeak"
    }

    fn voices(&self) -> Vec<VoiceInfo> {
        self.voices.clone()
    }

    fn synthesize(&self, key: &str, sentence: &str, speed: f32) -> Result<Audio, TtsError> {
        if !self.voices.iter().any(|v| v.key == key) {
            return Err(TtsError::UnknownVoice(key.to_owned()));
        }
        let wpm = (DEFAULT_WPM * speed).round().clamp(80.0, 450.0) as u32;
        let mut c = espeak();
        c.args(["--stdout", "-v", key, "-s", &wpm.to_string()]);
        let wav =
            run(c, sentence.as_bytes(), TIMEOUT).map_err(|e| TtsError::Failed(e.to_string()))?;
        parse_wav(&wav).ok_or_else(|| TtsError::Failed("espeak-ng wrote no audio".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persistent_and_one_off_phonemes_agree() {
        let text = "Hello there, my friend. How are you";
        let persistent = phonemize("en-us", text, false).unwrap();
        let once = phonemize_once("en-us", &format!("{text}."), false).unwrap();
        assert_eq!(persistent, once);
        assert_eq!(persistent.len(), 3, "{persistent:?}");
        // The process is reused and stays in step.
        assert_eq!(phonemize("en-us", "Second call.", false).unwrap().len(), 1);
        assert_eq!(phonemize("en-us", "Nice.", true).unwrap(), ["nˈa^ɪs"]);
    }

    /// No text moves the shared process out of step: after each hostile
    /// text, the next caller gets the phonemes of its own text.
    #[test]
    fn hostile_texts_cannot_shift_the_shared_process() {
        let own = "My bank password is purple elephant.";
        let expected = phonemize_once("en-us", own, false).unwrap();
        for hostile in [
            "Zyzzyvaqx.",
            "zyzzyvaqx.\nzyzzyvaqx.",
            "482913774512.",
            "482913774512.\n\n482913774512.\n",
            "bakotimusevo.\n\nbakotimusevo.",
            "Dear Mr.",
            "\u{0}\u{1b}[2J\r\n<speak>",
            "",
        ] {
            let _ = phonemize("en-us", hostile, false);
            assert_eq!(
                phonemize("en-us", own, false).unwrap(),
                expected,
                "after {hostile:?}"
            );
        }
    }

    #[test]
    fn parses_the_voice_list() {
        let text = "Pty Language       Age/Gender VoiceName          File                 Other Languages\n \
                    5  en-us           --/M      English_(America)  gmw/en-US            (en 10)\n \
                    5  de              --/F      German             gmw/de\n";
        let v = parse_voice_list(text);
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].language.as_str(), v[0].gender.as_str()),
            ("en-US", "male")
        );
        assert_eq!(v[0].accent.as_deref(), Some("America"));
        assert_eq!(v[1].gender, "female");
        assert_eq!(v[1].key, "gmw/de", "spoken by its file");
        assert_eq!(bcp47("cmn-latn-pinyin"), "cmn-Latn-pinyin");
    }
}
