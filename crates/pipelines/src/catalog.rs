//! The engines as the API sees them: each part of the jobs crate's
//! `Catalog` over [`Engines`], answered from what discovery found (no model
//! is loaded here).

use mediagen_core::voice::VoiceInfo;
use mediagen_core::{ApiError, Capability, ErrorCode};
use mediagen_generate::sound::{self, CONCEPTS};
use mediagen_jobs::catalog::{
    AvatarClip, AvatarLook, Avatars, Generators, Medium, ModelList, ModelStatus, NeuralModel,
    Recogniser, Recognisers, Translation, Voices,
};
use mediagen_jobs::dub::DubLanguages;
use mediagen_jobs::neural::EMBEDDED;
use mediagen_media::avatar;

use crate::engines::Engines;
use crate::image::scene_of;

use crate::kinds::{of_capability, PIPELINES};

impl Voices for Engines {
    fn voices(&self) -> &[VoiceInfo] {
        self.tts.voices()
    }

    fn voice(&self, id: &str) -> Option<&VoiceInfo> {
        self.tts.voice(id)
    }
}

impl Recognisers for Engines {
    fn recognisers(&self) -> Vec<Recogniser> {
        self.stt
            .names()
            .into_iter()
            .filter_map(|name| {
                let model = self.stt.model(Some(&name))?;
                Some(Recogniser {
                    multilingual: model.multilingual(),
                    name,
                })
            })
            .collect()
    }

    fn recognised_languages(&self) -> Vec<&'static str> {
        mediagen_speech::stt::languages()
    }

    fn language_name(&self, code: &str) -> Option<&'static str> {
        mediagen_speech::stt::language_name(code)
    }
}

impl ModelList for Engines {
    fn models(&self) -> Vec<ModelStatus> {
        let engines = self.tts.status().iter().chain(self.stt.status());
        let mut out: Vec<ModelStatus> = engines
            .map(|s| ModelStatus {
                job_kinds: Vec::new(),
                engine: s.engine.to_owned(),
                name: s.name.clone(),
                kind: s.kind,
                available: s.available,
                voices: s.voices,
                detail: s.detail.clone(),
            })
            .collect();
        out.push(ModelStatus {
            job_kinds: Vec::new(),
            engine: "embedded-sound".into(),
            name: Some(EMBEDDED.into()),
            kind: Capability::SoundGeneration,
            available: true,
            voices: 0,
            detail: format!("built in: {} sound concepts", CONCEPTS.len()),
        });
        out.push(ModelStatus {
            job_kinds: Vec::new(),
            engine: "embedded-image".into(),
            name: Some(EMBEDDED.into()),
            kind: Capability::ImageGeneration,
            available: self.icons.is_some(),
            voices: 0,
            detail: match &self.icons {
                Some(icons) => format!("Twemoji icon set: {} icons", icons.len()),
                None => "no icon set under models/emoji (run scripts/models.sh)".into(),
            },
        });
        let pairs = self.translator.pairs();
        out.push(ModelStatus {
            job_kinds: Vec::new(),
            engine: self.translator.name().to_owned(),
            name: None,
            kind: Capability::Translation,
            available: !pairs.is_empty(),
            voices: 0,
            detail: if pairs.is_empty() {
                "no language pairs installed (scripts/setup.sh installs Apertium's); \
                 dubbing can only translate into English"
                    .into()
            } else {
                let listed: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}-{b}")).collect();
                format!(
                    "{} pairs, pivots included: {}",
                    pairs.len(),
                    listed.join(", ")
                )
            },
        });
        for medium in [Medium::Image, Medium::Sound] {
            out.extend(
                self.diffusion
                    .found(medium)
                    .into_iter()
                    .map(|f| ModelStatus {
                        job_kinds: Vec::new(),
                        engine: "diffusion".into(),
                        name: Some(f.name),
                        kind: match f.medium {
                            Medium::Image => Capability::ImageGeneration,
                            Medium::Sound => Capability::SoundGeneration,
                        },
                        available: true,
                        voices: 0,
                        detail: format!("{} (loaded on first use)", f.dir.display()),
                    }),
            );
        }
        for model in &mut out {
            model.job_kinds = of_capability(PIPELINES, model.kind);
        }
        out
    }
}

impl Generators for Engines {
    fn neural_models(&self, medium: Medium) -> Vec<NeuralModel> {
        self.diffusion
            .found(medium)
            .into_iter()
            .map(|f| NeuralModel {
                sample_rate: match medium {
                    Medium::Sound => f.sample_rate(),
                    Medium::Image => None,
                },
                name: f.name,
            })
            .collect()
    }

    fn sound_seconds(&self, prompt: &str) -> Result<f32, ApiError> {
        sound::plan(prompt)
            .map(|plan| plan.natural_seconds())
            .map_err(|e| {
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

    fn sound_vocabulary(&self) -> serde_json::Value {
        serde_json::to_value(sound::vocabulary()).unwrap_or_default()
    }

    fn check_image_prompt(
        &self,
        prompt: &str,
        negative: Option<&str>,
        style: Option<&str>,
    ) -> Result<(), ApiError> {
        let icons = self.icons.as_deref().ok_or_else(|| {
            ApiError::new(ErrorCode::EngineUnavailable).with_message(
                "The image engine's icon set is not installed: run scripts/models.sh.",
            )
        })?;
        let style = style.and_then(mediagen_core::format::Style::parse);
        let scene = scene_of(prompt, negative, icons, style);
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
        Ok(())
    }
}

impl Translation for Engines {
    fn dubbing(&self) -> &DubLanguages {
        &self.dubbing
    }
}

impl Avatars for Engines {
    fn avatars(&self) -> Vec<AvatarLook> {
        avatar::CATALOG
            .iter()
            .map(|l| AvatarLook {
                id: l.id,
                name: l.name,
                description: l.description,
                gender: l.gender,
                labels: l.labels,
            })
            .collect()
    }

    fn avatar_clip(&self) -> AvatarClip {
        AvatarClip {
            size: avatar::SIZE,
            seconds: avatar::SECONDS,
            fps: avatar::FPS,
        }
    }
}

#[cfg(test)]
mod tests {
    /// The API's bounds on a sound's length are the engine's.
    #[test]
    fn sound_bounds_agree() {
        let api = *mediagen_jobs::sound::SECONDS;
        assert_eq!(
            api.minimum(),
            f64::from(mediagen_generate::sound::MIN_SECONDS)
        );
        assert_eq!(
            api.maximum(),
            f64::from(mediagen_generate::sound::MAX_SECONDS)
        );
    }
}
