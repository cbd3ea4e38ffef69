//! Neural latent-diffusion engines for images and sounds, run with ONNX
//! Runtime on user-supplied weights that live in the models directory
//! (`image/<name>/`, `sound/<name>/`; layout in docs/models.md):
//!
//! tokenizer ([`bpe`]) → text encoder → a denoising loop over seeded
//! Gaussian latents (the UNet, classifier-free guidance, the Euler
//! samplers of [`scheduler`]) → the VAE decoder → pixels, or for sound a
//! mel spectrogram → the vocoder → samples.
//!
//! Image models follow the layout of Stable Diffusion 1.x/2.x and SD-Turbo
//! exported to ONNX (Hugging Face Optimum's `ORTStableDiffusionPipeline`:
//! `text_encoder/`, `unet/`, `vae_decoder/`, `tokenizer/`, `scheduler/`).
//! Sound models follow AudioLDM's shape (a pooled text embedding given to
//! the UNet as `class_labels`, a mel VAE, a HiFi-GAN `vocoder/`). The
//! pipeline reads which inputs a model takes from the model itself.
//!
//! No weights ship with the project; [`tiny`] writes small random-weight
//! models of both kinds for tests and benchmarks.

pub mod scheduler;
pub mod tiny;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ort::session::{Session, SessionInputValue};
use ort::value::{Tensor, TensorElementType};
use serde::Serialize;

use mediagen_bpe::{self as bpe, Bpe};
use mediagen_core::rng::Rng;
use mediagen_media::audio::Audio;
use scheduler::{Euler, SchedulerConfig};

pub use mediagen_core::format::Medium;

#[derive(Debug, thiserror::Error)]
pub enum DiffusionError {
    #[error("no {medium} model named {name:?} (found: {found:?})")]
    NotFound {
        medium: &'static str,
        name: String,
        found: Vec<String>,
    },
    #[error("loading {0}: {1}")]
    Load(String, String),
    #[error("{0}")]
    Run(String),
    #[error("cancelled")]
    Cancelled,
}

fn run_error(e: impl std::fmt::Display) -> DiffusionError {
    DiffusionError::Run(e.to_string())
}

/// Steps and guidance when a request gives none (`mediagen.json` in the
/// model's folder may set them: SD-Turbo wants 1 step and no guidance).
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Defaults {
    pub steps: usize,
    pub guidance_scale: f32,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            steps: 25,
            guidance_scale: 7.5,
        }
    }
}

/// Time spent in each part of a generation, milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub text_encoder: f64,
    pub denoise: f64,
    pub steps: usize,
    /// Model evaluations per step: 2 with guidance, 1 without.
    pub evaluations_per_step: usize,
    pub per_step: f64,
    pub decode: f64,
}

/// A generation request, shared by both media.
#[derive(Debug, Clone)]
pub struct Generate<'a> {
    pub prompt: &'a str,
    pub negative_prompt: Option<&'a str>,
    pub steps: Option<usize>,
    pub guidance_scale: Option<f32>,
    pub seed: u64,
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    bpe::read_json(path).ok()
}

/// An ONNX session and the names and element types of its inputs.
struct Net {
    session: Mutex<Session>,
    inputs: Vec<(String, Option<TensorElementType>)>,
    outputs: Vec<String>,
}

type Inputs = Vec<(Cow<'static, str>, SessionInputValue<'static>)>;

/// A model output: its name, shape and values.
type Output = (String, Vec<i64>, Vec<f32>);

impl Net {
    fn load(path: &Path, models_dir: &Path, threads: usize) -> Result<Self, String> {
        let env = mediagen_onnx::environment(models_dir)?;
        let session = mediagen_onnx::session(env, path, threads)?;
        let inputs = session
            .inputs()
            .iter()
            .map(|i| (i.name().to_owned(), i.dtype().tensor_type()))
            .collect();
        let outputs = session
            .outputs()
            .iter()
            .map(|o| o.name().to_owned())
            .collect();
        Ok(Self {
            session: Mutex::new(session),
            inputs,
            outputs,
        })
    }

    /// The name of the first input (`default` for a model without inputs,
    /// which its run then reports).
    fn first_input(&self, default: &str) -> String {
        self.inputs
            .first()
            .map_or_else(|| default.to_owned(), |(n, _)| n.clone())
    }

    fn takes(&self, name: &str) -> bool {
        self.inputs.iter().any(|(n, _)| n == name)
    }

    fn input_type(&self, name: &str) -> Option<TensorElementType> {
        self.inputs
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, t)| *t)
    }

    /// Integer ids as the input's declared type (int32 or int64).
    fn ids(
        &self,
        name: &str,
        shape: Vec<i64>,
        ids: &[i64],
    ) -> Result<SessionInputValue<'static>, DiffusionError> {
        Ok(match self.input_type(name) {
            Some(TensorElementType::Int32) => {
                Tensor::from_array((shape, ids.iter().map(|&v| v as i32).collect::<Vec<_>>()))
                    .map_err(run_error)?
                    .into()
            }
            Some(TensorElementType::Float32) => {
                Tensor::from_array((shape, ids.iter().map(|&v| v as f32).collect::<Vec<_>>()))
                    .map_err(run_error)?
                    .into()
            }
            _ => Tensor::from_array((shape, ids.to_vec()))
                .map_err(run_error)?
                .into(),
        })
    }

    /// Runs and returns every output as (name, shape, values).
    fn run(&self, inputs: Inputs) -> Result<Vec<Output>, DiffusionError> {
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let stop = mediagen_onnx::Stoppable::here().map_err(run_error)?;
        let outputs = session
            .run_with_options(inputs, stop.options())
            .map_err(run_error)?;
        self.outputs
            .iter()
            .filter_map(|name| outputs.get(name.as_str()).map(|v| (name, v)))
            .map(|(name, v)| {
                let (shape, data) = v.try_extract_tensor::<f32>().map_err(run_error)?;
                Ok((name.clone(), shape.to_vec(), data.to_vec()))
            })
            .collect()
    }
}

fn floats(shape: Vec<i64>, data: Vec<f32>) -> Result<SessionInputValue<'static>, DiffusionError> {
    Ok(Tensor::from_array((shape, data)).map_err(run_error)?.into())
}

/// How the text conditions the UNet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conditioning {
    /// Every token's hidden state, cross-attended (`encoder_hidden_states`).
    Tokens,
    /// One pooled embedding (`class_labels`), as AudioLDM.
    Pooled,
}

/// What sound models add: the vocoder and its framing.
struct Vocoder {
    net: Net,
    sample_rate: u32,
    /// Samples per spectrogram frame.
    hop: usize,
    mel_bins: usize,
}

/// A loaded model.
pub struct DiffusionModel {
    pub name: String,
    pub medium: Medium,
    pub defaults: Defaults,
    tokenizer: Bpe,
    scheduler: SchedulerConfig,
    text_encoder: Net,
    unet: Net,
    decoder: Net,
    vocoder: Option<Vocoder>,
    conditioning: Conditioning,
    latent_channels: usize,
    /// Pixels (or spectrogram cells) per latent cell on each side.
    vae_scale: usize,
    scaling_factor: f32,
}

/// A generated picture: RGB, 8 bits a channel, row-major.
pub struct RgbImage {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl DiffusionModel {
    /// Loads the model in `dir` (its parts as laid out in docs/models.md).
    pub fn load(
        name: &str,
        medium: Medium,
        dir: &Path,
        models_dir: &Path,
        threads: usize,
    ) -> Result<Self, DiffusionError> {
        let fail = |e: String| DiffusionError::Load(name.to_owned(), e);
        let net = |part: &str| Net::load(&dir.join(part).join("model.onnx"), models_dir, threads);
        let tokenizer = Bpe::load(&dir.join("tokenizer")).map_err(fail)?;
        let scheduler: SchedulerConfig =
            match read_json(&dir.join("scheduler/scheduler_config.json")) {
                Some(v) => serde_json::from_value(v)
                    .map_err(|e| fail(format!("scheduler_config.json: {e}")))?,
                None => SchedulerConfig::default(),
            };
        let defaults: Defaults = read_json(&dir.join("mediagen.json"))
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        let text_encoder = net("text_encoder").map_err(fail)?;
        let unet = net("unet").map_err(fail)?;
        let decoder = net("vae_decoder").map_err(fail)?;
        let conditioning = if unet.takes("encoder_hidden_states") {
            Conditioning::Tokens
        } else if unet.takes("class_labels") {
            Conditioning::Pooled
        } else {
            return Err(fail(
                "the UNet takes neither encoder_hidden_states nor class_labels".into(),
            ));
        };
        for input in ["sample", "timestep"] {
            if !unet.takes(input) {
                return Err(fail(format!("the UNet has no input {input:?}")));
            }
        }
        let unet_config = read_json(&dir.join("unet/config.json")).unwrap_or_default();
        let vae_config = read_json(&dir.join("vae_decoder/config.json")).unwrap_or_default();
        let (default_channels, default_scale) = match medium {
            Medium::Image => (4, 8),
            Medium::Sound => (8, 4),
        };
        let latent_channels = unet_config["in_channels"]
            .as_u64()
            .or(vae_config["latent_channels"].as_u64())
            .unwrap_or(default_channels) as usize;
        let vae_scale = vae_config["block_out_channels"]
            .as_array()
            .map(|b| 1usize << b.len().saturating_sub(1))
            .unwrap_or(default_scale);
        let scaling_factor = vae_config["scaling_factor"].as_f64().unwrap_or(0.18215) as f32;
        let vocoder = match medium {
            Medium::Image => None,
            Medium::Sound => {
                let config = read_json(&dir.join("vocoder/config.json")).unwrap_or_default();
                let hop = config["upsample_rates"]
                    .as_array()
                    .map(|r| r.iter().filter_map(|v| v.as_u64()).product::<u64>())
                    .unwrap_or(160) as usize;
                Some(Vocoder {
                    net: net("vocoder").map_err(fail)?,
                    sample_rate: config["sampling_rate"].as_u64().unwrap_or(16_000) as u32,
                    hop: hop.max(1),
                    mel_bins: config["model_in_dim"].as_u64().unwrap_or(64) as usize,
                })
            }
        };
        Ok(Self {
            name: name.to_owned(),
            medium,
            defaults,
            tokenizer,
            scheduler,
            text_encoder,
            unet,
            decoder,
            vocoder,
            conditioning,
            latent_channels,
            vae_scale,
            scaling_factor,
        })
    }

    /// Output sample rate of a sound model.
    pub fn sample_rate(&self) -> Option<u32> {
        self.vocoder.as_ref().map(|v| v.sample_rate)
    }

    /// The text's conditioning tensor: (shape, values).
    fn encode_text(&self, text: &str) -> Result<(Vec<i64>, Vec<f32>), DiffusionError> {
        let (ids, mask) = self.tokenizer.encode(text);
        let shape = vec![1, ids.len() as i64];
        let mut inputs: Inputs = Vec::new();
        let id_input = self.text_encoder.first_input("input_ids");
        inputs.push((
            id_input.clone().into(),
            self.text_encoder.ids(&id_input, shape.clone(), &ids)?,
        ));
        if self.text_encoder.takes("attention_mask") {
            inputs.push((
                "attention_mask".into(),
                self.text_encoder.ids("attention_mask", shape, &mask)?,
            ));
        }
        let outputs = self.text_encoder.run(inputs)?;
        let (rank, preferred): (usize, &[&str]) = match self.conditioning {
            Conditioning::Tokens => (3, &["last_hidden_state"]),
            Conditioning::Pooled => (2, &["text_embeds", "pooler_output"]),
        };
        let pick = preferred
            .iter()
            .find_map(|p| outputs.iter().find(|(n, s, _)| n == p && s.len() == rank))
            .or_else(|| outputs.iter().find(|(_, s, _)| s.len() == rank))
            .ok_or_else(|| {
                DiffusionError::Run(format!("the text encoder has no output of rank {rank}"))
            })?;
        Ok((pick.1.clone(), pick.2.clone()))
    }

    /// The UNet's prediction for `sample` at step `i`.
    fn predict(
        &self,
        sample: &[f32],
        shape: &[i64],
        timestep: f64,
        cond: &(Vec<i64>, Vec<f32>),
    ) -> Result<Vec<f32>, DiffusionError> {
        let t = match self.unet.input_type("timestep") {
            Some(TensorElementType::Float32) => floats(vec![1], vec![timestep as f32])?,
            _ => self
                .unet
                .ids("timestep", vec![1], &[timestep.round() as i64])?,
        };
        let cond_name = match self.conditioning {
            Conditioning::Tokens => "encoder_hidden_states",
            Conditioning::Pooled => "class_labels",
        };
        let inputs: Inputs = vec![
            ("sample".into(), floats(shape.to_vec(), sample.to_vec())?),
            ("timestep".into(), t),
            (cond_name.into(), floats(cond.0.clone(), cond.1.clone())?),
        ];
        let mut out = self.unet.run(inputs)?;
        let (_, out_shape, values) = out.swap_remove(0);
        if out_shape != shape {
            return Err(DiffusionError::Run(format!(
                "the UNet returned shape {out_shape:?} for a sample of {shape:?}"
            )));
        }
        Ok(values)
    }

    /// The denoising loop: latents of `shape` from seeded noise.
    fn denoise(
        &self,
        req: &Generate,
        shape: [i64; 4],
        progress: &mut dyn FnMut(usize, usize) -> bool,
        timings: &mut Timings,
    ) -> Result<Vec<f32>, DiffusionError> {
        let steps = req.steps.unwrap_or(self.defaults.steps).max(1);
        let guidance = req.guidance_scale.unwrap_or(self.defaults.guidance_scale);
        let guided = guidance > 1.0 || req.negative_prompt.is_some_and(|n| !n.trim().is_empty());
        let started = Instant::now();
        let cond = self.encode_text(req.prompt)?;
        let uncond = if guided {
            Some(self.encode_text(req.negative_prompt.unwrap_or(""))?)
        } else {
            None
        };
        timings.text_encoder = ms(started);
        let euler = Euler::new(&self.scheduler, steps).map_err(DiffusionError::Run)?;
        let mut rng = Rng::new(req.seed);
        let n = shape.iter().product::<i64>() as usize;
        let mut latents: Vec<f32> = (0..n)
            .map(|_| rng.gauss() * euler.init_sigma as f32)
            .collect();
        let started = Instant::now();
        for (i, &t) in euler.timesteps.iter().enumerate() {
            let scale = euler.input_scale(i);
            let input: Vec<f32> = latents.iter().map(|x| x * scale).collect();
            let mut eps = self.predict(&input, &shape, t, &cond)?;
            if let Some(uncond) = &uncond {
                let base = self.predict(&input, &shape, t, uncond)?;
                for (e, u) in eps.iter_mut().zip(&base) {
                    *e = u + guidance * (*e - u);
                }
            }
            euler.step(i, &mut latents, &eps, &mut rng);
            if !progress(i + 1, euler.timesteps.len()) {
                return Err(DiffusionError::Cancelled);
            }
        }
        timings.denoise = ms(started);
        timings.steps = euler.timesteps.len();
        timings.evaluations_per_step = 1 + usize::from(uncond.is_some());
        timings.per_step = timings.denoise / timings.steps as f64;
        if latents.iter().any(|v| !v.is_finite()) {
            return Err(DiffusionError::Run(
                "the denoising loop diverged (non-finite latents)".into(),
            ));
        }
        let inv = 1.0 / self.scaling_factor;
        latents.iter_mut().for_each(|v| *v *= inv);
        Ok(latents)
    }

    /// The decoder's output for latents of `shape`: (shape, values).
    fn decode(
        &self,
        latents: Vec<f32>,
        shape: [i64; 4],
    ) -> Result<(Vec<i64>, Vec<f32>), DiffusionError> {
        let name = self.decoder.first_input("latent_sample");
        let mut out = self
            .decoder
            .run(vec![(name.into(), floats(shape.to_vec(), latents)?)])?;
        let (_, s, v) = out.swap_remove(0);
        Ok((s, v))
    }

    /// An image of `width` × `height` (multiples of the VAE's scale).
    pub fn image(
        &self,
        req: &Generate,
        width: u32,
        height: u32,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<(RgbImage, Timings), DiffusionError> {
        let scale = self.vae_scale as u32;
        if !width.is_multiple_of(scale) || !height.is_multiple_of(scale) {
            return Err(DiffusionError::Run(format!(
                "this model makes images in multiples of {scale} pixels"
            )));
        }
        let mut timings = Timings::default();
        let shape = [
            1,
            self.latent_channels as i64,
            i64::from(height / scale),
            i64::from(width / scale),
        ];
        let latents = self.denoise(req, shape, progress, &mut timings)?;
        let started = Instant::now();
        let (out_shape, pixels) = self.decode(latents, shape)?;
        if out_shape != [1, 3, i64::from(height), i64::from(width)] {
            return Err(DiffusionError::Run(format!(
                "the VAE decoder returned {out_shape:?} for a {width}×{height} image"
            )));
        }
        let plane = (width * height) as usize;
        let mut rgb = vec![0u8; plane * 3];
        for c in 0..3 {
            for (i, v) in pixels[c * plane..(c + 1) * plane].iter().enumerate() {
                rgb[i * 3 + c] = ((v / 2.0 + 0.5).clamp(0.0, 1.0) * 255.0).round() as u8;
            }
        }
        timings.decode = ms(started);
        Ok((RgbImage { width, height, rgb }, timings))
    }

    /// `samples` of sound at the vocoder's rate ([`Self::sample_rate`]).
    pub fn sound(
        &self,
        req: &Generate,
        samples: usize,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<(Audio, Timings), DiffusionError> {
        let vocoder = self
            .vocoder
            .as_ref()
            .ok_or_else(|| DiffusionError::Run(format!("{} is not a sound model", self.name)))?;
        let cell = self.vae_scale;
        let frames = samples.div_ceil(vocoder.hop).div_ceil(cell) * cell;
        let mut timings = Timings::default();
        let shape = [
            1,
            self.latent_channels as i64,
            (frames / cell) as i64,
            (vocoder.mel_bins / cell).max(1) as i64,
        ];
        let latents = self.denoise(req, shape, progress, &mut timings)?;
        let started = Instant::now();
        let (mel_shape, mel) = self.decode(latents, shape)?;
        // [1, 1, frames, bins] → the vocoder's [1, frames, bins].
        let dims: Vec<i64> = mel_shape.iter().copied().filter(|&d| d != 1).collect();
        let [f, b] = dims[..] else {
            return Err(DiffusionError::Run(format!(
                "the VAE decoder returned {mel_shape:?}, not a spectrogram"
            )));
        };
        let name = vocoder.net.first_input("spectrogram");
        let mut out = vocoder
            .net
            .run(vec![(name.into(), floats(vec![1, f, b], mel)?)])?;
        let (_, _, mut wave) = out.swap_remove(0);
        if wave.len() < samples {
            return Err(DiffusionError::Run(format!(
                "the vocoder made {} samples for {samples}",
                wave.len()
            )));
        }
        wave.truncate(samples);
        wave.iter_mut().for_each(|v| *v = v.clamp(-1.0, 1.0));
        timings.decode = ms(started);
        Ok((Audio::new(wave, vocoder.sample_rate), timings))
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// What the models directory holds, loaded on first use.
pub struct DiffusionModels {
    models_dir: PathBuf,
    threads: usize,
    loaded: Mutex<HashMap<(Medium, String), Arc<DiffusionModel>>>,
}

/// A model found on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub name: String,
    pub medium: Medium,
    pub dir: PathBuf,
}

impl Found {
    /// The output rate a sound model's vocoder declares, without loading it.
    pub fn sample_rate(&self) -> Option<u32> {
        let config = read_json(&self.dir.join("vocoder/config.json"))?;
        config["sampling_rate"].as_u64().map(|r| r as u32)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl DiffusionModels {
    pub fn new(models_dir: &Path, threads: usize) -> Self {
        Self {
            models_dir: models_dir.to_owned(),
            threads,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Models of `medium` on disk now: folders with a `unet/model.onnx`.
    pub fn found(&self, medium: Medium) -> Vec<Found> {
        let root = self.models_dir.join(medium.folder());
        let mut out: Vec<Found> = std::fs::read_dir(&root)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_owned();
                (valid_name(&name) && e.path().join("unet/model.onnx").is_file()).then(|| Found {
                    name,
                    medium,
                    dir: e.path(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The model `name` of `medium` on disk, or `NotFound` listing what is.
    pub fn find(&self, medium: Medium, name: &str) -> Result<Found, DiffusionError> {
        let mut found = self.found(medium);
        match found.iter().position(|f| f.name == name) {
            Some(i) => Ok(found.swap_remove(i)),
            None => Err(DiffusionError::NotFound {
                medium: medium.folder(),
                name: name.to_owned(),
                found: found.into_iter().map(|f| f.name).collect(),
            }),
        }
    }

    /// The model `name` of `medium`, loaded once (a blocking call).
    pub fn get(&self, medium: Medium, name: &str) -> Result<Arc<DiffusionModel>, DiffusionError> {
        let key = (medium, name.to_owned());
        if let Some(m) = self
            .loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(m.clone());
        }
        let f = self.find(medium, name)?;
        let model = Arc::new(DiffusionModel::load(
            name,
            medium,
            &f.dir,
            &self.models_dir,
            self.threads,
        )?);
        tracing::info!(
            model = name,
            medium = medium.folder(),
            "diffusion model loaded"
        );
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, model.clone());
        Ok(model)
    }
}
