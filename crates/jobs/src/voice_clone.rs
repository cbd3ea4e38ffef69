//! A voice clone (`POST /v1/voices`, the `voice.clone` job's payload),
//! and a cloned voice as it is stored.

use mediagen_core::voice::VoiceProfile;
use mediagen_core::{ApiError, VoiceId};
use serde::{Deserialize, Serialize};

/// Total seconds of samples a cloned voice needs, and takes at most.
pub const MIN_SAMPLE_SECONDS: f64 = 10.0;
pub const MAX_SAMPLE_SECONDS: f64 = 300.0;

/// The refusal of samples that are too short or too long in total.
pub fn samples_out_of_range(seconds: f64) -> ApiError {
    ApiError::unprocessable(
        "files",
        format!("the samples must last {MIN_SAMPLE_SECONDS} s to {MAX_SAMPLE_SECONDS} s in total (these: {seconds:.1} s)"),
    )
    .with_detail("limit", "max_seconds")
    .with_detail("maximum", MAX_SAMPLE_SECONDS)
}

/// A cloned voice's stored profile and the catalog voice chosen for it
/// (the `profile` column of a voice).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredVoice {
    #[serde(flatten)]
    pub profile: VoiceProfile,
    #[serde(default)]
    pub base_voice_id: Option<String>,
    /// How alike the voice's speech and its samples are, measured when it
    /// was made (absent for voices made before, or without the encoder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<VoiceSimilarity>,
}

/// Cosine similarities of GE2E speaker embeddings (1: the same direction;
/// docs/voice.md says how to read them).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceSimilarity {
    /// The cloned voice's speech (its base voice converted toward the
    /// profile) against the samples.
    pub samples: f32,
    /// The base catalog voice, unconverted, against the samples.
    pub base: f32,
}

/// The blob key of a cloned voice's preview.
pub fn cloned_preview_key(account_id: &str, voice_id: &str) -> String {
    format!("voices/{account_id}/{voice_id}.mp3")
}

/// What a clone job is asked for (validated by the API; the id is chosen
/// there, so a retried job makes the same voice once).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloneRequest {
    pub voice_id: VoiceId,
    pub name: String,
    pub description: String,
    pub labels: Vec<String>,
    /// BCP-47; `None`: heard by the recogniser on the first sample.
    pub language: Option<String>,
    /// Blob keys of the samples (account files), in the order sent.
    pub samples: Vec<String>,
}
