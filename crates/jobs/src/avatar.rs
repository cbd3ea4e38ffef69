//! An avatar expansion request (`POST /v1/avatar-expansion`, also the
//! `avatar.expand` job's payload).

use std::collections::HashMap;
use std::sync::LazyLock;

use mediagen_core::form::FilePart;
use mediagen_core::format::{Container, ExpandMode as Mode};
use mediagen_core::ApiError;
use mediagen_core::FileId;
use serde::{Deserialize, Serialize};

use crate::bounds::Bound;

/// The longest output, seconds (ten minutes: `duration`'s maximum in
/// [`AvatarExpansionForm`]'s schema; an `audioFileId`'s length is held to
/// it too).
pub static MAX_SECONDS: LazyLock<f64> =
    LazyLock::new(|| Bound::of::<AvatarExpansionForm>("duration").maximum());

/// The highest frame rate an expansion is made at: a source faster than
/// this is read at this rate.
pub const MAX_FPS: f64 = 60.0;

/// Pixels a second that one unit pays for: 1280×720 at 30 frames a second.
pub const UNIT_PIXELS_PER_SECOND: f64 = 1280.0 * 720.0 * 30.0;

/// What an expansion of `seconds` at `fps` frames of `width`×`height`
/// costs: a unit a second, or more where the frames × pixels a second are
/// more than [`UNIT_PIXELS_PER_SECOND`] (a 4096×4096 source at 30 fps,
/// 18.2 a second), rounded up.
pub fn expansion_units(seconds: f64, fps: f64, width: u32, height: u32) -> f64 {
    let rate = fps * f64::from(width) * f64::from(height) / UNIT_PIXELS_PER_SECOND;
    (seconds * rate.max(1.0)).ceil()
}

/// A validated expansion (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExpandRequest {
    /// Blob key of the source clip.
    pub source: String,
    pub avatar_id: Option<String>,
    pub file_id: Option<FileId>,
    /// The built-in presenter to draw talking over `audio`.
    pub talking: Option<String>,
    /// Output seconds.
    pub seconds: f64,
    /// Blob key of the sound put under the picture.
    pub audio: Option<String>,
    pub audio_file_id: Option<String>,
    pub mode: Mode,
    pub format: Container,
    pub seed: u64,
}

impl crate::MediaRequest for ExpandRequest {
    const LIMITS: crate::limits::MediaLimits = crate::limits::AVATAR_EXPANSION;
}

impl mediagen_core::JobRequest for ExpandRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::AvatarExpand;

    /// Seconds of video made, rounded up (the estimate: the worker measures
    /// the source's frame rate and picture first and raises the hold to
    /// [`expansion_units`] before it decodes anything).
    fn units(&self) -> f64 {
        self.seconds.ceil()
    }

    fn media_seconds(&self) -> f64 {
        self.seconds
    }
}

/// `POST /v1/avatar-expansion` (as JSON, `avatarId` or `fileId` instead of
/// the `file` part).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AvatarExpansionForm {
    /// A video to expand (or send `avatarId`; exactly one of them, else 422).
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// A catalog or uploaded avatar (unknown: 404).
    #[schema(min_length = 1)]
    pub avatar_id: Option<String>,
    /// Seconds of output, more than 0 and at most 600 (or send
    /// `audioFileId`; exactly one of them, else 422).
    #[schema(exclusive_minimum = 0.0, maximum = 600.0)]
    pub duration: Option<f64>,
    /// An uploaded sound whose length sets the duration (a talking
    /// presenter speaks it).
    #[schema(min_length = 1)]
    pub audio_file_id: Option<String>,
    /// `seamless` (default), `pingpong`, `loop`, `freeze`.
    #[schema(schema_with = expansion_modes)]
    pub mode: Option<String>,
    /// `mp4` (default), `webm`, `mov`, `mkv`.
    #[schema(schema_with = crate::video::containers)]
    pub format: Option<String>,
    #[schema(minimum = 0)]
    pub seed: Option<u64>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

fn expansion_modes() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["seamless", "pingpong", "loop", "freeze"])
}

/// The options of an expansion besides its source: `duration` or the
/// length of the `audioFileId` (resolved by the caller), `mode`, `format`,
/// `seed`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpandOptions {
    /// Requested seconds; `None` when the audio sets the length.
    pub duration: Option<f64>,
    pub audio_file_id: Option<String>,
    pub mode: Mode,
    pub format: Container,
    pub seed: u64,
}

impl ExpandOptions {
    /// Reads and validates the form's fields. Errors name the parameter.
    pub fn parse(fields: &HashMap<String, String>) -> Result<Self, ApiError> {
        let form: AvatarExpansionForm = mediagen_core::form::from_fields(fields)?;
        let duration = match form.duration {
            None => None,
            Some(d) => Some(Self::check_seconds("duration", d)?),
        };
        let audio_file_id = form.audio_file_id;
        match (&duration, &audio_file_id) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    "send either `duration` or `audioFileId` (whose length sets the duration), not both",
                ))
            }
            (None, None) => {
                return Err(ApiError::invalid_parameter(
                    "duration",
                    "required (seconds), unless `audioFileId` is sent",
                ))
            }
            _ => {}
        }
        let mode = match form.mode.as_deref() {
            None => Mode::Seamless,
            Some(m) => Mode::parse(m).ok_or_else(|| {
                ApiError::invalid_parameter(
                    "mode",
                    "must be one of seamless, pingpong, loop, freeze",
                )
            })?,
        };
        let format = match form.format.as_deref() {
            None => Container::Mp4,
            Some(f) => Container::parse(f).ok_or_else(|| {
                ApiError::invalid_parameter("format", "must be one of mp4, webm, mov, mkv")
            })?,
        };
        let seed = form.seed.unwrap_or(0);
        Ok(Self {
            duration,
            audio_file_id,
            mode,
            format,
            seed,
        })
    }

    /// A length in seconds: more than 0, at most [`MAX_SECONDS`] (422
    /// naming `parameter` otherwise).
    pub fn check_seconds(parameter: &str, seconds: f64) -> Result<f64, ApiError> {
        if !seconds.is_finite() || seconds <= 0.0 {
            return Err(ApiError::unprocessable(
                parameter,
                "the duration must be more than 0 seconds",
            ));
        }
        if seconds > *MAX_SECONDS {
            return Err(ApiError::unprocessable(
                parameter,
                format!(
                    "the duration may be at most {} seconds (got {seconds})",
                    *MAX_SECONDS
                ),
            ));
        }
        Ok(seconds)
    }
}

/// 422 for a source without a picture.
pub fn not_a_video(parameter: &str) -> ApiError {
    ApiError::unprocessable(
        parameter,
        "the file has no picture stream (an avatar needs video)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mediagen_core::ErrorCode;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn options_are_validated() {
        let ok =
            ExpandOptions::parse(&fields(&[("duration", "37.4"), ("mode", "pingpong")])).unwrap();
        assert_eq!((ok.duration, ok.mode), (Some(37.4), Mode::Pingpong));
        for bad in ["0", "-3", "601"] {
            let e = ExpandOptions::parse(&fields(&[("duration", bad)])).unwrap_err();
            assert_eq!(e.code, ErrorCode::UnprocessableEntity, "{bad}");
            assert_eq!(e.details["parameter"], "duration");
        }
        for bad in [
            fields(&[]),
            fields(&[("duration", "x")]),
            fields(&[("duration", "3"), ("audioFileId", "file_1")]),
            fields(&[("duration", "3"), ("mode", "bounce")]),
            fields(&[("duration", "3"), ("format", "gif")]),
            fields(&[("duration", "3"), ("colour", "red")]),
        ] {
            let e = ExpandOptions::parse(&bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParameter, "{bad:?}");
        }
    }
}
