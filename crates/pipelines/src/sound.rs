//! `sound`: a text prompt → a sound plan → synthesized, mixed audio (the
//! embedded engine of `mediagen_generate::sound`), or a neural model's sound
//! (`mediagen_generate::diffusion`) → the blob store.

use std::sync::Arc;

use crate::neural::NeuralRun;
use mediagen_core::ErrorCode;
use mediagen_generate::diffusion::{DiffusionModels, Medium};
use mediagen_generate::sound::{self};
use mediagen_media::media::encode;
use mediagen_media::Audio;
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

use crate::neural::{self, Neural};

pub use mediagen_jobs::sound::*;

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
impl RequestPipeline for SoundPipeline {
    type Request = SoundRequest;

    async fn work(&self, ctx: JobContext, req: SoundRequest) -> Result<Value, JobFailure> {
        let (this, r, job) = (self.clone(), req.clone(), ctx.clone());
        let (bytes, about) = ctx
            .blocking(move || {
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
