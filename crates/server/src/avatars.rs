//! The avatar catalog as the API shows it: the built-in presenters the
//! engines offer (rendered at the first start) beside each account's own
//! uploads, their views with signed URLs, and the list's filters.

use mediagen_core::page::RawPageQuery;
use mediagen_core::time::{iso8601, now_ms};
use mediagen_core::ApiError;
use mediagen_jobs::catalog::AvatarLook as Look;
use mediagen_store::AvatarRecord;
use serde::{Deserialize, Serialize};

use crate::jobs::signed_url;
use crate::state::AppState;

pub fn video_key(id: &str) -> String {
    format!("avatars/premade/{id}.mp4")
}

pub fn poster_key(id: &str) -> String {
    format!("avatars/premade/{id}.png")
}

/// When the built-in catalog was made (its `createdAt`), Unix ms.
const CATALOG_CREATED_MS: i64 = 1_795_305_600_000;
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvatarView {
    pub id: String,
    pub name: String,
    pub description: String,
    /// `female`, `male` or `neutral`.
    pub gender: String,
    /// `illustrated` (the built-in presenters) or `photo` (uploads).
    pub style: String,
    pub labels: Vec<String>,
    pub width: u32,
    pub height: u32,
    /// `square`, `landscape` or `portrait`.
    pub orientation: String,
    /// Seconds of the source clip (an idle loop for the built-ins).
    pub duration: f64,
    pub fps: f64,
    /// Signed, expiring URLs of the clip and its poster (png).
    pub preview_video_url: String,
    pub poster_url: String,
    /// `premade` or `custom`.
    pub category: String,
    pub created_at: String,
}

pub fn expiry(state: &AppState) -> i64 {
    now_ms() / 1000 + state.config.url_ttl_seconds as i64
}

pub fn premade_view(state: &AppState, look: &Look) -> AvatarView {
    let expires = expiry(state);
    let clip = state.catalog.avatars.avatar_clip();
    AvatarView {
        id: look.id.to_owned(),
        name: look.name.to_owned(),
        description: look.description.to_owned(),
        gender: look.gender.to_owned(),
        style: "illustrated".to_owned(),
        labels: look.labels.iter().map(|l| (*l).to_owned()).collect(),
        width: clip.size,
        height: clip.size,
        orientation: "square".to_owned(),
        duration: f64::from(clip.seconds),
        fps: f64::from(clip.fps),
        preview_video_url: signed_url(state, &video_key(look.id), expires),
        poster_url: signed_url(state, &poster_key(look.id), expires),
        category: "premade".to_owned(),
        created_at: iso8601(CATALOG_CREATED_MS),
    }
}

pub fn orientation(width: i64, height: i64) -> &'static str {
    match width.cmp(&height) {
        std::cmp::Ordering::Equal => "square",
        std::cmp::Ordering::Greater => "landscape",
        std::cmp::Ordering::Less => "portrait",
    }
}

pub fn custom_view(state: &AppState, a: AvatarRecord) -> AvatarView {
    let expires = expiry(state);
    AvatarView {
        preview_video_url: signed_url(state, &a.video_key, expires),
        poster_url: signed_url(state, &a.poster_key, expires),
        orientation: orientation(a.width, a.height).to_owned(),
        id: a.id.into(),
        name: a.name,
        description: a.description,
        gender: a.gender,
        style: "photo".to_owned(),
        labels: a.labels,
        width: a.width as u32,
        height: a.height as u32,
        duration: a.duration,
        fps: a.fps,
        category: "custom".to_owned(),
        created_at: iso8601(a.created_at),
    }
}

pub fn premade(state: &AppState, id: &str) -> Option<Look> {
    state
        .catalog
        .avatars
        .avatars()
        .into_iter()
        .find(|l| l.id == id && state.avatars.contains(&l.id))
}

#[derive(Deserialize)]
pub struct AvatarQuery {
    pub q: Option<String>,
    pub gender: Option<String>,
    pub style: Option<String>,
    pub category: Option<String>,
    pub orientation: Option<String>,
    pub sort: Option<String>,
    #[serde(flatten)]
    pub page: RawPageQuery,
}

pub const GENDERS: [&str; 3] = ["female", "male", "neutral"];

/// The values the avatar list's filters take (also written into the
/// document's parameters).
pub const LIST_CHOICES: [(&str, &[&str]); 4] = [
    ("style", &["illustrated", "photo"]),
    ("category", &["premade", "custom"]),
    ("orientation", &["square", "landscape", "portrait"]),
    ("sort", &["name", "-name", "createdAt", "-createdAt"]),
];

pub fn choices(name: &str) -> &'static [&'static str] {
    LIST_CHOICES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[], |(_, c)| c)
}

pub fn one_of(name: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), ApiError> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::invalid_parameter(
            name,
            format!("must be one of {}", allowed.join(", ")),
        )),
        _ => Ok(()),
    }
}

pub fn matches(a: &AvatarView, q: &AvatarQuery) -> bool {
    let text = q.q.as_deref().is_none_or(|needle| {
        let needle = needle.to_lowercase();
        a.name.to_lowercase().contains(&needle)
            || a.description.to_lowercase().contains(&needle)
            || a.labels.iter().any(|l| l.contains(needle.as_str()))
    });
    let is = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    text && is(&q.gender, &a.gender)
        && is(&q.style, &a.style)
        && is(&q.category, &a.category)
        && is(&q.orientation, &a.orientation)
}
