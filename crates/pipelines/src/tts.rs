//! `tts`: text → speech with a catalog voice → encoded audio in the blob store.

use mediagen_core::ErrorCode;
use std::sync::Arc;

use mediagen_core::ApiError;
use mediagen_media::audio::{resample_linear, Audio};
use mediagen_media::media::encode;
use mediagen_media::AudioFormat;
use mediagen_speech::stt::{languages as stt_languages, transcribe, SttCatalog, SttOptions};
use mediagen_speech::tts::{ssml, TtsCatalog, TtsError};
use mediagen_speech::voice::{Transform, VoiceConverter, VoiceProfile, WorldConverter, RATE};
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Longest text accepted, in characters (the spec's rule).
pub const MAX_TEXT: usize = 5000;

/// A validated text-to-speech request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TtsRequest {
    pub text: String,
    pub voice_id: String,
    pub format: AudioFormat,
    pub sample_rate: u32,
    pub speed: f32,
    /// Word timestamps wanted.
    #[serde(default)]
    pub timestamps: bool,
    /// When `voice_id` is a cloned voice: how it is spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloned: Option<ClonedVoice>,
    /// Streamed to the client as it is made (`/v1/text-to-speech/stream`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

/// A cloned voice as speech engines speak it: the catalog voice closest to
/// it (the base), converted toward its profile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClonedVoice {
    /// `None` when no catalog voice speaks its language: it can then only
    /// be a conversion target.
    pub base_voice_id: Option<String>,
    /// BCP-47.
    pub language: String,
    pub profile: VoiceProfile,
}

impl ClonedVoice {
    /// The catalog voice that speaks for it, or 422 naming `voiceId`.
    pub fn base(&self) -> Result<&str, ApiError> {
        self.base_voice_id.as_deref().ok_or_else(|| {
            ApiError::unprocessable(
                "voiceId",
                format!(
                    "no catalog voice speaks `{}`, this cloned voice's language, so it cannot speak text (it can still be the target of the voice changer's convert mode)",
                    self.language
                ),
            )
        })
    }
}

/// The request body as sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TtsBody {
    pub text: String,
    pub voice_id: String,
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub sample_rate: Option<u32>,
    #[serde(default)]
    pub speed: Option<f32>,
    #[serde(default)]
    pub timestamps: bool,
    #[serde(default)]
    pub dry_run: bool,
}

impl TtsRequest {
    /// Validates a body against the catalog (and the account's cloned
    /// voice, when `voiceId` names one). Errors name the parameter.
    pub fn parse(
        body: TtsBody,
        catalog: &TtsCatalog,
        cloned: Option<ClonedVoice>,
    ) -> Result<Self, ApiError> {
        let text = body.text.trim().to_owned();
        let chars = text.chars().count();
        if chars == 0 {
            return Err(ApiError::invalid_parameter("text", "must not be empty"));
        }
        if chars > MAX_TEXT {
            return Err(ApiError::invalid_parameter(
                "text",
                format!("must be at most {MAX_TEXT} characters (got {chars})"),
            ));
        }
        // Something to say: a letter or a digit in any script (or phonemes).
        // Text of only punctuation, emoji or invisible characters would make
        // silence and still be charged. Well-formed text the engine cannot
        // use (this, and SSML errors) is 422; out of the document's bounds,
        // 400.
        let sayable = |t: &str| t.chars().any(char::is_alphanumeric);
        if ssml::is_ssml(&text) {
            let segments = ssml::parse(&text).map_err(|e| {
                ApiError::unprocessable("text", format!("invalid SSML: {}", e.message))
                    .with_detail("position", e.position)
            })?;
            let says = segments.iter().any(|s| match s {
                ssml::Segment::Text { text, .. } => sayable(text),
                ssml::Segment::Phonemes { .. } => true,
                ssml::Segment::Break(_) => false,
            });
            if !says {
                return Err(ApiError::unprocessable(
                    "text",
                    "the SSML has nothing to say",
                ));
            }
        } else if !sayable(&text) {
            return Err(ApiError::unprocessable(
                "text",
                "has nothing to say: no letters or digits",
            ));
        }
        let speaker = match &cloned {
            Some(c) => c.base()?,
            None => body.voice_id.as_str(),
        };
        let voice = catalog.voice(speaker).ok_or_else(|| {
            ApiError::new(mediagen_core::ErrorCode::VoiceNotFound)
                .with_message(format!(
                    "No voice with id `{}` exists. List voices with GET /v1/voices.",
                    body.voice_id
                ))
                .with_detail("parameter", "voiceId")
        })?;
        let native = if cloned.is_some() {
            RATE
        } else {
            voice.sample_rate
        };
        let (format, sample_rate) =
            crate::audio_output(body.format.as_deref(), body.sample_rate, native)?;
        let speed = body.speed.unwrap_or(1.0);
        if !(0.5..=2.0).contains(&speed) {
            return Err(ApiError::invalid_parameter(
                "speed",
                "must be from 0.5 to 2.0",
            ));
        }
        Ok(Self {
            text,
            voice_id: body.voice_id,
            format,
            sample_rate,
            speed,
            timestamps: body.timestamps,
            cloned,
            stream: false,
        })
    }

    /// The catalog voice that speaks (a cloned voice's base).
    pub fn speaker(&self) -> &str {
        match &self.cloned {
            Some(c) => c.base_voice_id.as_deref().unwrap_or_default(),
            None => &self.voice_id,
        }
    }

    /// The rate of the audio [`TtsRequest::speak`] makes.
    pub fn native_rate(&self, catalog: &TtsCatalog) -> u32 {
        match &self.cloned {
            Some(_) => RATE,
            None => catalog
                .voice(&self.voice_id)
                .map_or(22_050, |v| v.sample_rate),
        }
    }

    /// Speaks the text, sentence by sentence: with the catalog voice, or
    /// with a cloned voice's base voice converted toward its profile (each
    /// sentence mapped from the base's measured profile, so all match).
    /// `each` sees every piece as it is in the output.
    pub fn speak(
        &self,
        catalog: &TtsCatalog,
        mut each: impl FnMut(usize, usize, &Audio) -> bool,
    ) -> Result<Audio, TtsError> {
        let Some(cloned) = &self.cloned else {
            return catalog.speak(&self.voice_id, &self.text, self.speed, each);
        };
        let base = self.speaker();
        let source = catalog.profile(base)?;
        let mut out = Audio::new(Vec::new(), RATE);
        catalog.speak(base, &self.text, self.speed, |i, n, piece| {
            let samples = resample_linear(&piece.samples, piece.sample_rate, RATE);
            let audio = if piece.peak() == 0.0 {
                Audio::new(samples, RATE)
            } else {
                let how = Transform {
                    target: Some(&cloned.profile),
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

    /// Billable units: characters.
    pub fn characters(&self) -> usize {
        self.text.chars().count()
    }
}

pub struct TtsPipeline {
    pub catalog: Arc<TtsCatalog>,
    /// Aligns words for `timestamps: true` (no engine here reports durations).
    pub stt: Arc<SttCatalog>,
}

fn failure(e: TtsError) -> JobFailure {
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
        TtsError::Failed(m) => JobFailure::retry(ErrorCode::SynthesisFailed, m),
    }
}

#[async_trait::async_trait]
impl Pipeline for TtsPipeline {
    fn kind(&self) -> &'static str {
        "tts"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: TtsRequest = ctx.payload()?;
        if req.stream {
            return crate::tts_stream::run(self.catalog.clone(), ctx, req).await;
        }
        let catalog = self.catalog.clone();
        let progress = ctx.clone();
        let r = req.clone();
        let stt = self.stt.clone();
        let (bytes, duration, words) = tokio::task::spawn_blocking(move || {
            let audio = r
                .speak(&catalog, |i, n, _| {
                    progress.set_progress(((i + 1) * 90 / n) as i64);
                    !progress.is_cancelled()
                })
                .map_err(failure)?;
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
    let pcm = resample_linear(&audio.samples, audio.sample_rate, 16_000);
    let opts = SttOptions {
        language,
        translate: false,
        prompt: Some(text.chars().take(400).collect()),
        words: true,
    };
    let heard = transcribe(model.as_ref(), stt.gate(), &pcm, &opts)
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

impl TtsRequest {
    /// The file name of a job's audio (its URL goes at `/audioUrl`).
    pub fn output_name(&self) -> String {
        format!("speech.{}", self.format.extension())
    }

    /// The job's `result` for `duration` seconds of audio.
    pub fn result(&self, duration: f64) -> Value {
        let mut result = json!({
            "duration": (duration * 1000.0).round() / 1000.0,
            "format": self.format.as_str(),
            "sampleRate": self.sample_rate,
            "characters": self.characters(),
            "voiceId": self.voice_id,
        });
        if self.cloned.is_some() {
            result["baseVoiceId"] = json!(self.speaker());
        }
        result
    }
}

/// What a voice says in its preview: a greeting in its language, or numbers
/// (which espeak-ng reads in every one of its languages).
pub fn preview_text(language: &str) -> &'static str {
    match language.get(..2).unwrap_or("") {
        "en" => "Hello! This is how I sound. I can read anything you write.",
        "es" => "¡Hola! Así suena mi voz. Puedo leer todo lo que escribas.",
        "fr" => "Bonjour ! Voici ma voix. Je peux lire tout ce que vous écrivez.",
        "it" => "Ciao! Questa è la mia voce. Posso leggere tutto quello che scrivi.",
        "pt" => "Olá! Esta é a minha voz. Posso ler tudo o que você escrever.",
        "de" => "Hallo! So klingt meine Stimme. Ich lese alles, was du schreibst.",
        "hi" => "नमस्ते! यह मेरी आवाज़ है।",
        _ => "1, 2, 3, 4, 5.",
    }
}

/// `voice.preview`: a catalog voice's short sample (the `previewUrl` of
/// the voice list), made by a worker so that API processes run no engine.
/// Internal: the API submits it for the operator account at no cost.
pub struct PreviewPipeline {
    pub catalog: Arc<TtsCatalog>,
}

/// What a preview job is asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewRequest {
    pub voice_id: String,
}

#[async_trait::async_trait]
impl Pipeline for PreviewPipeline {
    fn kind(&self) -> &'static str {
        "voice.preview"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: PreviewRequest = ctx.payload()?;
        let catalog = self.catalog.clone();
        let voice = req.voice_id.clone();
        let mp3 = tokio::task::spawn_blocking(move || preview_mp3(&catalog, &voice))
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))?
            .map_err(|e| JobFailure::abort(ErrorCode::SynthesisFailed, e))?;
        ctx.put_output("/audioUrl", "preview.mp3", mp3.into())
            .await?;
        Ok(json!({ "voiceId": req.voice_id }))
    }
}

/// A short mp3 sample of a voice (blocking: run it off the async runtime).
pub fn preview_mp3(catalog: &TtsCatalog, voice_id: &str) -> Result<Vec<u8>, String> {
    let voice = catalog.voice(voice_id).ok_or("unknown voice")?;
    let audio = catalog
        .speak(voice_id, preview_text(&voice.language), 1.0, |_, _, _| true)
        .map_err(|e| e.to_string())?;
    encode(
        &audio,
        AudioFormat::Mp3,
        AudioFormat::Mp3.default_rate(voice.sample_rate),
    )
    .map_err(|e| e.to_string())
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
