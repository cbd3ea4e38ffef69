//! The avatar catalog: the built-in presenters (rendered at the first
//! start); uploaded avatars (`category: custom`) join it with avatar
//! expansion.

use std::cmp::Ordering;

use axum::extract::{Path, State};
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::time::{iso8601, now_ms};
use mediagen_core::{ApiError, Page};
use mediagen_engines::avatar::{Look, CATALOG, FPS, SECONDS, SIZE};
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;
use crate::extract::{ApiQuery, Auth, Read};
use crate::jobs::signed_url;
use crate::routes::{page_params, ListEnvelope};
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
    /// `illustrated` (the built-in presenters) or `photo` (uploads of people).
    pub style: String,
    pub labels: Vec<String>,
    pub width: u32,
    pub height: u32,
    /// `square`, `landscape` or `portrait`.
    pub orientation: String,
    /// Seconds of the source clip (an idle loop for the built-ins).
    pub duration: f64,
    pub fps: f64,
    /// Signed, expiring URLs of the clip (mp4) and its poster (png).
    pub preview_video_url: String,
    pub poster_url: String,
    /// `premade` or `custom`.
    pub category: String,
    pub created_at: String,
}

fn view(state: &AppState, look: &Look) -> AvatarView {
    let expires = now_ms() / 1000 + state.config.url_ttl_seconds as i64;
    AvatarView {
        id: look.id.to_owned(),
        name: look.name.to_owned(),
        description: look.description.to_owned(),
        gender: look.gender.to_owned(),
        style: "illustrated".to_owned(),
        labels: look.labels.iter().map(|l| (*l).to_owned()).collect(),
        width: SIZE,
        height: SIZE,
        orientation: "square".to_owned(),
        duration: f64::from(SECONDS),
        fps: f64::from(FPS),
        preview_video_url: signed_url(state, &video_key(look.id), expires),
        poster_url: signed_url(state, &poster_key(look.id), expires),
        category: "premade".to_owned(),
        created_at: iso8601(CATALOG_CREATED_MS),
    }
}

#[derive(Deserialize)]
pub struct AvatarQuery {
    q: Option<String>,
    gender: Option<String>,
    style: Option<String>,
    category: Option<String>,
    orientation: Option<String>,
    sort: Option<String>,
    #[serde(flatten)]
    page: RawPageQuery,
}

fn one_of(name: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), ApiError> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::invalid_parameter(
            name,
            format!("must be one of {}", allowed.join(", ")),
        )),
        _ => Ok(()),
    }
}

fn matches(look: &Look, q: &AvatarQuery) -> bool {
    let text = q.q.as_deref().is_none_or(|needle| {
        let needle = needle.to_lowercase();
        look.name.to_lowercase().contains(&needle)
            || look.description.to_lowercase().contains(&needle)
            || look.labels.iter().any(|l| l.contains(needle.as_str()))
    });
    text && q.gender.as_deref().is_none_or(|g| g == look.gender)
        && q.style.as_deref().is_none_or(|s| s == "illustrated")
        && q.category.as_deref().is_none_or(|c| c == "premade")
        && q.orientation.as_deref().is_none_or(|o| o == "square")
}

/// List avatars
///
/// The spec's list envelope of avatars, filtered by `q` (name, description
/// or label), `gender` (female, male, neutral), `style` (illustrated,
/// photo), `category` (premade, custom), `orientation` (square, landscape,
/// portrait), sorted by `sort` (`name` (default), `-name`, `createdAt`,
/// `-createdAt`), paged by `page` and `limit`.
#[utoipa::path(get, path = "/v1/avatars", tag = "avatars", security(("bearer" = ["read"])),
    params(("q" = Option<String>, Query), ("gender" = Option<String>, Query), ("style" = Option<String>, Query),
           ("category" = Option<String>, Query), ("orientation" = Option<String>, Query), ("sort" = Option<String>, Query),
           ("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<AvatarView>), (status = 400)))]
pub async fn list(
    State(state): State<AppState>,
    _auth: Auth<Read>,
    ApiQuery(q): ApiQuery<AvatarQuery>,
) -> ApiResult<Json<Page<AvatarView>>> {
    let params = page_params(&q.page)?;
    one_of(
        "gender",
        q.gender.as_deref(),
        &["female", "male", "neutral"],
    )?;
    one_of("style", q.style.as_deref(), &["illustrated", "photo"])?;
    one_of("category", q.category.as_deref(), &["premade", "custom"])?;
    one_of(
        "orientation",
        q.orientation.as_deref(),
        &["square", "landscape", "portrait"],
    )?;
    let order: fn(&Look, &Look) -> Ordering = match q.sort.as_deref() {
        None | Some("name") | Some("createdAt") => |a, b| a.name.cmp(b.name),
        Some("-name") | Some("-createdAt") => |a, b| b.name.cmp(a.name),
        Some(_) => {
            return Err(ApiError::invalid_parameter(
                "sort",
                "must be name, -name, createdAt or -createdAt",
            )
            .into())
        }
    };
    let mut looks: Vec<&Look> = CATALOG
        .iter()
        .filter(|l| state.avatars.contains(&l.id) && matches(l, &q))
        .collect();
    looks.sort_by(|a, b| order(a, b));
    let total = looks.len() as u64;
    let data = looks
        .into_iter()
        .skip(params.offset() as usize)
        .take(params.limit as usize)
        .map(|l| view(&state, l))
        .collect();
    Ok(Json(Page::new(data, params, total)))
}

/// Get an avatar
#[utoipa::path(get, path = "/v1/avatars/{id}", tag = "avatars", security(("bearer" = ["read"])),
    params(("id" = String, Path)),
    responses((status = 200, body = AvatarView), (status = 404, description = "`resource_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    _auth: Auth<Read>,
    Path(id): Path<String>,
) -> ApiResult<Json<AvatarView>> {
    CATALOG
        .iter()
        .find(|l| l.id == id && state.avatars.contains(&l.id))
        .map(|l| Json(view(&state, l)))
        .ok_or_else(|| ApiError::not_found("avatar", &id).into())
}
