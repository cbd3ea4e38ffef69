//! OpenAI's model names in `GET /v1/models`: each with its capability and
//! the model of ours that serves it.

use super::image::MODELS as IMAGE_MODELS;
use super::speech::OPENAI_SPEECH_MODELS;
use super::transcription::{GPT_TRANSCRIBE, WHISPER};
use crate::catalog::ModelStatus;
use crate::Catalog;
use mediagen_core::Capability;

/// An OpenAI model name as one of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    pub id: &'static str,
    /// The capability, as [`ModelStatus::kind`].
    pub kind: Capability,
    /// The model of ours it runs on (its id in the list), `None` when the
    /// capability has none installed.
    pub serves: Option<String>,
}

/// The id of each of our models in the list: its name, or its engine's
/// where it has none; a name two models share takes its medium
/// (`embedded-image`, `embedded-sound`).
pub fn model_ids(models: &[ModelStatus]) -> Vec<String> {
    models
        .iter()
        .map(|m| match &m.name {
            None => m.engine.clone(),
            Some(name)
                if models
                    .iter()
                    .filter(|o| o.name.as_ref() == Some(name))
                    .count()
                    > 1 =>
            {
                format!("{name}-{}", m.kind.as_str().trim_end_matches("-generation"))
            }
            Some(name) => name.clone(),
        })
        .collect()
}

/// OpenAI's names for speech, transcription and images, each with the
/// model of ours that serves it: Kokoro (or the first engine installed)
/// for speech, the default recogniser, the embedded image engine.
pub fn aliases(catalog: &Catalog) -> Vec<Alias> {
    let models = catalog.models.models();
    let ids = model_ids(&models);
    let first = |kind: Capability, prefer: &str| {
        let available = || {
            models
                .iter()
                .zip(&ids)
                .filter(move |(m, _)| m.kind == kind && m.available)
        };
        available()
            .find(|(m, _)| m.engine == prefer || m.name.as_deref() == Some(prefer))
            .or_else(|| available().next())
            .map(|(_, id)| id.clone())
    };
    let speech = first(Capability::TextToSpeech, "kokoro");
    let recogniser = catalog
        .recognisers
        .recognisers()
        .first()
        .map(|r| r.name.clone());
    let stt = recogniser.and_then(|name| first(Capability::SpeechToText, &name));
    let image = first(Capability::ImageGeneration, "embedded-image");
    let named = |names: &[&'static str], kind: Capability, serves: &Option<String>| {
        names
            .iter()
            .map(|id| Alias {
                id,
                kind,
                serves: serves.clone(),
            })
            .collect::<Vec<_>>()
    };
    let mut out = named(&OPENAI_SPEECH_MODELS, Capability::TextToSpeech, &speech);
    out.extend(named(&[WHISPER], Capability::SpeechToText, &stt));
    out.extend(named(&GPT_TRANSCRIBE, Capability::SpeechToText, &stt));
    let images: Vec<&'static str> = IMAGE_MODELS.iter().map(|(name, _)| *name).collect();
    out.extend(named(&images, Capability::ImageGeneration, &image));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(engine: &str, name: Option<&str>, kind: Capability) -> ModelStatus {
        ModelStatus {
            job_kinds: Vec::new(),
            engine: engine.into(),
            name: name.map(Into::into),
            kind,
            available: true,
            voices: 0,
            detail: String::new(),
        }
    }

    #[test]
    fn ids_are_names_engines_or_names_with_their_medium() {
        let models = [
            status("kokoro", None, Capability::TextToSpeech),
            status("ctranslate2", Some("base"), Capability::SpeechToText),
            status(
                "embedded-sound",
                Some("embedded"),
                Capability::SoundGeneration,
            ),
            status(
                "embedded-image",
                Some("embedded"),
                Capability::ImageGeneration,
            ),
        ];
        assert_eq!(
            model_ids(&models),
            ["kokoro", "base", "embedded-sound", "embedded-image"]
        );
    }
}
