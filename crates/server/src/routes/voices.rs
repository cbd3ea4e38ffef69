use std::cmp::Ordering;

use axum::extract::{Path, State};
use axum::Json;
use mediagen_core::page::RawPageQuery;
use mediagen_core::{ApiError, ErrorCode, Page};
use mediagen_engines::tts::VoiceInfo;
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;
use crate::extract::{ApiQuery, Auth, Read};
use crate::routes::previews::preview_url;
use crate::routes::{page_params, ListEnvelope};
use crate::state::AppState;

/// A voice.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoiceView {
    /// Stable opaque id (20 characters).
    pub id: String,
    pub name: String,
    /// BCP-47, e.g. `en-US`.
    pub language: String,
    pub languages: Vec<String>,
    /// `male`, `female` or `neutral`.
    pub gender: String,
    pub accent: Option<String>,
    /// `piper` or `espeak` (more engines join as they are installed).
    pub engine: String,
    /// `high`, `medium` or `low`.
    pub quality: String,
    /// Native sample rate, Hz.
    pub sample_rate: u32,
    pub description: String,
    /// A few seconds of the voice (mp3, signed URL, made on first use).
    pub preview_url: Option<String>,
    /// `premade` (the catalog) or `cloned` (the account's own voices).
    pub category: String,
}

impl VoiceView {
    fn new(state: &AppState, v: &VoiceInfo) -> Self {
        Self {
            id: v.id.clone(),
            name: v.name.clone(),
            language: v.language.clone(),
            languages: v.languages.clone(),
            gender: v.gender.clone(),
            accent: v.accent.clone(),
            engine: v.engine.to_owned(),
            quality: v.quality.to_owned(),
            sample_rate: v.sample_rate,
            description: v.description.clone(),
            preview_url: Some(preview_url(state, &v.id)),
            category: "premade".to_owned(),
        }
    }
}

#[derive(Deserialize)]
pub struct VoiceQuery {
    language: Option<String>,
    gender: Option<String>,
    engine: Option<String>,
    q: Option<String>,
    category: Option<String>,
    sort: Option<String>,
    #[serde(flatten)]
    page: RawPageQuery,
}

fn quality_rank(q: &str) -> u8 {
    match q {
        "high" => 0,
        "medium" => 1,
        _ => 2,
    }
}

/// Keeps the voices matching every given filter.
fn matches(v: &VoiceInfo, q: &VoiceQuery) -> bool {
    let lang_ok = q.language.as_deref().is_none_or(|want| {
        let want = want.to_ascii_lowercase();
        v.languages.iter().any(|l| {
            let l = l.to_ascii_lowercase();
            l == want || l.starts_with(&format!("{want}-"))
        })
    });
    let text_ok = q.q.as_deref().is_none_or(|needle| {
        let needle = needle.to_lowercase();
        v.name.to_lowercase().contains(&needle) || v.description.to_lowercase().contains(&needle)
    });
    lang_ok
        && text_ok
        && q.gender
            .as_deref()
            .is_none_or(|g| v.gender.eq_ignore_ascii_case(g))
        && q.engine
            .as_deref()
            .is_none_or(|e| v.engine.eq_ignore_ascii_case(e))
        && q.category.as_deref().is_none_or(|c| c == "premade")
}

/// List voices
///
/// The spec's voice listing (read-only keys may call it; it is the suggested
/// key test). Filters: `language` (BCP-47 prefix: `en` matches `en-US`),
/// `gender`, `engine`, `category`, `q` (name and description). `sort`:
/// `name` or `language`; default: best quality first, then name.
#[utoipa::path(get, path = "/v1/voices", tag = "voice", security(("bearer" = ["read"])),
    params(("language" = Option<String>, Query), ("gender" = Option<String>, Query), ("engine" = Option<String>, Query),
           ("category" = Option<String>, Query), ("q" = Option<String>, Query), ("sort" = Option<String>, Query),
           ("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<VoiceView>), (status = 400)))]
pub async fn list(
    State(state): State<AppState>,
    _auth: Auth<Read>,
    ApiQuery(q): ApiQuery<VoiceQuery>,
) -> ApiResult<Json<Page<VoiceView>>> {
    let params = page_params(&q.page)?;
    if let Some(g) = q.gender.as_deref() {
        if !["male", "female", "neutral"].contains(&g) {
            return Err(
                ApiError::invalid_parameter("gender", "must be male, female or neutral").into(),
            );
        }
    }
    if let Some(c) = q.category.as_deref() {
        if !["premade", "cloned"].contains(&c) {
            return Err(
                ApiError::invalid_parameter("category", "must be premade or cloned").into(),
            );
        }
    }
    let order: fn(&VoiceInfo, &VoiceInfo) -> Ordering = match q.sort.as_deref() {
        None => |a, b| {
            quality_rank(a.quality)
                .cmp(&quality_rank(b.quality))
                .then_with(|| a.name.cmp(&b.name))
        },
        Some("name") => |a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        Some("language") => |a, b| {
            a.language
                .cmp(&b.language)
                .then_with(|| a.name.cmp(&b.name))
        },
        Some(_) => {
            return Err(ApiError::invalid_parameter("sort", "must be name or language").into())
        }
    };
    let mut voices: Vec<&VoiceInfo> = state
        .tts
        .voices()
        .iter()
        .filter(|v| matches(v, &q))
        .collect();
    voices.sort_by(|a, b| order(a, b));
    let total = voices.len() as u64;
    let data = voices
        .into_iter()
        .skip(params.offset() as usize)
        .take(params.limit as usize)
        .map(|v| VoiceView::new(&state, v))
        .collect();
    Ok(Json(Page::new(data, params, total)))
}

/// Get a voice
#[utoipa::path(get, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["read"])),
    params(("id" = String, Path)), responses((status = 200, body = VoiceView), (status = 404, description = "`voice_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    _auth: Auth<Read>,
    Path(id): Path<String>,
) -> ApiResult<Json<VoiceView>> {
    let voice = state.tts.voice(&id).ok_or_else(|| {
        ApiError::new(ErrorCode::VoiceNotFound)
            .with_message(format!("No voice with id `{id}` exists."))
    })?;
    Ok(Json(VoiceView::new(&state, voice)))
}
