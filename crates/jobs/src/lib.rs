//! What each job kind takes: the requests the HTTP layer validates (each is
//! also its job's payload), the limits of each capability, and the
//! [`Catalog`] trait through which requests are checked against the engines
//! installed (implemented by `mediagen-pipelines`; the API never loads an
//! engine).

pub mod avatar;
pub mod avatar_upload;
pub mod catalog;
pub mod dub;
pub mod image;
pub mod limits;
pub mod neural;
pub mod sound;
pub mod stt;
pub mod tts;
pub mod video;
pub mod voice;
pub mod voice_clone;

pub use catalog::Catalog;

use mediagen_core::format::AudioFormat;
use mediagen_core::ApiError;

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
            ApiError::invalid_parameter("format", "must be one of mp3, wav, ogg, flac, pcm")
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

/// A text prompt: trimmed, 1 to `max` characters.
pub fn prompt(text: &str, max: usize) -> Result<String, ApiError> {
    let prompt = text.trim();
    let chars = prompt.chars().count();
    if chars == 0 || chars > max {
        return Err(ApiError::invalid_parameter(
            "prompt",
            format!("must be 1 to {max} characters (got {chars})"),
        ));
    }
    Ok(prompt.to_owned())
}
