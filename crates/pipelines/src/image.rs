//! `image`: a text prompt → a composed scene (the embedded engine of
//! `mediagen_generate::image`) or a neural model's picture
//! (`mediagen_generate::diffusion`) → PNG, JPEG or WebP images in the blob
//! store.

use std::sync::Arc;

use crate::neural::NeuralRun;
use mediagen_core::ErrorCode;
use mediagen_generate::diffusion::{DiffusionModels, Medium};
use mediagen_generate::image::icons::Icons;
use mediagen_generate::image::scene::{self, Scene, Style};
use mediagen_generate::image::{render, ImageFormat, Picture};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

use crate::neural::{self, Neural};

pub use mediagen_jobs::image::*;

/// The embedded engine's scene for `prompt` without what `negative` names.
pub fn scene_of(
    prompt: &str,
    negative: Option<&str>,
    icons: &Icons,
    style: Option<Style>,
) -> Scene {
    let scene = scene::parse(prompt, icons, style);
    match negative {
        Some(negative) => {
            let unwanted = scene::parse(negative, icons, None);
            let names: Vec<&str> = unwanted
                .objects
                .iter()
                .map(|o| o.icon.name.as_str())
                .collect();
            scene.without(&names)
        }
        None => scene,
    }
}

#[derive(Clone)]
pub struct ImagePipeline {
    /// The embedded engine's icons (`None` when not installed).
    pub icons: Option<Arc<Icons>>,
    pub models: Arc<DiffusionModels>,
}

/// One made image: its seed, encoded bytes and per-engine details.
struct Made {
    seed: u64,
    bytes: Vec<u8>,
    details: Value,
}

impl ImagePipeline {
    /// The embedded engine: the scene drawn once per seed.
    fn compose(&self, r: &ImageRequest) -> Result<(Vec<Made>, Value), JobFailure> {
        let icons = self.icons.as_ref().ok_or_else(|| {
            JobFailure::abort(
                ErrorCode::EngineUnavailable,
                "the icon set is not installed",
            )
        })?;
        let scene = scene_of(
            &r.prompt,
            r.negative_prompt.as_deref(),
            icons,
            r.style.as_deref().and_then(Style::parse),
        );
        let made = (0..u64::from(r.n))
            .map(|i| {
                let seed = r.seed.wrapping_add(i);
                let picture = render(&scene, r.width, r.height, seed)
                    .map_err(|e| JobFailure::abort(ErrorCode::RenderFailed, e.to_string()))?;
                Ok(Made {
                    seed,
                    bytes: encode(&picture, r.format)?,
                    details: json!({
                        "objects": picture.placed,
                        "relations": picture.relations,
                        "groundLine": picture.ground_line,
                    }),
                })
            })
            .collect::<Result<Vec<_>, JobFailure>>()?;
        let about = json!({
            "model": neural::EMBEDDED,
            "setting": scene.setting,
            "timeOfDay": scene.time,
            "style": scene.style,
            "ignoredTerms": scene.ignored,
            "adjustments": scene.adjustments,
            "attribution": "Objects drawn from Twemoji (https://github.com/jdecked/twemoji), \
                            graphics licensed under CC-BY 4.0.",
        });
        Ok((made, about))
    }

    /// A neural model: one denoising run per seed. A `style` is added to
    /// the prompt in words.
    fn diffuse(
        &self,
        r: &ImageRequest,
        n: &Neural,
        ctx: &JobContext,
    ) -> Result<(Vec<Made>, Value), JobFailure> {
        let model = n.load(Medium::Image, &self.models)?;
        let prompt = match &r.style {
            Some(style) => format!("{}, {style} style", r.prompt),
            None => r.prompt.clone(),
        };
        let parts = r.n as usize;
        let made = (0..parts)
            .map(|i| {
                let seed = r.seed.wrapping_add(i as u64);
                let req = n.request(&prompt, r.negative_prompt.as_deref(), seed);
                let (image, timings) = model
                    .image(
                        &req,
                        r.width,
                        r.height,
                        &mut neural::progress(ctx, i, parts),
                    )
                    .map_err(neural::failure)?;
                let picture = Picture::from_rgb(image.width, image.height, &image.rgb)
                    .map_err(|e| JobFailure::abort(ErrorCode::EncodingFailed, e.to_string()))?;
                Ok(Made {
                    seed,
                    bytes: encode(&picture, r.format)?,
                    details: json!({"timings": timings}),
                })
            })
            .collect::<Result<Vec<_>, JobFailure>>()?;
        let about = json!({
            "model": n.model,
            "steps": n.steps.map_or(model.defaults.steps, |s| s as usize),
            "guidanceScale": n.guidance_scale.unwrap_or(model.defaults.guidance_scale),
        });
        Ok((made, about))
    }
}

fn encode(picture: &Picture, format: ImageFormat) -> Result<Vec<u8>, JobFailure> {
    picture
        .encode(format)
        .map_err(|e| JobFailure::abort(ErrorCode::EncodingFailed, e.to_string()))
}

#[async_trait::async_trait]
impl RequestPipeline for ImagePipeline {
    type Request = ImageRequest;

    async fn work(&self, ctx: JobContext, req: ImageRequest) -> Result<Value, JobFailure> {
        let this = self.clone();
        let (r, job) = (req.clone(), ctx.clone());
        let (made, about) = ctx
            .blocking(move || match &r.neural {
                Some(n) => this.diffuse(&r, n, &job),
                None => this.compose(&r),
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        let mut out = Vec::new();
        for (i, m) in made.into_iter().enumerate() {
            let size = m.bytes.len() as u64;
            let key = ctx
                .put_output(
                    &format!("/images/{i}/imageUrl"),
                    &format!("image-{i}.{}", req.format.extension()),
                    m.bytes.into(),
                )
                .await?;
            if i == 0 {
                // The first image's URL is also the result's own `imageUrl`.
                ctx.register_output("/imageUrl", &key, size);
            }
            let mut image = json!({
                "width": req.width,
                "height": req.height,
                "seed": m.seed,
            });
            crate::merge(&mut image, m.details);
            out.push(image);
        }
        let mut result = json!({
            "images": out,
            "format": req.format,
            "contentType": req.format.content_type(),
        });
        crate::merge(&mut result, about);
        Ok(result)
    }
}
