//! `tts`: text → speech with a catalog voice → encoded audio in the blob store.

use std::sync::Arc;

use mediagen_core::ApiError;
use mediagen_engines::media::encode;
use mediagen_engines::tts::{ssml, TtsCatalog, TtsError};
use mediagen_engines::AudioFormat;
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
    pub dry_run: bool,
}

impl TtsRequest {
    /// Validates a body against the catalog. Errors name the parameter.
    pub fn parse(body: TtsBody, catalog: &TtsCatalog) -> Result<Self, ApiError> {
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
        if ssml::is_ssml(&text) {
            let segments = ssml::parse(&text).map_err(|e| {
                ApiError::invalid_parameter("text", format!("invalid SSML: {}", e.message))
                    .with_detail("position", e.position)
            })?;
            if segments.is_empty() {
                return Err(ApiError::invalid_parameter(
                    "text",
                    "the SSML has nothing to say",
                ));
            }
        }
        let voice = catalog.voice(&body.voice_id).ok_or_else(|| {
            ApiError::new(mediagen_core::ErrorCode::VoiceNotFound)
                .with_message(format!(
                    "No voice with id `{}` exists. List voices with GET /v1/voices.",
                    body.voice_id
                ))
                .with_detail("parameter", "voiceId")
        })?;
        let format = match body.format.as_deref() {
            None => AudioFormat::Mp3,
            Some(f) => AudioFormat::parse(f).ok_or_else(|| {
                ApiError::invalid_parameter("format", "must be one of mp3, wav, ogg, flac, pcm")
            })?,
        };
        let sample_rate = match body.sample_rate {
            None => format.default_rate(voice.sample_rate),
            Some(r) if format.sample_rates().contains(&r) => r,
            Some(_) => {
                let rates: Vec<String> = format.sample_rates().iter().map(u32::to_string).collect();
                return Err(ApiError::invalid_parameter(
                    "sampleRate",
                    format!("{} supports {}", format.as_str(), rates.join(", ")),
                ));
            }
        };
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
        })
    }

    /// Billable units: characters.
    pub fn characters(&self) -> usize {
        self.text.chars().count()
    }
}

pub struct TtsPipeline {
    pub catalog: Arc<TtsCatalog>,
}

fn failure(e: TtsError) -> JobFailure {
    match e {
        TtsError::UnknownVoice(v) => JobFailure::abort(
            "voice_not_found",
            format!("voice {v} is no longer available"),
        ),
        TtsError::EngineUnavailable { .. } => {
            JobFailure::abort("engine_unavailable", e.to_string())
        }
        TtsError::Cancelled => JobFailure::abort("cancelled", "The job was cancelled."),
        TtsError::PhonemesUnsupported => JobFailure::abort("synthesis_failed", e.to_string()),
        TtsError::Failed(m) => JobFailure::retry("synthesis_failed", m),
    }
}

#[async_trait::async_trait]
impl Pipeline for TtsPipeline {
    fn kind(&self) -> &'static str {
        "tts"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: TtsRequest = serde_json::from_value(ctx.job.payload.clone())
            .map_err(|e| JobFailure::abort("invalid_payload", e.to_string()))?;
        let catalog = self.catalog.clone();
        let progress = ctx.clone();
        let r = req.clone();
        let (bytes, duration) = tokio::task::spawn_blocking(move || {
            let audio = catalog
                .speak(&r.voice_id, &r.text, r.speed, |i, n, _| {
                    progress.set_progress(((i + 1) * 90 / n) as i64);
                    !progress.is_cancelled()
                })
                .map_err(failure)?;
            let bytes = encode(&audio, r.format, r.sample_rate)
                .map_err(|e| JobFailure::retry("encoding_failed", e.to_string()))?;
            Ok::<_, JobFailure>((bytes, audio.duration()))
        })
        .await
        .map_err(|e| JobFailure::abort("internal_error", e.to_string()))??;
        let key = ctx.output_key(&format!("speech.{}", req.format.extension()));
        ctx.blobs
            .put(&key, bytes.into())
            .await
            .map_err(|e| JobFailure::retry("storage_error", e.to_string()))?;
        Ok(json!({
            "audioUrl": format!("blob:{key}"),
            "duration": (duration * 1000.0).round() / 1000.0,
            "format": req.format.as_str(),
            "sampleRate": req.sample_rate,
            "characters": req.characters(),
            "voiceId": req.voice_id,
        }))
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
