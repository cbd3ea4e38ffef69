//! OpenAI's model names in `GET /v1/models`: each with its capability and
//! the model of ours that serves it.

use super::image::MODELS as IMAGE_MODELS;
use super::speech::OPENAI_SPEECH_MODELS;
use super::transcription::{GPT_TRANSCRIBE, WHISPER};
use crate::catalog::ModelStatus;
use crate::Catalog;

/// An OpenAI model name as one of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    pub id: &'static str,
    /// The capability, as [`ModelStatus::kind`].
    pub kind: &'static str,
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
                format!("{name}-{}", m.kind.trim_end_matches("-generation"))
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
    let first = |kind: &str, prefer: &str| {
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
    let speech = first("text-to-speech", "kokoro");
    let recogniser = catalog
        .recognisers
        .recognisers()
        .first()
        .map(|r| r.name.clone());
    let stt = recogniser.and_then(|name| first("speech-to-text", &name));
    let image = first("image-generation", "embedded-image");
    let named = |names: &[&'static str], kind: &'static str, serves: &Option<String>| {
        names
            .iter()
            .map(|id| Alias {
                id,
                kind,
                serves: serves.clone(),
            })
            .collect::<Vec<_>>()
    };
    let mut out = named(&OPENAI_SPEECH_MODELS, "text-to-speech", &speech);
    out.extend(named(&[WHISPER], "speech-to-text", &stt));
    out.extend(named(&GPT_TRANSCRIBE, "speech-to-text", &stt));
    let images: Vec<&'static str> = IMAGE_MODELS.iter().map(|(name, _)| *name).collect();
    out.extend(named(&images, "image-generation", &image));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(engine: &str, name: Option<&str>, kind: &str) -> ModelStatus {
        ModelStatus {
            job_kinds: Vec::new(),
            engine: engine.into(),
            name: name.map(Into::into),
            kind: kind.into(),
            available: true,
            voices: 0,
            detail: String::new(),
        }
    }

    #[test]
    fn ids_are_names_engines_or_names_with_their_medium() {
        let models = [
            status("kokoro", None, "text-to-speech"),
            status("ctranslate2", Some("base"), "speech-to-text"),
            status("embedded-sound", Some("embedded"), "sound-generation"),
            status("embedded-image", Some("embedded"), "image-generation"),
        ];
        assert_eq!(
            model_ids(&models),
            ["kokoro", "base", "embedded-sound", "embedded-image"]
        );
    }
}
