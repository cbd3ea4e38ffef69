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

impl mediagen_core::JobRequest for AvatarUpload {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::AvatarCreate;
}
