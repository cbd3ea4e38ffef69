//! `POST /v1/images/generations`: OpenAI's body validated by OpenAI's
//! rules for the model it names and mapped to an image generation request
//! ([`ImageBody`]); OpenAI's model names draw with the embedded engine.

use mediagen_core::ApiError;
use serde::Deserialize;

use super::openai_names;
use crate::catalog::Generators;
use crate::image::{ImageBody, ImageRequest};

/// OpenAI's image models and the sizes each takes (`auto` is 1024×1024).
pub const MODELS: [(&str, &[&str]); 3] = [
    ("dall-e-2", &["256x256", "512x512", "1024x1024"]),
    ("dall-e-3", &["1024x1024", "1792x1024", "1024x1792"]),
    (
        "gpt-image-1",
        &["auto", "1024x1024", "1536x1024", "1024x1536"],
    ),
];

/// `response_format` values (`gpt-image-1` always answers `b64_json`).
pub const RESPONSE_FORMATS: [&str; 2] = ["url", "b64_json"];

/// `output_format` values (`gpt-image-1` only; the others make PNG).
pub const OUTPUT_FORMATS: [&str; 3] = ["png", "jpeg", "webp"];

/// Our image parameters and OpenAI's names for them.
const NAMES: [(&str, &str); 3] = [
    ("width", "size"),
    ("height", "size"),
    ("format", "output_format"),
];

/// The body of `POST /v1/images/generations`, as OpenAI documents it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OpenAiImageRequest)]
pub struct ImagesBody {
    /// What to draw, as for `POST /v1/image-generation` (at most 1000
    /// characters).
    #[schema(min_length = 1, max_length = 1000, pattern = "\\S")]
    pub prompt: String,
    /// `dall-e-2` (default), `dall-e-3`, `gpt-image-1`: the embedded
    /// engine draws for each. Our own image models (`GET /v1/models`) too.
    #[serde(default)]
    #[schema(min_length = 1)]
    pub model: Option<String>,
    /// Images, 1–4 (OpenAI: 1–10); `dall-e-3` takes 1 only.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 4)]
    pub n: Option<u32>,
    /// For `dall-e-2` 256x256, 512x512, 1024x1024 (default); for `dall-e-3`
    /// 1024x1024, 1792x1024, 1024x1792; for `gpt-image-1` `auto`
    /// (1024x1024), 1024x1024, 1536x1024, 1024x1536 (another size for the
    /// model: 400, as OpenAI answers). Our own models also take any
    /// `WIDTHxHEIGHT` whose sides are multiples of 8 from 64 to 2048.
    #[serde(default)]
    #[schema(schema_with = sizes)]
    pub size: Option<String>,
    /// `url` (default) or `b64_json`; not taken with `gpt-image-1`, which
    /// answers `b64_json`.
    #[serde(default)]
    #[schema(schema_with = response_formats)]
    pub response_format: Option<String>,
    /// `png` (default), `jpeg`, `webp`: `gpt-image-1` and our models only.
    #[serde(default)]
    #[schema(schema_with = output_formats)]
    pub output_format: Option<String>,
    /// Taken and ignored, like `style`, `background`, `moderation`,
    /// `output_compression` and `user` (named in `X-Mediagen-Ignored`).
    #[serde(default)]
    pub quality: Option<String>,
    #[serde(default)]
    pub style: Option<String>,
    #[serde(default)]
    pub background: Option<String>,
    #[serde(default)]
    pub moderation: Option<String>,
    #[serde(default)]
    pub output_compression: Option<u32>,
    #[serde(default)]
    pub user: Option<String>,
}

/// Every size some model takes, for the document.
fn sizes() -> utoipa::openapi::schema::Object {
    let mut sizes: Vec<&str> = MODELS.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    sizes.sort_unstable();
    sizes.dedup();
    mediagen_core::schema::one_of_strings(&sizes)
}

/// The response formats, for the document.
fn response_formats() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&RESPONSE_FORMATS)
}

/// The output formats, for the document.
fn output_formats() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&OUTPUT_FORMATS)
}

/// A validated request, and how to answer it.
#[derive(Debug)]
pub struct Images {
    pub request: ImageRequest,
    /// Answer with the images' bytes (`b64_json`) rather than URLs.
    pub b64: bool,
    /// Parameters taken and ignored, for a header.
    pub ignored: Vec<&'static str>,
}

impl ImagesBody {
    /// Validates what is OpenAI's own (model, size for it, `n` for
    /// `dall-e-3`, response format) and maps the rest to our body, checked
    /// as `POST /v1/image-generation` checks it. A value another field
    /// rules out (a size or `n` the model does not take) is 422, as every
    /// rule joining two fields here (OpenAI answers 400).
    pub fn parse(self, catalog: &dyn Generators) -> Result<Images, ApiError> {
        let model = self.model.as_deref().unwrap_or("dall-e-2");
        let openai = MODELS.iter().find(|(name, _)| *name == model);
        let size = self.size.as_deref().unwrap_or("1024x1024");
        let (width, height) = match openai {
            Some((name, sizes)) if !sizes.contains(&size) => {
                return Err(ApiError::unprocessable(
                    "size",
                    format!("must be one of {} for {name}", sizes.join(", ")),
                ))
            }
            _ if size == "auto" => (1024, 1024),
            _ => dimensions(size)?,
        };
        if model == "dall-e-3" && self.n.is_some_and(|n| n != 1) {
            return Err(ApiError::unprocessable("n", "must be 1 for dall-e-3"));
        }
        let image_model = model == "gpt-image-1";
        let b64 = match self.response_format.as_deref() {
            Some(_) if image_model => {
                return Err(ApiError::unprocessable(
                    "response_format",
                    "is not taken by gpt-image-1, which answers b64_json",
                ))
            }
            None | Some("url") => image_model,
            Some("b64_json") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "response_format",
                    format!("must be one of {}", RESPONSE_FORMATS.join(", ")),
                ))
            }
        };
        if self.output_format.is_some() && !image_model && openai.is_some() {
            return Err(ApiError::unprocessable(
                "output_format",
                "is taken by gpt-image-1 and our own models only",
            ));
        }
        let mut ignored = Vec::new();
        let taken = [
            ("quality", self.quality.is_some()),
            ("style", self.style.is_some()),
            ("background", self.background.is_some()),
            ("moderation", self.moderation.is_some()),
            ("output_compression", self.output_compression.is_some()),
            ("user", self.user.is_some()),
        ];
        ignored.extend(taken.iter().filter(|(_, set)| *set).map(|(name, _)| *name));
        let body = ImageBody {
            prompt: self.prompt,
            width: Some(width),
            height: Some(height),
            n: self.n,
            seed: None,
            style: None,
            negative_prompt: None,
            format: self.output_format,
            model: openai.is_none().then(|| model.to_owned()),
            steps: None,
            guidance_scale: None,
            job: Default::default(),
        };
        let request = ImageRequest::parse(body, catalog).map_err(|e| openai_names(e, &NAMES))?;
        Ok(Images {
            request,
            b64,
            ignored,
        })
    }
}

/// `WIDTHxHEIGHT` in pixels (checked against our limits after).
fn dimensions(size: &str) -> Result<(u32, u32), ApiError> {
    let bad = || ApiError::invalid_parameter("size", "must be WIDTHxHEIGHT in pixels, or auto");
    let (w, h) = size.split_once('x').ok_or_else(bad)?;
    Ok((w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_pixels() {
        assert_eq!(dimensions("1792x1024").unwrap(), (1792, 1024));
        for bad in ["1024", "x1024", "10x", "ax b", "1024X1024"] {
            assert_eq!(
                dimensions(bad).unwrap_err().details["parameter"],
                "size",
                "{bad}"
            );
        }
    }

    #[test]
    fn every_openai_size_is_within_our_limits() {
        for (_, sizes) in MODELS {
            for size in sizes.iter().filter(|s| **s != "auto") {
                let (w, h) = dimensions(size).unwrap();
                let bound = crate::bounds::Bound::of::<crate::image::ImageBody>("width");
                for side in [w, h] {
                    assert!(bound.counts(side), "{size}");
                }
            }
        }
    }
}
