//! espeak-ng: about 130 languages with a formant synthesizer, and the
//! phonemizer (IPA) of the neural voices. GPL-3, so it runs as a
//! subprocess and is never linked.

use std::process::Command;
use std::time::Duration;

use crate::audio::{parse_wav, Audio};
use crate::process::run;
use crate::tts::{voice_id, TextToSpeech, TtsError, VoiceInfo};

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
pub fn phonemize(voice: &str, text: &str) -> Result<Vec<String>, TtsError> {
    let mut c = espeak();
    c.args(["-q", "--ipa", "-v", voice]);
    let out = run(c, text.as_bytes(), TIMEOUT).map_err(|e| TtsError::Failed(e.to_string()))?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect())
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
            let (lang, age_gender, name) = (cols[1], cols[2], cols[3]);
            let gender = match age_gender.rsplit('/').next() {
                Some("F") => "female",
                Some("M") => "male",
                _ => "neutral",
            };
            let language = bcp47(lang);
            let display = name.replace('_', " ");
            Some(VoiceInfo {
                id: voice_id("espeak", lang),
                key: lang.to_owned(),
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
                espeak_voice: lang.to_owned(),
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
        assert_eq!(bcp47("cmn-latn-pinyin"), "cmn-Latn-pinyin");
    }
}
