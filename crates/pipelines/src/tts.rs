//! `tts`: text → speech with a catalog voice → encoded audio in the blob store.

use mediagen_core::voice::VoiceProfile;
use mediagen_core::ErrorCode;
use mediagen_speakers::encoder::{Embedding, SpeakerEncoder};
use std::sync::Arc;

use mediagen_media::audio::{resample, Audio};
use mediagen_media::media::encode;
use mediagen_media::spectrum::equalize;
use mediagen_speech::stt::{languages as stt_languages, transcribe, SttCatalog, SttOptions};
use mediagen_speech::tts::{ssml, Foreign, Style, TtsCatalog, TtsError};
use mediagen_speech::voice::{Transform, VoiceConverter, WorldConverter, RATE};
use mediagen_worker::{JobContext, JobFailure};
use serde::Serialize;
use serde_json::Value;

pub use mediagen_jobs::tts::*;
use mediagen_jobs::voice_clone::NeuralStyle;

/// Speaking a request with the engines.
pub trait Speak {
    /// The rate of the audio [`Speak::speak`] makes.
    fn native_rate(&self, catalog: &TtsCatalog) -> u32;

    /// Speaks the text, sentence by sentence: with the catalog voice, with
    /// a neural clone's style table (`styles`, read by [`load_styles`]) in
    /// its base voice's place, or with a WORLD clone's base voice converted
    /// toward its profile (each sentence mapped from the base's measured
    /// profile, so all match). `each` sees every piece as it is in the
    /// output.
    fn speak(
        &self,
        catalog: &TtsCatalog,
        styles: Option<&[f32]>,
        each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError>;
}

/// A neural clone's style table, read from the blob store (`None` for any
/// other voice).
pub async fn load_styles(
    ctx: &JobContext,
    cloned: Option<&ClonedVoice>,
) -> Result<Option<Vec<f32>>, JobFailure> {
    read_styles(ctx, cloned.and_then(|c| c.neural.as_ref())).await
}

/// A neural clone's style table, read from the blob store (`None` for
/// `None`).
pub async fn read_styles(
    ctx: &JobContext,
    neural: Option<&NeuralStyle>,
) -> Result<Option<Vec<f32>>, JobFailure> {
    let Some(neural) = neural else {
        return Ok(None);
    };
    let bytes = ctx
        .blobs
        .get_bytes(&neural.styles_key)
        .await
        .map_err(JobFailure::storage)?;
    Ok(Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    ))
}

impl Speak for TtsRequest {
    /// The rate of the audio [`Speak::speak`] makes.
    fn native_rate(&self, catalog: &TtsCatalog) -> u32 {
        match &self.cloned {
            Some(c) if c.neural.is_none() => RATE,
            _ => catalog
                .voice(self.speaker())
                .map_or(22_050, |v| v.sample_rate),
        }
    }

    /// Speaks the text, sentence by sentence: with the catalog voice, or
    /// with a cloned voice's base voice converted toward its profile (each
    /// sentence mapped from the base's measured profile, so all match).
    /// `each` sees every piece as it is in the output.
    fn speak(
        &self,
        catalog: &TtsCatalog,
        styles: Option<&[f32]>,
        each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError> {
        let Some(cloned) = &self.cloned else {
            return catalog.speak(&self.voice_id, &self.text, self.speed, each);
        };
        if let Some(neural) = &cloned.neural {
            let styles = styles
                .ok_or_else(|| TtsError::Failed("the clone's style table was not read".into()))?;
            return speak_neural(
                catalog,
                self.speaker(),
                Styled::of(styles, neural),
                &self.text,
                None,
                self.speed,
                each,
            );
        }
        speak_converted(
            catalog,
            self.speaker(),
            &cloned.profile,
            &self.text,
            self.speed,
            each,
        )
    }
}

/// A neural clone as it is spoken: its style table at its pitch, and the
/// recording colour it is spoken through (see [`speak_neural`]).
#[derive(Debug, Clone, Copy)]
pub struct Styled<'a> {
    pub style: Style<'a>,
    pub colour: &'a [(f32, f32)],
}

impl<'a> Styled<'a> {
    /// The clone `neural` with its table `styles` (read from the blob
    /// store).
    pub fn of(styles: &'a [f32], neural: &'a NeuralStyle) -> Self {
        Self {
            style: Style {
                table: styles,
                pitch: neural.pitch,
                formant: neural.formant,
                pace: neural.pace,
            },
            colour: &neural.colour,
        }
    }
}

/// `text` spoken with a neural clone's style table `styles` in catalog
/// voice `base`'s language, each piece through the clone's recording
/// colour (an equaliser curve; empty: none).
pub fn speak_neural(
    catalog: &TtsCatalog,
    base: &str,
    styled: Styled,
    text: &str,
    foreign: Option<&Foreign>,
    speed: f32,
    mut each: impl FnMut(usize, usize, &Audio) -> bool,
) -> Result<Audio, TtsError> {
    let mut samples = Vec::new();
    let style = Some(styled.style);
    let spoken = catalog.speak_foreign(base, style, text, foreign, speed, |i, n, piece| {
        let audio = Audio::new(
            equalize(&piece.samples, piece.sample_rate, styled.colour),
            piece.sample_rate,
        );
        samples.extend_from_slice(&audio.samples);
        each(i, n, &audio)
    })?;
    Ok(Audio::new(samples, spoken.sample_rate))
}

/// `text` in catalog voice `base`, each sentence converted toward
/// `profile` (mapped from the base's measured profile): how a cloned voice
/// speaks. Audio at [`RATE`].
pub fn speak_converted(
    catalog: &TtsCatalog,
    base: &str,
    profile: &VoiceProfile,
    text: &str,
    speed: f32,
    mut each: impl FnMut(usize, usize, &Audio) -> bool,
) -> Result<Audio, TtsError> {
    let source = catalog.profile(base)?;
    let mut out = Audio::new(Vec::new(), RATE);
    catalog.speak(base, text, speed, |i, n, piece| {
        let samples = resample(&piece.samples, piece.sample_rate, RATE);
        let audio = if piece.peak() == 0.0 {
            Audio::new(samples, RATE)
        } else {
            let how = Transform {
                target: Some(profile),
                source: Some(&source),
                length: None,
            };
            Audio::new(WorldConverter.transform(&samples, &how).samples, RATE)
        };
        out.append(&audio);
        each(i, n, &audio)
    })?;
    Ok(out)
}

/// How a catalog voice is made to sound.
#[derive(Debug, Clone, Copy)]
pub enum Sound<'a> {
    /// As it is.
    Own,
    /// Converted toward a WORLD clone's profile.
    Converted(&'a VoiceProfile),
    /// A neural clone's style table in its place, at its pitch, through
    /// its colour.
    Styled(Styled<'a>),
}

/// How a voice sounds to the speaker encoder: the embedding of its preview
/// sentence in `language`, said by catalog voice `voice` as `sound` says.
pub fn voiceprint(
    tts: &TtsCatalog,
    encoder: &SpeakerEncoder,
    voice: &str,
    sound: Sound,
    language: &str,
) -> Result<Embedding, String> {
    let text = preview_text(language);
    let audio = match sound {
        Sound::Own => tts.speak(voice, text, 1.0, |_, _, _| true),
        Sound::Converted(profile) => {
            speak_converted(tts, voice, profile, text, 1.0, |_, _, _| true)
        }
        Sound::Styled(styled) => speak_neural(tts, voice, styled, text, None, 1.0, |_, _, _| true),
    }
    .map_err(|e| e.to_string())?;
    encoder
        .embed_at(&audio.samples, audio.sample_rate)
        .map_err(|e| e.to_string())
}

/// A speech engine's error as a job's: the one mapping every pipeline that
/// speaks uses.
pub(crate) fn tts_failure(e: TtsError) -> JobFailure {
    match e {
        TtsError::UnknownVoice(v) => JobFailure::abort(
            ErrorCode::VoiceNotFound,
            format!("voice {v} is no longer available"),
        ),
        TtsError::EngineUnavailable { .. } => {
            JobFailure::abort(ErrorCode::EngineUnavailable, e.to_string())
        }
        TtsError::Cancelled => JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled."),
        TtsError::PhonemesUnsupported => {
            JobFailure::abort(ErrorCode::SynthesisFailed, e.to_string())
        }
        TtsError::OverLimit { .. } => {
            JobFailure::abort(ErrorCode::OutputLimitExceeded, e.to_string())
        }
        TtsError::Unreadable(m) => {
            JobFailure::refused(mediagen_core::ApiError::unprocessable("text", m))
        }
        TtsError::Failed(m) => JobFailure::retry(ErrorCode::SynthesisFailed, m),
    }
}

/// Speaks `req` whole into one file in the blob store (with its words'
/// times for `timestamps`, aligned by `stt`).
pub async fn render(
    catalog: Arc<TtsCatalog>,
    stt: Arc<SttCatalog>,
    ctx: JobContext,
    req: TtsRequest,
) -> Result<Value, JobFailure> {
    let styles = load_styles(&ctx, req.cloned.as_ref()).await?;
    let progress = ctx.clone();
    let r = req.clone();
    let (bytes, duration, words) = ctx
        .blocking(move || {
            let audio = r
                .speak(&catalog, styles.as_deref(), |i, n, _| {
                    progress.set_progress(((i + 1) * 90 / n) as i64);
                    !progress.is_cancelled()
                })
                .map_err(tts_failure)?;
            let words = if r.timestamps {
                let language = catalog
                    .voice(r.speaker())
                    .map(|v| v.language.clone())
                    .unwrap_or_default();
                Some(word_timestamps(
                    &stt,
                    &audio,
                    &language,
                    &spoken_text(&r.text),
                )?)
            } else {
                None
            };
            let bytes = encode(&audio, r.format, r.sample_rate)
                .map_err(|e| JobFailure::retry(ErrorCode::EncodingFailed, e.to_string()))?;
            Ok::<_, JobFailure>((bytes, audio.duration(), words))
        })
        .await
        .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
    ctx.put_output("/audioUrl", &req.output_name(), bytes.into())
        .await?;
    let mut result = req.result(duration);
    if let Some(words) = words {
        result["words"] = serde_json::to_value(words).unwrap_or_default();
    }
    Ok(result)
}

/// The words of the request as written (SSML markup removed).
fn spoken_text(text: &str) -> String {
    if !ssml::is_ssml(text) {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// A word of the request with its time span in the audio (seconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimedWord {
    pub word: String,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub end: f64,
}

/// Times the words of `text` in `audio` by recognising the audio with word
/// timestamps and aligning the recognised words to the written ones.
fn word_timestamps(
    stt: &SttCatalog,
    audio: &Audio,
    language: &str,
    text: &str,
) -> Result<Vec<TimedWord>, JobFailure> {
    let model = stt.model(None).ok_or_else(|| {
        JobFailure::abort(
            ErrorCode::EngineUnavailable,
            "word timestamps need a speech-to-text model",
        )
    })?;
    let code = language.get(..2).unwrap_or("en").to_ascii_lowercase();
    let language = if model.multilingual() && stt_languages().contains(&code.as_str()) {
        Some(code)
    } else {
        None
    };
    let pcm = resample(&audio.samples, audio.sample_rate, 16_000);
    let opts = SttOptions {
        language,
        translate: false,
        prompt: Some(text.chars().take(400).collect()),
        words: true,
        decoding: mediagen_speech::stt::Decoding::Full,
    };
    let heard = transcribe(model.as_ref(), stt.gate(), stt.vad(), &pcm, &opts)
        .map_err(|e| JobFailure::retry(ErrorCode::AlignmentFailed, e.to_string()))?;
    let recognised: Vec<(String, f64, f64)> = heard
        .words
        .iter()
        .map(|w| (w.word.clone(), w.start, w.end))
        .collect();
    Ok(align(text, &recognised, audio.duration()))
}

fn key(w: &str) -> String {
    w.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Gives every written word the time of the recognised word it lines up
/// with (edit-distance alignment); written words with no partner share the
/// gap between their neighbours.
pub fn align(text: &str, heard: &[(String, f64, f64)], duration: f64) -> Vec<TimedWord> {
    let written: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect();
    let (a, b): (Vec<String>, Vec<String>) = (
        written.iter().map(|w| key(w)).collect(),
        heard.iter().map(|h| key(&h.0)).collect(),
    );
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let sub = d[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = sub.min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
        }
    }
    let mut times: Vec<Option<(f64, f64)>> = vec![None; n];
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        if d[i][j] == d[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]) {
            times[i - 1] = Some((heard[j - 1].1, heard[j - 1].2));
            i -= 1;
            j -= 1;
        } else if d[i][j] == d[i - 1][j] + 1 {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    let mut out = Vec::with_capacity(n);
    let mut k = 0;
    while k < n {
        if let Some((s, e)) = times[k] {
            out.push(TimedWord {
                word: written[k].to_owned(),
                start: s,
                end: e,
            });
            k += 1;
            continue;
        }
        // A run of unmatched words between the previous end and next start.
        let from = out.last().map(|w: &TimedWord| w.end).unwrap_or(0.0);
        let run_end = (k..n).find(|x| times[*x].is_some()).unwrap_or(n);
        let to = times
            .get(run_end)
            .copied()
            .flatten()
            .map(|t| t.0)
            .unwrap_or(duration)
            .max(from);
        let step = (to - from) / (run_end - k) as f64;
        for (x, w) in written.iter().enumerate().take(run_end).skip(k) {
            let s = from + step * (x - k) as f64;
            out.push(TimedWord {
                word: (*w).to_owned(),
                start: s,
                end: s + step,
            });
        }
        k = run_end;
    }
    for w in &mut out {
        w.start = (w.start * 1000.0).round() / 1000.0;
        w.end = (w.end * 1000.0).round() / 1000.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_words_take_the_times_of_what_was_heard() {
        let heard = vec![
            ("I".to_owned(), 0.0, 0.2),
            ("paid".to_owned(), 0.2, 0.5),
            ("three".to_owned(), 0.5, 0.8),
            ("dollars".to_owned(), 0.8, 1.2),
            ("today".to_owned(), 1.3, 1.7),
        ];
        let words = align("I paid $3 today.", &heard, 2.0);
        let got: Vec<(&str, f64, f64)> = words
            .iter()
            .map(|w| (w.word.as_str(), w.start, w.end))
            .collect();
        assert_eq!(got[0], ("I", 0.0, 0.2));
        assert_eq!(got[1], ("paid", 0.2, 0.5));
        assert_eq!(got[3], ("today.", 1.3, 1.7));
        // "$3" has no exact partner: it lies between "paid" and "today".
        assert!(got[2].1 >= 0.5 - 1e-9 && got[2].2 <= 1.3 + 1e-9, "{got:?}");
        assert_eq!(align("", &heard, 2.0), vec![]);
        let none = align("one two", &[], 2.0);
        assert_eq!((none[0].start, none[1].end), (0.0, 2.0));
    }

    #[test]
    fn ssml_markup_is_not_a_word() {
        assert_eq!(
            spoken_text("<speak>Hi <break time=\"1s\"/>there</speak>")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["Hi", "there"]
        );
        assert_eq!(spoken_text("plain <text>"), "plain <text>");
    }
}
