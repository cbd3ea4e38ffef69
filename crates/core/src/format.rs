//! The media formats the API makes: audio formats with their content types,
//! extensions and sample rates; video containers with the codecs they take;
//! time ranges; image encodings and styles; avatar expansion modes; what a neural generator makes.

/// Output formats of generated audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AudioFormat {
    /// MPEG-1/2 Layer III, 128 kbit/s CBR (the default).
    Mp3,
    /// RIFF/WAVE, 16-bit PCM.
    Wav,
    /// Ogg Opus, 64 kbit/s.
    Ogg,
    /// FLAC, 16-bit, lossless.
    Flac,
    /// Raw 16-bit little-endian mono PCM, no header.
    Pcm,
    /// AAC-LC in ADTS frames, 128 kbit/s.
    Aac,
}

impl AudioFormat {
    pub const ALL: [AudioFormat; 6] = [
        Self::Mp3,
        Self::Wav,
        Self::Ogg,
        Self::Flac,
        Self::Pcm,
        Self::Aac,
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mp3 => "mp3",
            Self::Wav => "wav",
            Self::Ogg => "ogg",
            Self::Flac => "flac",
            Self::Pcm => "pcm",
            Self::Aac => "aac",
        }
    }

    /// The Content-Type of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Mp3 => "audio/mpeg",
            Self::Wav => "audio/wav",
            Self::Ogg => "audio/ogg",
            Self::Flac => "audio/flac",
            Self::Pcm => "audio/L16",
            Self::Aac => "audio/aac",
        }
    }

    /// File extension of stored outputs.
    pub fn extension(self) -> &'static str {
        self.as_str()
    }

    /// Sample rates this format can be asked for.
    pub fn sample_rates(self) -> &'static [u32] {
        match self {
            // Opus runs at these rates only.
            Self::Ogg => &[8000, 12000, 16000, 24000, 48000],
            Self::Mp3 => &[8000, 16000, 22050, 24000, 32000, 44100, 48000],
            _ => &[8000, 16000, 22050, 24000, 32000, 44100, 48000],
        }
    }

    /// The rate used when none is asked for: the engine's own rate when the
    /// format allows it, else the nearest allowed rate above it.
    pub fn default_rate(self, native: u32) -> u32 {
        let rates = self.sample_rates();
        rates
            .iter()
            .copied()
            .find(|r| *r >= native)
            .unwrap_or(rates[rates.len() - 1])
    }

    /// Nominal bit rate in kbit/s for lossy formats.
    pub fn bitrate_kbps(self) -> Option<u32> {
        match self {
            Self::Mp3 | Self::Aac => Some(128),
            Self::Ogg => Some(64),
            _ => None,
        }
    }
}

/// A time range in seconds, `start` < `end`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Range {
    pub start: f64,
    pub end: f64,
}

/// Output containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    Mp4,
    Webm,
    Mov,
    Mkv,
}

impl Container {
    pub const ALL: [Container; 4] = [Self::Mp4, Self::Webm, Self::Mov, Self::Mkv];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Webm => "webm",
            Self::Mov => "mov",
            Self::Mkv => "mkv",
        }
    }

    /// ffmpeg's muxer.
    pub fn muxer(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Webm => "webm",
            Self::Mov => "mov",
            Self::Mkv => "matroska",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Mp4 => "video/mp4",
            Self::Webm => "video/webm",
            Self::Mov => "video/quicktime",
            Self::Mkv => "video/x-matroska",
        }
    }

    /// Whether a stream-copied stream of `codec` fits this container.
    pub fn accepts(self, codec: &str) -> bool {
        match self {
            Self::Webm => ["vp8", "vp9", "av1", "opus", "vorbis"].contains(&codec),
            Self::Mp4 | Self::Mov => [
                "h264", "hevc", "mpeg4", "av1", "vp9", "aac", "mp3", "opus", "alac", "ac3",
            ]
            .contains(&codec),
            Self::Mkv => true,
        }
    }

    /// Encoder arguments for a re-encode into this container.
    pub fn encoders(self) -> &'static [&'static str] {
        match self {
            Self::Webm => &[
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "realtime",
                "-cpu-used",
                "8",
                "-row-mt",
                "1",
                "-b:v",
                "0",
                "-crf",
                "32",
                "-c:a",
                "libopus",
            ],
            _ => &[
                "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p",
                "-c:a", "aac",
            ],
        }
    }

    /// The bit rate of re-encoded sound: 96 kbit/s a channel for AAC (twice
    /// ffmpeg's encoder time at 192 kbit/s mono for no audible gain), 64 for
    /// Opus; channels counted up to six.
    pub fn audio_bitrate(self, channels: u32) -> String {
        let per_channel = if self == Self::Webm { 64 } else { 96 };
        format!("{}k", per_channel * channels.clamp(1, 6))
    }
}

/// Encodings of generated images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Png,
    Jpeg,
    Webp,
}

impl ImageFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "png" => Some(Self::Png),
            "jpeg" | "jpg" => Some(Self::Jpeg),
            "webp" => Some(Self::Webp),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Webp => "webp",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }
}

/// Drawing styles of the embedded image engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    Flat,
    Watercolor,
    Pixel,
}

impl Style {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "flat" => Some(Self::Flat),
            "watercolor" | "watercolour" => Some(Self::Watercolor),
            "pixel" | "pixel-art" | "pixelart" => Some(Self::Pixel),
            _ => None,
        }
    }
}

/// How an avatar clip is stretched to a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpandMode {
    Seamless,
    Pingpong,
    Loop,
    Freeze,
}

impl ExpandMode {
    pub const ALL: [ExpandMode; 4] = [Self::Seamless, Self::Pingpong, Self::Loop, Self::Freeze];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Seamless => "seamless",
            Self::Pingpong => "pingpong",
            Self::Loop => "loop",
            Self::Freeze => "freeze",
        }
    }
}

/// What a neural generator makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Medium {
    Image,
    Sound,
}

impl Medium {
    /// Its folder under the models directory.
    pub fn folder(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Sound => "sound",
        }
    }
}
