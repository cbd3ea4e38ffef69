//! What each capability accepts as input media. The HTTP layer checks an
//! input's probe against its capability's limits before any credit is held
//! or any sample is decoded, and decoders stop at the same length whatever
//! a file's header claims. docs/security.md lists every limit.

use mediagen_core::{ApiError, Capability, ErrorCode};

/// Widest or tallest picture any capability reads, in pixels.
pub const MAX_SIDE: u32 = 4096;

/// Input limits of one capability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaLimits {
    /// The capability that reads the input (`None`: a stored file, which
    /// any may read).
    pub capability: Option<Capability>,
    /// Longest input, in seconds.
    pub max_seconds: f64,
    /// The input must have a picture.
    pub needs_video: bool,
    /// The input must have sound.
    pub needs_audio: bool,
}

/// `POST /v1/files`: anything some capability takes.
pub const FILES: MediaLimits = MediaLimits {
    capability: None,
    max_seconds: 7200.0,
    needs_video: false,
    needs_audio: false,
};

pub const SPEECH_TO_TEXT: MediaLimits = MediaLimits {
    capability: Some(Capability::SpeechToText),
    max_seconds: 7200.0,
    needs_video: false,
    needs_audio: true,
};

pub const DUBBING: MediaLimits = MediaLimits {
    capability: Some(Capability::Dubbing),
    max_seconds: 3600.0,
    needs_video: false,
    needs_audio: true,
};

pub const VOICE_CHANGER: MediaLimits = MediaLimits {
    capability: Some(Capability::VoiceChanger),
    max_seconds: 1800.0,
    needs_video: false,
    needs_audio: true,
};

/// Each sample of a cloned voice (together they must last 10 s to 5 min).
pub const VOICE_SAMPLE: MediaLimits = MediaLimits {
    capability: Some(Capability::VoiceCloning),
    max_seconds: 300.0,
    needs_video: false,
    needs_audio: true,
};

pub const VIDEO_TRIM: MediaLimits = MediaLimits {
    capability: Some(Capability::VideoTrimming),
    max_seconds: 7200.0,
    needs_video: true,
    needs_audio: false,
};

/// An uploaded avatar clip.
pub const AVATAR_CLIP: MediaLimits = MediaLimits {
    capability: Some(Capability::Avatars),
    max_seconds: 300.0,
    needs_video: true,
    needs_audio: false,
};

/// The source video of an expansion, or the voice track put under one.
pub const AVATAR_EXPANSION: MediaLimits = MediaLimits {
    capability: Some(Capability::AvatarExpansion),
    max_seconds: 600.0,
    needs_video: false,
    needs_audio: false,
};

/// Every capability's limits, for docs and tests.
pub const ALL: [MediaLimits; 8] = [
    FILES,
    SPEECH_TO_TEXT,
    DUBBING,
    VOICE_CHANGER,
    VOICE_SAMPLE,
    VIDEO_TRIM,
    AVATAR_CLIP,
    AVATAR_EXPANSION,
];

/// What a probe (or a stored file's record) says of an input.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub seconds: f64,
    pub has_audio: bool,
    pub has_video: bool,
    pub width: u32,
    pub height: u32,
}

impl MediaLimits {
    /// What reads the input, as messages name it.
    fn reader(&self) -> &'static str {
        self.capability.map_or("a stored file", Capability::as_str)
    }

    /// Checks an input against these limits: 422 naming the limit (and the
    /// parameter `parameter`) when it is too long, too large or lacks a
    /// stream the capability needs.
    pub fn check(&self, parameter: &str, m: Measured) -> Result<(), ApiError> {
        let refuse = |message: String, limit: &str, value: serde_json::Value| {
            ApiError::new(ErrorCode::UnprocessableEntity)
                .with_message(message)
                .with_detail("parameter", parameter)
                .with_detail("limit", limit)
                .with_detail("maximum", value)
        };
        if m.seconds > self.max_seconds {
            return Err(refuse(
                format!(
                    "The input lasts {:.1} s; {} takes at most {} s.",
                    m.seconds,
                    self.reader(),
                    self.max_seconds
                ),
                "max_seconds",
                serde_json::json!(self.max_seconds),
            ));
        }
        if m.width > MAX_SIDE || m.height > MAX_SIDE {
            return Err(refuse(
                format!(
                    "The picture is {}x{}; at most {MAX_SIDE} pixels a side are read.",
                    m.width, m.height
                ),
                "max_side",
                serde_json::json!(MAX_SIDE),
            ));
        }
        let missing = |what: &str| {
            ApiError::new(ErrorCode::UnprocessableEntity)
                .with_message(format!("{} needs input with {what}.", self.reader()))
                .with_detail("parameter", parameter)
        };
        if self.needs_video && !m.has_video {
            return Err(missing("a picture"));
        }
        if self.needs_audio && !m.has_audio {
            return Err(missing("sound"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(seconds: f64, width: u32) -> Measured {
        Measured {
            seconds,
            has_audio: true,
            has_video: width > 0,
            width,
            height: width / 2,
        }
    }

    #[test]
    fn limits_name_what_was_exceeded() {
        assert!(SPEECH_TO_TEXT.check("file", m(7200.0, 0)).is_ok());
        let e = SPEECH_TO_TEXT
            .check("file", m(3.0 * 3600.0, 0))
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::UnprocessableEntity);
        assert_eq!(e.details["limit"], "max_seconds");
        assert_eq!(e.details["maximum"], 7200.0);
        let e = VIDEO_TRIM.check("file", m(10.0, 8192)).unwrap_err();
        assert_eq!(e.details["limit"], "max_side");
        let e = VIDEO_TRIM.check("file", m(10.0, 0)).unwrap_err();
        assert_eq!(e.message, "video-trimming needs input with a picture.");
        let e = FILES.check("file", m(3.0 * 3600.0, 0)).unwrap_err();
        assert!(
            e.message.contains("a stored file takes at most 7200 s"),
            "{}",
            e.message
        );
        assert!(ALL.iter().all(|l| l.max_seconds < 3.0 * 3600.0));
    }
}
