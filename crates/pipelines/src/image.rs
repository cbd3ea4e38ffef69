//! `image`: a text prompt → a composed scene → PNG, JPEG or WebP images in
//! the blob store (the embedded engine of `mediagen_engines::image`).

use std::sync::Arc;

use mediagen_core::{ApiError, ErrorCode};
use mediagen_engines::image::icons::Icons;
use mediagen_engines::image::scene::{self, Scene, Style};
use mediagen_engines::image::{render, ImageFormat};
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Longest prompt, characters.
pub const MAX_PROMPT: usize = 1000;
/// Canvas sides, pixels.
pub const MIN_SIDE: u32 = 64;
pub const MAX_SIDE: u32 = 2048;
pub const MAX_IMAGES: u32 = 4;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageBody {
    pub prompt: String,
    #[serde(default)]
    pub width: Option<u32>,
    #[serde(default)]
    pub height: Option<u32>,
    #[serde(default)]
    pub n: Option<u32>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub style: Option<String>,
    #[serde(default)]
    pub negative_prompt: Option<String>,
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
}

/// A validated request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageRequest {
    pub prompt: String,
    pub width: u32,
    pub height: u32,
    pub n: u32,
    pub seed: u64,
    pub style: Option<String>,
    pub negative_prompt: Option<String>,
    pub format: ImageFormat,
}

fn side(name: &str, v: Option<u32>) -> Result<u32, ApiError> {
    let v = v.unwrap_or(1024);
    if (MIN_SIDE..=MAX_SIDE).contains(&v) && v.is_multiple_of(8) {
        Ok(v)
    } else {
        Err(ApiError::invalid_parameter(
            name,
            format!("must be a multiple of 8 from {MIN_SIDE} to {MAX_SIDE} (got {v})"),
        ))
    }
}

impl ImageRequest {
    /// Validates a body and reads its scene; errors name the parameter, or
    /// (422 `unsupported_prompt`) say the prompt names nothing drawable.
    pub fn parse(body: ImageBody, icons: &Icons) -> Result<(Self, Scene), ApiError> {
        let prompt = crate::prompt(&body.prompt, MAX_PROMPT)?;
        let (width, height) = (side("width", body.width)?, side("height", body.height)?);
        let n = body.n.unwrap_or(1);
        if !(1..=MAX_IMAGES).contains(&n) {
            return Err(ApiError::invalid_parameter(
                "n",
                format!("must be 1 to {MAX_IMAGES}"),
            ));
        }
        let style = match body.style.as_deref() {
            None => None,
            Some(s) => Some(Style::parse(s).ok_or_else(|| {
                ApiError::invalid_parameter("style", "must be one of flat, watercolor, pixel")
            })?),
        };
        let format = match body.format.as_deref() {
            None => ImageFormat::Png,
            Some(f) => ImageFormat::parse(f).ok_or_else(|| {
                ApiError::invalid_parameter("format", "must be one of png, jpeg, webp")
            })?,
        };
        let req = Self {
            prompt,
            width,
            height,
            n,
            seed: body.seed.unwrap_or_else(|| rand::random::<u32>().into()),
            style: body.style,
            negative_prompt: body.negative_prompt,
            format,
        };
        let scene = req.scene(icons, style);
        if scene.objects.is_empty() && !scene.described {
            return Err(ApiError::new(ErrorCode::UnsupportedPrompt)
                .with_message(
                    "Nothing in the prompt names something this engine can draw: objects (any \
                     emoji name or keyword: cat, hat, tree, car, robot…), a setting (beach, \
                     forest, city, snow, desert, room, sky, mountains, meadow) or a time of day \
                     (day, sunset, night).",
                )
                .with_detail("parameter", "prompt")
                .with_detail("ignoredTerms", scene.ignored));
        }
        Ok((req, scene))
    }

    /// The prompt's scene without what the negative prompt names.
    fn scene(&self, icons: &Icons, style: Option<Style>) -> Scene {
        let mut scene = scene::parse(&self.prompt, icons, style);
        if let Some(negative) = &self.negative_prompt {
            let unwanted = scene::parse(negative, icons, None);
            let names: Vec<&str> = unwanted
                .objects
                .iter()
                .map(|o| o.icon.name.as_str())
                .collect();
            let keep: Vec<bool> = scene
                .objects
                .iter()
                .map(|o| !names.contains(&o.icon.name.as_str()))
                .collect();
            // Anchors point at indices: re-point them after removal.
            let new_index: Vec<Option<usize>> = keep
                .iter()
                .scan(0, |next, &k| {
                    let i = k.then_some(*next);
                    *next += usize::from(k);
                    Some(i)
                })
                .collect();
            scene.objects = scene
                .objects
                .drain(..)
                .zip(&keep)
                .filter(|(_, &k)| k)
                .map(|(mut o, _)| {
                    o.anchor = o.anchor.and_then(|(r, j)| Some((r, new_index[j]?)));
                    o
                })
                .collect();
        }
        scene
    }
}

pub struct ImagePipeline {
    pub icons: Arc<Icons>,
}

#[async_trait::async_trait]
impl Pipeline for ImagePipeline {
    fn kind(&self) -> &'static str {
        "image"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: ImageRequest = ctx.payload()?;
        let icons = self.icons.clone();
        let r = req.clone();
        let (scene, images) = tokio::task::spawn_blocking(move || {
            let style = r.style.as_deref().and_then(Style::parse);
            let scene = r.scene(&icons, style);
            let images = (0..u64::from(r.n))
                .map(|i| {
                    let seed = r.seed.wrapping_add(i);
                    let picture = render(&scene, r.width, r.height, seed)
                        .map_err(|e| JobFailure::abort("render_failed", e.to_string()))?;
                    let bytes = picture
                        .encode(r.format)
                        .map_err(|e| JobFailure::abort("encoding_failed", e.to_string()))?;
                    Ok((seed, bytes, picture.placed))
                })
                .collect::<Result<Vec<_>, JobFailure>>()?;
            Ok::<_, JobFailure>((scene, images))
        })
        .await
        .map_err(|e| JobFailure::abort("internal_error", e.to_string()))??;
        let mut out = Vec::new();
        for (i, (seed, bytes, placed)) in images.into_iter().enumerate() {
            let key = ctx.output_key(&format!("image-{i}.{}", req.format.extension()));
            ctx.blobs
                .put(&key, bytes.into())
                .await
                .map_err(|e| JobFailure::retry("storage_error", e.to_string()))?;
            out.push(json!({
                "imageUrl": format!("blob:{key}"),
                "width": req.width,
                "height": req.height,
                "seed": seed,
                "objects": placed,
            }));
        }
        Ok(json!({
            "imageUrl": out.first().map(|i| i["imageUrl"].clone()),
            "images": out,
            "format": req.format,
            "contentType": req.format.content_type(),
            "setting": scene.setting,
            "timeOfDay": scene.time,
            "style": scene.style,
            "ignoredTerms": scene.ignored,
            "attribution": "Objects drawn from Twemoji (https://github.com/jdecked/twemoji), \
                            graphics licensed under CC-BY 4.0.",
        }))
    }
}
