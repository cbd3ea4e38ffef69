//! What the API offers, named once: `/v1/models` lists its engines by
//! capability (`kind`), each job kind runs on at most one capability's
//! engines, and input limits say which capability refused an input.

use std::fmt;

/// A capability of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    TextToSpeech,
    SpeechToText,
    /// Text translation (dubbing's translators).
    Translation,
    VoiceChanger,
    VoiceCloning,
    Dubbing,
    VideoTrimming,
    Avatars,
    AvatarExpansion,
    SoundGeneration,
    ImageGeneration,
}

impl Capability {
    pub const ALL: [Capability; 11] = [
        Capability::TextToSpeech,
        Capability::SpeechToText,
        Capability::Translation,
        Capability::VoiceChanger,
        Capability::VoiceCloning,
        Capability::Dubbing,
        Capability::VideoTrimming,
        Capability::Avatars,
        Capability::AvatarExpansion,
        Capability::SoundGeneration,
        Capability::ImageGeneration,
    ];

    /// Its name, as `/v1/models` and messages give it (`text-to-speech`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Capability::TextToSpeech => "text-to-speech",
            Capability::SpeechToText => "speech-to-text",
            Capability::Translation => "translation",
            Capability::VoiceChanger => "voice-changer",
            Capability::VoiceCloning => "voice-cloning",
            Capability::Dubbing => "dubbing",
            Capability::VideoTrimming => "video-trimming",
            Capability::Avatars => "avatars",
            Capability::AvatarExpansion => "avatar-expansion",
            Capability::SoundGeneration => "sound-generation",
            Capability::ImageGeneration => "image-generation",
        }
    }

    /// The capability named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_has_one_name() {
        let mut names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        for c in Capability::ALL {
            assert_eq!(Capability::parse(c.as_str()), Some(c));
            assert_eq!(c.to_string(), c.as_str());
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Capability::ALL.len());
        assert_eq!(Capability::parse("text to speech"), None);
    }
}
