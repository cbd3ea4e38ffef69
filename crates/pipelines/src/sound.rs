//! `sound`: a text prompt → a sound plan → synthesized, mixed audio (the
//! embedded engine of `mediagen_generate::sound`), or a neural model's sound
//! (`mediagen_generate::diffusion`) → the blob store.

use std::sync::Arc;

use mediagen_core::{ApiError, ErrorCode};
use mediagen_generate::diffusion::{DiffusionModels, Medium};
use mediagen_generate::sound::{self, CONCEPTS, MAX_SECONDS, MIN_SECONDS};
use mediagen_media::media::encode;
use mediagen_media::{Audio, AudioFormat};
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::neural::{self, Neural};

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
    pub model: Option<String>,
    #[serde(default)]
    pub steps: Option<u32>,
    #[serde(default)]
    pub guidance_scale: Option<f32>,
    #[serde(default)]
    pub negative_prompt: Option<String>,
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
    /// A neural model; `None`: the embedded engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neural: Option<Neural>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negative_prompt: Option<String>,
}

/// Sample rate when none is asked (a neural model's own rate is used
/// instead when it names one).
const DEFAULT_RATE: u32 = 44_100;
/// Length a neural model makes when none is asked, seconds (AudioLDM's).
const NEURAL_SECONDS: f32 = 10.0;

/// The embedded engine's plan for a prompt, or 422 `unsupported_prompt`.
fn plan(prompt: &str) -> Result<sound::Plan, ApiError> {
    sound::plan(prompt).map_err(|e| {
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
    })
}

impl SoundRequest {
    /// Validates a body; errors name the parameter, or (422
    /// `unsupported_prompt`, embedded engine) list what it understands.
    pub fn parse(body: SoundBody, models: &DiffusionModels) -> Result<Self, ApiError> {
        let prompt = crate::prompt(&body.prompt, MAX_PROMPT)?;
        let (neural, on_disk) = Neural::parse(
            body.model,
            body.steps,
            body.guidance_scale,
            Medium::Sound,
            models,
        )?
        .unzip();
        let (natural, native) = match &on_disk {
            Some(found) => (NEURAL_SECONDS, found.sample_rate().unwrap_or(DEFAULT_RATE)),
            None => (plan(&prompt)?.natural_seconds(), DEFAULT_RATE),
        };
        let duration = match body.duration {
            None => natural,
            Some(d) if (f64::from(MIN_SECONDS)..=f64::from(MAX_SECONDS)).contains(&d) => d as f32,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    format!("must be from {MIN_SECONDS} to {MAX_SECONDS} seconds, or omitted"),
                ))
            }
        };
        if body.negative_prompt.is_some() && neural.is_none() {
            return Err(ApiError::unprocessable(
                "negativePrompt",
                "applies to neural models only (see `model`)",
            ));
        }
        let (format, sample_rate) =
            crate::audio_output(body.format.as_deref(), body.sample_rate, native)?;
        let seed = body.seed.unwrap_or_else(|| rand::random::<u32>().into());
        Ok(Self {
            prompt,
            duration,
            looped: body.looped,
            seed,
            format,
            sample_rate,
            neural,
            negative_prompt: body.negative_prompt,
        })
    }

    /// Billable units: seconds of sound, rounded up.
    pub fn seconds(&self) -> f64 {
        f64::from(self.duration).ceil()
    }
}

#[derive(Clone)]
pub struct SoundPipeline {
    pub models: Arc<DiffusionModels>,
}

impl SoundPipeline {
    /// The embedded engine: the prompt's plan rendered.
    fn synthesize(r: &SoundRequest) -> Result<(Audio, Value), JobFailure> {
        let plan = sound::plan(&r.prompt)
            .map_err(|_| JobFailure::abort(ErrorCode::UnsupportedPrompt, "nothing to make"))?;
        let audio = sound::render(&plan, r.duration, r.seed, r.looped, r.sample_rate);
        let about = json!({
            "model": neural::EMBEDDED,
            "layers": plan.layers,
            "room": plan.room,
            "bpm": plan.bpm,
            "ignoredTerms": plan.ignored_terms,
        });
        Ok((audio, about))
    }

    /// A neural model at its own rate; a loop is made longer and its tail
    /// crossfaded over its head, as the embedded engine does.
    fn diffuse(
        &self,
        r: &SoundRequest,
        n: &Neural,
        ctx: &JobContext,
    ) -> Result<(Audio, Value), JobFailure> {
        let model = n.load(Medium::Sound, &self.models)?;
        let rate = model.sample_rate().unwrap_or(r.sample_rate);
        let samples = (f64::from(r.duration) * f64::from(rate)).round() as usize;
        let tail = if r.looped {
            sound::loop_tail(samples, rate as f32)
        } else {
            0
        };
        let req = n.request(&r.prompt, r.negative_prompt.as_deref(), r.seed);
        let (mut audio, timings) = model
            .sound(&req, samples + tail, &mut neural::progress(ctx, 0, 1))
            .map_err(neural::failure)?;
        sound::close_loop(&mut audio.samples, samples);
        let about = json!({
            "model": n.model,
            "steps": timings.steps,
            "guidanceScale": n.guidance_scale.unwrap_or(model.defaults.guidance_scale),
            "modelSampleRate": rate,
            "timings": timings,
        });
        Ok((audio, about))
    }
}

#[async_trait::async_trait]
impl Pipeline for SoundPipeline {
    fn kind(&self) -> &'static str {
        "sound"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: SoundRequest = ctx.payload()?;
        let (this, r, job) = (self.clone(), req.clone(), ctx.clone());
        let (bytes, about) = tokio::task::spawn_blocking(move || {
            let (audio, about) = match &r.neural {
                Some(n) => this.diffuse(&r, n, &job)?,
                None => Self::synthesize(&r)?,
            };
            let bytes = encode(&audio, r.format, r.sample_rate)
                .map_err(|e| JobFailure::retry(ErrorCode::EncodingFailed, e.to_string()))?;
            Ok::<_, JobFailure>((bytes, about))
        })
        .await
        .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        ctx.put_output(
            "/audioUrl",
            &format!("sound.{}", req.format.extension()),
            bytes.into(),
        )
        .await?;
        let mut result = json!({
            "duration": (f64::from(req.duration) * 1000.0).round() / 1000.0,
            "format": req.format.as_str(),
            "sampleRate": req.sample_rate,
            "seed": req.seed,
            "loop": req.looped,
        });
        crate::merge(&mut result, about);
        Ok(result)
    }
}
