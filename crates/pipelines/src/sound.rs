//! `sound`: a text prompt → a sound plan → synthesized, mixed audio in the
//! blob store (the embedded engine of `mediagen_engines::sound`).

use mediagen_core::{ApiError, ErrorCode};
use mediagen_engines::media::encode;
use mediagen_engines::sound::{self, Plan, CONCEPTS, MAX_SECONDS, MIN_SECONDS};
use mediagen_engines::AudioFormat;
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Longest prompt, characters.
pub const MAX_PROMPT: usize = 1000;

/// The request body as sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SoundBody {
    pub prompt: String,
    #[serde(default)]
    pub duration: Option<f64>,
    #[serde(default, rename = "loop")]
    pub looped: bool,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub sample_rate: Option<u32>,
    #[serde(default)]
    pub dry_run: bool,
}

/// A validated request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SoundRequest {
    pub prompt: String,
    /// Seconds, resolved (the plan's natural length when none was asked).
    pub duration: f32,
    #[serde(rename = "loop")]
    pub looped: bool,
    pub seed: u64,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

/// Sample rate when none is asked.
const DEFAULT_RATE: u32 = 44_100;

impl SoundRequest {
    /// Validates a body; errors name the parameter, or (422
    /// `unsupported_prompt`) list what the engine understands.
    pub fn parse(body: SoundBody) -> Result<(Self, Plan), ApiError> {
        let prompt = crate::prompt(&body.prompt, MAX_PROMPT)?;
        let plan = sound::plan(&prompt).map_err(|e| {
            ApiError::new(ErrorCode::UnsupportedPrompt)
                .with_message(
                    "Nothing in the prompt names a sound this engine can make. It understands: \
                     the sources in `details.understood` (and their words, listed by GET \
                     /v1/sound-generation/vocabulary), with modifiers such as distant, heavy, \
                     soft, fast, slow, deep, high and a tempo in bpm.",
                )
                .with_detail("parameter", "prompt")
                .with_detail(
                    "understood",
                    CONCEPTS.iter().map(|c| c.name).collect::<Vec<_>>(),
                )
                .with_detail("ignoredTerms", e.ignored_terms)
        })?;
        let duration = match body.duration {
            None => plan.natural_seconds(),
            Some(d) if (f64::from(MIN_SECONDS)..=f64::from(MAX_SECONDS)).contains(&d) => d as f32,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    format!("must be from {MIN_SECONDS} to {MAX_SECONDS} seconds, or omitted"),
                ))
            }
        };
        let (format, sample_rate) =
            crate::audio_output(body.format.as_deref(), body.sample_rate, DEFAULT_RATE)?;
        let seed = body.seed.unwrap_or_else(|| rand::random::<u32>().into());
        Ok((
            Self {
                prompt,
                duration,
                looped: body.looped,
                seed,
                format,
                sample_rate,
            },
            plan,
        ))
    }

    /// Billable units: seconds of sound, rounded up.
    pub fn seconds(&self) -> f64 {
        f64::from(self.duration).ceil()
    }
}

pub struct SoundPipeline;

#[async_trait::async_trait]
impl Pipeline for SoundPipeline {
    fn kind(&self) -> &'static str {
        "sound"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: SoundRequest = ctx.payload()?;
        let r = req.clone();
        let (bytes, plan) = tokio::task::spawn_blocking(move || {
            let plan = sound::plan(&r.prompt)
                .map_err(|_| JobFailure::abort("unsupported_prompt", "nothing to make"))?;
            let audio = sound::render(&plan, r.duration, r.seed, r.looped, r.sample_rate);
            let bytes = encode(&audio, r.format, r.sample_rate)
                .map_err(|e| JobFailure::retry("encoding_failed", e.to_string()))?;
            Ok::<_, JobFailure>((bytes, plan))
        })
        .await
        .map_err(|e| JobFailure::abort("internal_error", e.to_string()))??;
        let key = ctx.output_key(&format!("sound.{}", req.format.extension()));
        ctx.blobs
            .put(&key, bytes.into())
            .await
            .map_err(|e| JobFailure::retry("storage_error", e.to_string()))?;
        Ok(json!({
            "audioUrl": format!("blob:{key}"),
            "duration": (f64::from(req.duration) * 1000.0).round() / 1000.0,
            "format": req.format.as_str(),
            "sampleRate": req.sample_rate,
            "seed": req.seed,
            "loop": req.looped,
            "layers": plan.layers,
            "room": plan.room,
            "bpm": plan.bpm,
            "ignoredTerms": plan.ignored_terms,
        }))
    }
}
