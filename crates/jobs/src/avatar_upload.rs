//! An avatar upload (`POST /v1/avatars`, the `avatar.create` job's payload).

use mediagen_core::form::FilePart;
use mediagen_core::AvatarId;
use serde::{Deserialize, Serialize};

// The form of `POST /v1/avatars`: the clip and what it is called.
/// `POST /v1/avatars`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AvatarUploadForm {
    /// A video of a person or character, 1 s to 5 min.
    #[serde(default)]
    #[schema(value_type = String, format = Binary, required = true)]
    pub file: FilePart,
    /// 1–100 characters.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 100, pattern = "\\S")]
    pub name: Option<String>,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    pub description: Option<String>,
    #[schema(schema_with = mediagen_core::schema::gender_schema)]
    pub gender: Option<String>,
    /// Comma-separated or a JSON list: at most 20 labels of at most 40
    /// characters (the schema shows one label).
    #[schema(max_length = 40, pattern = "^[^,\\[]*$")]
    pub labels: Option<String>,
}

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

    /// One avatar.
    fn units(&self) -> f64 {
        1.0
    }

    fn media_seconds(&self) -> f64 {
        self.duration
    }
}
