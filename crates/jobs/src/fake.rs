//! A catalog of a few lines per part, for unit tests of the checks that
//! read it: two voices, two recognisers, a sound and an image engine that
//! know a word or two, one neural image model, one dubbing pair, no avatar.

use std::sync::Arc;

use mediagen_core::voice::VoiceInfo;
use mediagen_core::{ApiError, Capability, ErrorCode};

use crate::catalog::{
    AvatarClip, AvatarLook, Avatars, Catalog, Generators, Medium, ModelList, ModelStatus,
    NeuralModel, Recogniser, Recognisers, Translation, Voices,
};
use crate::dub::{DubLanguages, Pair, Via};

/// The fake engines; [`catalog`] gathers them.
pub struct Fake {
    voices: Vec<VoiceInfo>,
    dubbing: DubLanguages,
}

/// The id of the fake English voice (Kokoro's `af_heart`, 24 kHz).
pub const ENGLISH: &str = "vEnglish000000000000";
/// The id of the fake Spanish voice (Piper, 22.05 kHz).
pub const SPANISH: &str = "vSpanish000000000000";

fn voice(id: &str, key: &str, language: &str, engine: &'static str, rate: u32) -> VoiceInfo {
    VoiceInfo {
        id: id.into(),
        key: key.into(),
        name: key.into(),
        language: language.into(),
        languages: vec![language.into()],
        gender: "female".into(),
        accent: None,
        engine,
        quality: "high",
        sample_rate: rate,
        description: String::new(),
        espeak_voice: language.into(),
    }
}

/// Every part answered by [`Fake`].
pub fn catalog() -> Catalog {
    Catalog::of(Arc::new(Fake {
        voices: vec![
            voice(ENGLISH, "af_heart", "en-US", "kokoro", 24_000),
            voice(SPANISH, "es_ES-davefx", "es-ES", "piper", 22_050),
        ],
        dubbing: DubLanguages {
            pairs: vec![Pair {
                source: "en".into(),
                target: "es".into(),
                translator: Via::Apertium,
            }],
        },
    }))
}

impl Voices for Fake {
    fn voices(&self) -> &[VoiceInfo] {
        &self.voices
    }
}

impl Recognisers for Fake {
    fn recognisers(&self) -> Vec<Recogniser> {
        let named = |name: &str, multilingual| Recogniser {
            name: name.into(),
            multilingual,
        };
        vec![named("base", true), named("tiny.en", false)]
    }

    fn recognised_languages(&self) -> Vec<&'static str> {
        vec!["en", "es", "de"]
    }

    fn language_name(&self, code: &str) -> Option<&'static str> {
        match code {
            "en" => Some("english"),
            "es" => Some("spanish"),
            "de" => Some("german"),
            _ => None,
        }
    }
}

impl Generators for Fake {
    fn neural_models(&self, medium: Medium) -> Vec<NeuralModel> {
        match medium {
            Medium::Image => vec![NeuralModel {
                name: "tiny-sd".into(),
                sample_rate: None,
            }],
            Medium::Sound => Vec::new(),
        }
    }

    fn sound_seconds(&self, prompt: &str) -> Result<f32, ApiError> {
        if prompt.contains("rain") {
            Ok(6.0)
        } else {
            Err(ApiError::new(ErrorCode::UnsupportedPrompt).with_detail("parameter", "prompt"))
        }
    }

    fn sound_vocabulary(&self) -> serde_json::Value {
        serde_json::json!({"rain": ["rain"]})
    }

    fn check_image_prompt(
        &self,
        prompt: &str,
        negative: Option<&str>,
        _style: Option<&str>,
    ) -> Result<(), ApiError> {
        if prompt.contains("cat") && negative.is_none_or(|n| !n.contains("cat")) {
            Ok(())
        } else {
            Err(ApiError::new(ErrorCode::UnsupportedPrompt).with_detail("parameter", "prompt"))
        }
    }
}

impl Translation for Fake {
    fn dubbing(&self) -> &DubLanguages {
        &self.dubbing
    }
}

impl Avatars for Fake {
    fn avatars(&self) -> Vec<AvatarLook> {
        Vec::new()
    }

    fn avatar_clip(&self) -> AvatarClip {
        AvatarClip {
            size: 256,
            seconds: 4,
            fps: 25,
        }
    }
}

impl ModelList for Fake {
    fn models(&self) -> Vec<ModelStatus> {
        let model = |engine: &str, kind| ModelStatus {
            engine: engine.into(),
            name: None,
            kind,
            available: true,
            voices: 0,
            detail: String::new(),
            job_kinds: Vec::new(),
        };
        vec![
            model("kokoro", Capability::TextToSpeech),
            model("piper", Capability::TextToSpeech),
            model("whisper", Capability::SpeechToText),
        ]
    }
}
