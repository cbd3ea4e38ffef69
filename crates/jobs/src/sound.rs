//! A sound generation request (`POST /v1/sound-generation`, also the
//! `sound` job's payload).

use std::sync::LazyLock;

use mediagen_core::format::AudioFormat;
use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};

use crate::bounds::Bound;
use crate::catalog::{Generators, Medium};
use crate::neural::{Neural, NeuralBounds};

/// Shortest and longest sound, seconds (`duration`'s bounds in
/// [`SoundBody`]'s schema).
pub static SECONDS: LazyLock<Bound> = LazyLock::new(|| Bound::of::<SoundBody>("duration"));

/// The body of `POST /v1/sound-generation`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = SoundGenerationRequest)]
pub struct SoundBody {
    /// What to hear, 1–1000 characters: sources ("rain", "footsteps",
    /// "door knock", "piano melody"), modifiers ("distant", "heavy", "fast",
    /// "deep") and a tempo ("120 bpm"). See `GET /v1/sound-generation/vocabulary`.
    #[schema(min_length = 1, max_length = 1000, pattern = "\\S")]
    pub prompt: String,
    /// Seconds, 0.5–30. Omitted: chosen from the prompt (a beep 0.5 s, rain 8 s,
    /// music 12 s).
    #[serde(default)]
    #[schema(minimum = 0.5, maximum = 30.0)]
    pub duration: Option<f64>,
    /// `true`: the end flows into the start (a seamless loop).
    #[serde(default, rename = "loop")]
    pub looped: bool,
    /// The same prompt, seed and options give the same audio. Omitted: a random
    /// seed, returned in the result.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `mp3` (default), `wav`, `ogg` (Opus), `flac`, `pcm` (s16le mono),
    /// `aac` (ADTS).
    #[serde(default)]
    #[schema(schema_with = mediagen_core::schema::audio_format_schema)]
    pub format: Option<String>,
    /// Hz; default 44100 (48000 for ogg); with a neural model, its own rate
    /// (or the format's nearest above it).
    #[serde(default)]
    #[schema(schema_with = mediagen_core::schema::sample_rate_schema)]
    pub sample_rate: Option<u32>,
    /// `embedded` (default) or the name of a neural text-to-audio model
    /// under `models/sound/` (AudioLDM-shaped ONNX; listed by `GET
    /// /v1/models`). A neural model's default
    /// duration is 10 s. A model this server lacks: 422.
    #[serde(default)]
    #[schema(min_length = 1)]
    pub model: Option<String>,
    /// Neural models only (422 otherwise): denoising steps, 1–150.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 150)]
    pub steps: Option<u32>,
    /// Neural models only (422 otherwise): classifier-free guidance, 0–30.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 30.0)]
    pub guidance_scale: Option<f32>,
    /// Neural models only (422 otherwise): what to guide away from.
    #[serde(default)]
    pub negative_prompt: Option<String>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
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

impl mediagen_core::JobRequest for SoundRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::Sound;

    /// Seconds of sound asked, rounded up.
    fn units(&self) -> f64 {
        self.seconds()
    }

    /// The sound's length: what is made, not read, but the work grows
    /// with it.
    fn media_seconds(&self) -> f64 {
        f64::from(self.duration)
    }
}

/// Sample rate when none is asked (a neural model's own rate is used
/// instead when it names one).
const DEFAULT_RATE: u32 = 44_100;
/// Length a neural model makes when none is asked, seconds (AudioLDM's).
const NEURAL_SECONDS: f32 = 10.0;

impl SoundRequest {
    /// Validates a body; errors name the parameter, or (422
    /// `unsupported_prompt`, embedded engine) list what it understands.
    pub fn parse(body: SoundBody, catalog: &dyn Generators) -> Result<Self, ApiError> {
        let prompt = crate::prompt(&body.prompt, Bound::of::<SoundBody>("prompt").max_length())?;
        let (neural, on_disk) = Neural::parse(
            body.model,
            body.steps,
            body.guidance_scale,
            NeuralBounds::of::<SoundBody>(),
            Medium::Sound,
            catalog,
        )?
        .unzip();
        let (natural, native) = match &on_disk {
            Some(found) => (NEURAL_SECONDS, found.sample_rate.unwrap_or(DEFAULT_RATE)),
            None => (catalog.sound_seconds(&prompt)?, DEFAULT_RATE),
        };
        let duration = match body.duration {
            None => natural,
            Some(d) if (SECONDS.minimum()..=SECONDS.maximum()).contains(&d) => d as f32,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    format!(
                        "must be from {} to {} seconds, or omitted",
                        SECONDS.minimum(),
                        SECONDS.maximum()
                    ),
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
