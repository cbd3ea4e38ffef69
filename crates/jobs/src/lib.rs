//! What each job kind takes: the requests the HTTP layer validates (each is
//! also its job's payload), the limits of each capability, and the
//! [`Catalog`] of small traits through which requests are checked against
//! the engines installed (implemented by `mediagen-pipelines`; the API never loads an
//! engine).

pub mod avatar;
pub mod avatar_upload;
pub mod bounds;
pub mod catalog;
pub mod dub;
pub mod elevenlabs;
pub mod image;
pub mod limits;
pub mod neural;
pub mod openai;
pub mod sound;
pub mod stt;
pub mod stt_realtime;
pub mod tts;
pub mod tts_realtime;
pub mod video;
pub mod voice;
pub mod voice_clone;
pub mod voice_design;

pub use catalog::Catalog;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod validation_tests;

use mediagen_core::format::AudioFormat;
use mediagen_core::{ApiError, FileId};

/// A request on media: the limits its input is checked against before any
/// credit is held or any sample decoded.
pub trait MediaRequest: mediagen_core::JobRequest {
    const LIMITS: limits::MediaLimits;
}

/// The stored input file a request on media runs on.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaFile {
    /// Its blob key.
    pub key: String,
    pub id: FileId,
    /// Seconds, as probed.
    pub duration: f64,
    /// The demuxer the API's probe of a fresh upload found (`None` for a
    /// file stored before: the worker probes it).
    pub demuxer: Option<String>,
}

/// The `format` and `sampleRate` of a request that makes audio: mp3 when no
/// format is asked, and the format's rate nearest above `native` when no rate
/// is. Errors name the parameter.
pub fn audio_output(
    format: Option<&str>,
    sample_rate: Option<u32>,
    native: u32,
) -> Result<(AudioFormat, u32), ApiError> {
    let format = match format {
        None => AudioFormat::Mp3,
        Some(f) => AudioFormat::parse(f).ok_or_else(|| {
            let names: Vec<&str> = AudioFormat::ALL.iter().map(|f| f.as_str()).collect();
            ApiError::invalid_parameter("format", format!("must be one of {}", names.join(", ")))
        })?,
    };
    let rate = match sample_rate {
        None => format.default_rate(native),
        Some(r) if format.sample_rates().contains(&r) => r,
        Some(r) => {
            let rates: Vec<String> = format.sample_rates().iter().map(u32::to_string).collect();
            let reason = format!("{} supports {}", format.as_str(), rates.join(", "));
            // A rate no format takes is outside the document (400); one
            // another format takes is refused for this one (422).
            let known = AudioFormat::ALL
                .iter()
                .any(|f| f.sample_rates().contains(&r));
            return Err(if known {
                ApiError::unprocessable("sampleRate", reason)
            } else {
                ApiError::invalid_parameter("sampleRate", reason)
            });
        }
    };
    Ok((format, rate))
}

/// [`audio_output`] from form fields (`format`, `sampleRate` as text).
pub fn audio_output_fields(
    fields: &std::collections::HashMap<String, String>,
    native: u32,
) -> Result<(AudioFormat, u32), ApiError> {
    let rate = match fields.get("sampleRate") {
        None => None,
        Some(r) => Some(
            r.parse()
                .map_err(|_| ApiError::invalid_parameter("sampleRate", "must be an integer"))?,
        ),
    };
    audio_output(fields.get("format").map(String::as_str), rate, native)
}

/// A text prompt: not only white space (as the schema's `\S` means it),
/// 1 to `max` characters once trimmed.
pub fn prompt(text: &str, max: usize) -> Result<String, ApiError> {
    let prompt = mediagen_core::params::trim_spaces(text);
    let chars = prompt.chars().count();
    if prompt.is_empty() {
        return Err(ApiError::invalid_parameter(
            "prompt",
            "must not be empty or only white space",
        ));
    }
    if chars > max {
        return Err(ApiError::invalid_parameter(
            "prompt",
            format!("must be 1 to {max} characters (got {chars})"),
        ));
    }
    Ok(prompt.to_owned())
}

/// An ISO 639-1 code as a request sends it (`es`, `ES`, `es-MX`: `es`), or
/// 400 naming `key`.
pub fn iso_639_1(raw: &str, key: &str) -> Result<String, ApiError> {
    let l = raw.trim().to_ascii_lowercase();
    let code = l.split(['-', '_']).next().unwrap_or_default();
    if code.len() == 2 && code.chars().all(|c| c.is_ascii_lowercase()) {
        Ok(code.to_owned())
    } else {
        Err(ApiError::invalid_parameter(
            key,
            "must be an ISO 639-1 code such as en or es",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_follow_the_schema_bounds_and_blankness() {
        assert_eq!(prompt("  rain \n", 10).unwrap(), "rain");
        // ECMAScript white space only (the schema's `\S` refuses it): 400.
        for blank in ["", "   ", "\t\u{a0}\u{3000}\u{feff}"] {
            assert_eq!(prompt(blank, 10).unwrap_err().status(), 400, "{blank:?}");
        }
        // U+0085 is not ECMAScript white space: a prompt, left to the engine.
        assert_eq!(prompt("\u{85}", 10).unwrap(), "\u{85}");
        // The bound is on the trimmed prompt.
        assert!(prompt(&"a".repeat(11), 10).is_err());
        assert!(prompt(&format!(" {} ", "a".repeat(10)), 10).is_ok());
    }
}
