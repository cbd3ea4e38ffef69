//! What the API asks of the engines installed, without loading a model:
//! the voices, recognisers and neural models there are, the built-in
//! avatars, dubbing's language pairs, and the embedded generators' reading
//! of a prompt (which prices a sound and refuses what cannot be drawn).
//!
//! `mediagen-pipelines` implements each part of [`Catalog`] over the
//! engines; the HTTP layer holds the [`Catalog`] and never imports an
//! engine crate.

pub use mediagen_core::format::Medium;
use mediagen_core::voice::VoiceInfo;
use mediagen_core::{ApiError, Capability, JobKind};
use serde::Serialize;
use std::sync::Arc;

use crate::dub::DubLanguages;

/// A speech recogniser as requests pick it (`model`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recogniser {
    pub name: String,
    /// Hears every language it knows, not English only.
    pub multilingual: bool,
}

/// One engine or model as `GET /v1/models` lists it (whether a worker runs
/// it is the API's to add).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStatus {
    pub engine: String,
    /// The name requests pick it by, where they do.
    pub name: Option<String>,
    /// The capability its engine serves.
    pub kind: Capability,
    pub available: bool,
    /// Voices it offers (text-to-speech).
    pub voices: usize,
    /// Where it loaded from, or why it is missing.
    pub detail: String,
    /// The job kinds that run on it (a model has a live worker when some
    /// worker claims one of them).
    pub job_kinds: Vec<JobKind>,
}

/// A neural model on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeuralModel {
    pub name: String,
    /// The rate it makes sound at, where its configuration says.
    pub sample_rate: Option<u32>,
}

/// A built-in presenter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AvatarLook {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub gender: &'static str,
    pub labels: &'static [&'static str],
}

/// The picture every built-in avatar's clip has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvatarClip {
    /// Width and height, pixels.
    pub size: u32,
    pub seconds: u32,
    pub fps: u32,
}

/// The text-to-speech voices installed (every request that names a voice).
pub trait Voices: Send + Sync {
    /// Every text-to-speech voice.
    fn voices(&self) -> &[VoiceInfo];

    /// The voice `id`, if the catalog has it.
    fn voice(&self, id: &str) -> Option<&VoiceInfo> {
        self.voices().iter().find(|v| v.id == id)
    }
}

/// The speech recognisers installed (every request that transcribes).
pub trait Recognisers: Send + Sync {
    /// The speech recognisers, the default first (none when none is
    /// installed).
    fn recognisers(&self) -> Vec<Recogniser>;

    /// The ISO 639-1 codes the recognisers know.
    fn recognised_languages(&self) -> Vec<&'static str>;

    /// The English name of a recognised language, lower case (`german`
    /// for `de`), as OpenAI's transcriptions report it.
    fn language_name(&self, code: &str) -> Option<&'static str>;
}

/// The image and sound generators installed: the neural models on disk,
/// and the embedded engines' reading of a prompt.
pub trait Generators: Send + Sync {
    /// The neural models of `medium` on disk now.
    fn neural_models(&self, medium: Medium) -> Vec<NeuralModel>;

    /// How long the embedded sound engine makes `prompt` when no duration
    /// is asked, seconds; or 422 `unsupported_prompt` listing what it
    /// understands.
    fn sound_seconds(&self, prompt: &str) -> Result<f32, ApiError>;

    /// The embedded sound engine's vocabulary
    /// (`GET /v1/sound-generation/vocabulary`).
    fn sound_vocabulary(&self) -> serde_json::Value;

    /// Whether the embedded image engine can draw `prompt` in `style` (less
    /// what `negative` names): 503 when its icon set is missing, 422
    /// `unsupported_prompt` when the prompt names nothing it can draw.
    fn check_image_prompt(
        &self,
        prompt: &str,
        negative: Option<&str>,
        style: Option<&str>,
    ) -> Result<(), ApiError>;
}

/// The language pairs dubbing can do (its recogniser, translators and
/// voices).
pub trait Translation: Send + Sync {
    fn dubbing(&self) -> &DubLanguages;
}

/// The built-in avatars.
pub trait Avatars: Send + Sync {
    /// Every built-in avatar (rendered or not).
    fn avatars(&self) -> Vec<AvatarLook>;

    /// The built-in avatars' clip format.
    fn avatar_clip(&self) -> AvatarClip;
}

/// Every engine and model, as `GET /v1/models` lists them.
pub trait ModelList: Send + Sync {
    fn models(&self) -> Vec<ModelStatus>;
}

/// The engines installed, as requests are checked against them: one trait
/// per question a request asks, so that a check takes only the one it
/// needs (and a test fakes only that). Answers are cheap: nothing here
/// loads a model or decodes media.
#[derive(Clone)]
pub struct Catalog {
    pub voices: Arc<dyn Voices>,
    pub recognisers: Arc<dyn Recognisers>,
    pub generators: Arc<dyn Generators>,
    pub translation: Arc<dyn Translation>,
    pub avatars: Arc<dyn Avatars>,
    pub models: Arc<dyn ModelList>,
}

impl Catalog {
    /// The catalog answered by one value that knows every part.
    pub fn of<T>(all: Arc<T>) -> Self
    where
        T: Voices + Recognisers + Generators + Translation + Avatars + ModelList + 'static,
    {
        Self {
            voices: all.clone(),
            recognisers: all.clone(),
            generators: all.clone(),
            translation: all.clone(),
            avatars: all.clone(),
            models: all,
        }
    }
}

/// The voice a compatibility API's named voice stands for: the Kokoro
/// voice `kokoro_key` of matching character, or where Kokoro is not
/// installed the first English voice of `gender`.
pub fn stand_in<'a>(
    catalog: &'a dyn Voices,
    kokoro_key: &str,
    gender: &str,
) -> Option<&'a VoiceInfo> {
    let voices = catalog.voices();
    voices
        .iter()
        .find(|v| v.engine == "kokoro" && v.key == kokoro_key)
        .or_else(|| {
            voices
                .iter()
                .find(|v| v.language.starts_with("en") && v.gender == gender)
        })
}
