//! An avatar upload (`POST /v1/avatars`, the `avatar.create` job's payload).

use mediagen_core::AvatarId;
use serde::{Deserialize, Serialize};

/// What an avatar upload job is asked for (validated by the API, which
/// chose the id and stored the clip at `video_key`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvatarUpload {
    pub avatar_id: AvatarId,
    pub name: String,
    pub description: String,
    pub gender: String,
    pub labels: Vec<String>,
    pub video_key: String,
    pub poster_key: String,
    pub content_type: String,
    /// Seconds, as probed.
    pub duration: f64,
}

impl crate::MediaRequest for AvatarUpload {
    const LIMITS: crate::limits::MediaLimits = crate::limits::AVATAR_CLIP;
}

impl mediagen_core::JobRequest for AvatarUpload {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::AvatarCreate;

    /// One avatar (its kind's price is nothing).
    fn units(&self) -> f64 {
        1.0
    }

    fn media_seconds(&self) -> f64 {
        self.duration
    }
}
