use std::cmp::Ordering;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use mediagen_core::ids::new_id;
use mediagen_core::page::RawPageQuery;
use mediagen_core::time::now_ms;
use mediagen_core::{ApiError, ErrorCode, Page};
use mediagen_engines::audio::resample_linear;
use mediagen_engines::media::{decode_mono, encode};
use mediagen_engines::stt::detect_language;
use mediagen_engines::tts::VoiceInfo;
use mediagen_engines::voice::{analyse, check_sample, VoiceProfile, RATE};
use mediagen_engines::{Audio, AudioFormat};
use mediagen_pipelines::tts::ClonedVoice;
use mediagen_store::{VoiceChanges, VoiceRecord};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{ApiResult, Error};
use crate::extract::{ApiJson, ApiQuery, Auth, Read, Write};
use crate::jobs::signed_url;
use mediagen_pipelines::limits;

use crate::media_input::probe_upload;
use crate::routes::previews::preview_url;
use crate::routes::{clean_labels, form_labels, page_params, ListEnvelope};
use crate::state::AppState;
use crate::upload::MultipartForm;

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
    /// A cloned voice's labels (empty for the catalog).
    pub labels: Vec<String>,
    /// A cloned voice's analysed profile (`null` for the catalog).
    #[schema(value_type = Option<Object>)]
    pub profile: Option<VoiceProfile>,
    /// The catalog voice a cloned voice speaks text with before it is
    /// converted toward the profile (the closest one in its language;
    /// `null` for the catalog, or when no catalog voice speaks it).
    pub base_voice_id: Option<String>,
}

/// A cloned voice's stored profile and the base voice chosen for it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(flatten)]
    profile: VoiceProfile,
    #[serde(default)]
    base_voice_id: Option<String>,
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
            labels: Vec::new(),
            profile: None,
            base_voice_id: None,
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
fn matches(v: &VoiceView, q: &VoiceQuery) -> bool {
    let lang_ok = q.language.as_deref().is_none_or(|want| {
        let want = want.to_ascii_lowercase();
        v.languages.iter().any(|l| {
            let l = l.to_ascii_lowercase();
            l == want || l.starts_with(&format!("{want}-"))
        })
    });
    let text_ok = q.q.as_deref().is_none_or(|needle| {
        let needle = needle.to_lowercase();
        v.name.to_lowercase().contains(&needle)
            || v.description.to_lowercase().contains(&needle)
            || v.labels.iter().any(|l| l.contains(needle.as_str()))
    });
    lang_ok
        && text_ok
        && q.gender
            .as_deref()
            .is_none_or(|g| v.gender.eq_ignore_ascii_case(g))
        && q.engine
            .as_deref()
            .is_none_or(|e| v.engine.eq_ignore_ascii_case(e))
        && q.category.as_deref().is_none_or(|c| c == v.category)
}

/// List voices
///
/// The spec's voice listing (read-only keys may call it; it is the suggested
/// key test): the catalog and the account's cloned voices. Filters:
/// `language` (BCP-47 prefix: `en` matches `en-US`), `gender`, `engine`,
/// `category` (premade, cloned), `q` (name, description, labels). `sort`:
/// `name` or `language`; default: best quality first, then name.
#[utoipa::path(get, path = "/v1/voices", tag = "voice", security(("bearer" = ["read"])),
    params(("language" = Option<String>, Query), ("gender" = Option<String>, Query), ("engine" = Option<String>, Query),
           ("category" = Option<String>, Query), ("q" = Option<String>, Query), ("sort" = Option<String>, Query),
           ("page" = Option<u32>, Query), ("limit" = Option<u32>, Query)),
    responses((status = 200, body = ListEnvelope<VoiceView>), (status = 400)))]
pub async fn list(
    State(state): State<AppState>,
    auth: Auth<Read>,
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
        if !LIST_CHOICES[0].1.contains(&c) {
            let allowed = LIST_CHOICES[0].1.join(" or ");
            return Err(
                ApiError::invalid_parameter("category", format!("must be {allowed}")).into(),
            );
        }
    }
    let order: fn(&VoiceView, &VoiceView) -> Ordering = match q.sort.as_deref() {
        None => |a, b| {
            quality_rank(&a.quality)
                .cmp(&quality_rank(&b.quality))
                .then_with(|| a.name.cmp(&b.name))
        },
        Some("name") => |a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        Some("language") => |a, b| {
            a.language
                .cmp(&b.language)
                .then_with(|| a.name.cmp(&b.name))
        },
        Some(_) => {
            let allowed = LIST_CHOICES[1].1.join(" or ");
            return Err(ApiError::invalid_parameter("sort", format!("must be {allowed}")).into());
        }
    };
    let mut voices: Vec<VoiceView> = all_voices(&state, &auth.account_id)
        .await?
        .into_iter()
        .filter(|v| matches(v, &q))
        .collect();
    voices.sort_by(order);
    let total = voices.len() as u64;
    let data = voices
        .into_iter()
        .skip(params.offset() as usize)
        .take(params.limit as usize)
        .collect();
    Ok(Json(Page::new(data, params, total)))
}

/// Get a voice
#[utoipa::path(get, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["read"])),
    params(("id" = String, Path)), responses((status = 200, body = VoiceView), (status = 404, description = "`voice_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    auth: Auth<Read>,
    Path(id): Path<String>,
) -> ApiResult<Json<VoiceView>> {
    if let Some(voice) = state.tts.voice(&id) {
        return Ok(Json(VoiceView::new(&state, voice)));
    }
    let v = state
        .db
        .voice(&auth.account_id, &id)
        .await?
        .ok_or_else(|| voice_not_found(&id))?;
    Ok(Json(cloned_view(&state, v)))
}

/// A cloned voice as the catalog shows it.
fn cloned_view(state: &AppState, v: VoiceRecord) -> VoiceView {
    let expires = now_ms() / 1000 + state.config.url_ttl_seconds as i64;
    let stored: Option<Stored> = serde_json::from_value(v.profile).ok();
    let (profile, base_voice_id) = match stored {
        Some(s) => (Some(s.profile), s.base_voice_id),
        None => (None, None),
    };
    VoiceView {
        preview_url: Some(signed_url(state, &v.preview_key, expires)),
        id: v.id,
        name: v.name,
        languages: vec![v.language.clone()],
        language: v.language,
        gender: v.gender,
        accent: None,
        engine: "world".to_owned(),
        quality: "medium".to_owned(),
        sample_rate: RATE,
        description: v.description,
        category: "cloned".to_owned(),
        labels: v.labels,
        profile,
        base_voice_id,
    }
}

/// Every voice the account may use: the catalog and its cloned voices.
async fn all_voices(state: &AppState, account_id: &str) -> ApiResult<Vec<VoiceView>> {
    let cloned = state.db.voices(account_id).await?;
    Ok(state
        .tts
        .voices()
        .iter()
        .map(|v| VoiceView::new(state, v))
        .chain(cloned.into_iter().map(|v| cloned_view(state, v)))
        .collect())
}

/// How a cloned voice of the account is spoken: its profile and base
/// voice (chosen again if the stored one is gone). `None` for anything
/// else (a catalog voice, or no voice: the caller answers 404).
pub async fn cloned_voice(
    state: &AppState,
    account_id: &str,
    id: &str,
) -> ApiResult<Option<ClonedVoice>> {
    if state.tts.voice(id).is_some() {
        return Ok(None);
    }
    let Some(v) = state.db.voice(account_id, id).await? else {
        return Ok(None);
    };
    let stored: Stored = serde_json::from_value(v.profile).map_err(Error::internal)?;
    let base_voice_id = match stored.base_voice_id {
        Some(b) if state.tts.voice(&b).is_some() => Some(b),
        _ => closest_voice(state, &stored.profile, &v.language).await?,
    };
    Ok(Some(ClonedVoice {
        base_voice_id,
        language: v.language,
        profile: stored.profile,
    }))
}

/// The catalog voice closest to `profile` in `language` (measuring
/// catalog voices on first use, off the async runtime).
async fn closest_voice(
    state: &AppState,
    profile: &VoiceProfile,
    language: &str,
) -> ApiResult<Option<String>> {
    let (catalog, profile, language) = (state.tts.clone(), profile.clone(), language.to_owned());
    tokio::task::spawn_blocking(move || catalog.closest(&profile, &language).map(|v| v.id.clone()))
        .await
        .map_err(Error::internal)
}

/// The language of a sample (24 kHz) as the recogniser hears it (ISO
/// 639-1), or `en` when no recogniser is installed.
async fn sample_language(state: &AppState, sample: &[f32]) -> ApiResult<String> {
    let Some(model) = state.stt.model(None) else {
        return Ok("en".to_owned());
    };
    let stt = state.stt.clone();
    let pcm = resample_linear(
        &sample[..sample.len().min(30 * RATE as usize)],
        RATE,
        16_000,
    );
    let (code, _) =
        tokio::task::spawn_blocking(move || detect_language(model.as_ref(), stt.gate(), &pcm))
            .await
            .map_err(Error::internal)?
            .map_err(Error::internal)?;
    Ok(code)
}

pub fn voice_not_found(id: &str) -> ApiError {
    ApiError::new(ErrorCode::VoiceNotFound)
        .with_message(format!("No voice with id `{id}` exists."))
        .with_detail("parameter", "voiceId")
}

/// Total seconds of samples a cloned voice needs, and takes at most.
const MIN_SAMPLE_SECONDS: f64 = 10.0;
const MAX_SAMPLE_SECONDS: f64 = 300.0;

fn too_long_samples(seconds: f64) -> ApiError {
    ApiError::unprocessable(
        "files",
        format!("the samples must last {MIN_SAMPLE_SECONDS} s to {MAX_SAMPLE_SECONDS} s in total (these: {seconds:.1} s)"),
    )
    .with_detail("limit", "max_seconds")
    .with_detail("maximum", MAX_SAMPLE_SECONDS)
}

fn check_name(name: &str) -> ApiResult<String> {
    let name = super::trim_spaces(name);
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::invalid_parameter("name", "must be 1 to 100 characters").into());
    }
    Ok(name.to_owned())
}

/// The values the voice list's filters take (also written into the
/// document's parameters).
pub const LIST_CHOICES: [(&str, &[&str]); 2] = [
    ("category", &["premade", "cloned"]),
    ("sort", &["name", "language"]),
];

/// Clone a voice
///
/// `multipart/form-data`: `name` (required), one or more `files` parts of
/// the target speaker (audio or video, 10 s to 5 min in total), `consent`
/// (required, `true`: the speaker agreed to having their voice cloned),
/// optional `description`, `labels` (comma-separated or a JSON list) and
/// `language` (BCP-47; omitted or `auto`: detected by the recogniser on
/// the first sample). Each sample is decoded and checked: silent, clipped
/// or not speech → 422 `unprocessable_entity` naming the file
/// (`details.index`); too little or too much in total → 422. The samples
/// are analysed into a voice profile (median pitch and its spread,
/// spectral centroid, speaking rate, a gender estimate), returned as
/// `profile`, and the closest catalog voice of its language becomes its
/// `baseVoiceId`. The voice joins the account's `GET /v1/voices` as
/// `category: cloned`, visible to its keys only, and is a `voiceId` for
/// `POST /v1/text-to-speech` (the base voice converted toward the
/// profile) and `POST /v1/voice-changer`.
#[utoipa::path(post, path = "/v1/voices", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((crate::forms::VoiceCloneForm = "multipart/form-data"))),
    responses((status = 201, body = VoiceView), (status = 400), (status = 415), (status = 422)))]
pub async fn create(
    State(state): State<AppState>,
    auth: Auth<Write>,
    mut form: MultipartForm,
) -> ApiResult<(StatusCode, Json<VoiceView>)> {
    let fields = std::mem::take(&mut form.fields);
    if let Some(key) = fields
        .keys()
        .find(|k| !["name", "description", "labels", "language", "consent"].contains(&k.as_str()))
    {
        return Err(ApiError::invalid_parameter(key, "unknown parameter").into());
    }
    let name = check_name(fields.get("name").map_or("", String::as_str))?;
    if fields.get("consent").map(|c| c.trim()) != Some("true") {
        return Err(ApiError::invalid_parameter(
            "consent",
            "required: `true`, confirming the speaker agreed to having their voice cloned",
        )
        .into());
    }
    let description = fields
        .get("description")
        .map(|d| d.trim().to_owned())
        .unwrap_or_default();
    if description.chars().count() > 500 {
        return Err(ApiError::invalid_parameter("description", "at most 500 characters").into());
    }
    let labels = match fields.get("labels") {
        None => Vec::new(),
        Some(raw) => clean_labels(form_labels(raw)?)?,
    };
    let language = match fields.get("language").map(|l| l.trim()) {
        None | Some("") | Some("auto") => None,
        Some(l) if l.len() <= 35 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            Some(l.to_owned())
        }
        Some(_) => {
            return Err(ApiError::invalid_parameter(
                "language",
                "must be a BCP-47 tag such as en or es-ES, or auto",
            )
            .into())
        }
    };
    let uploads = form.files.remove("files").unwrap_or_default();
    if uploads.is_empty() {
        return Err(
            ApiError::invalid_parameter("files", "one or more sample files are required").into(),
        );
    }
    // Every sample is probed and the total length checked before any is
    // decoded; decoding stops at the length the probe gave.
    let mut probed = Vec::new();
    for upload in &uploads {
        probed.push(probe_upload(upload, "files", &limits::VOICE_SAMPLE).await?);
    }
    let claimed: f64 = probed.iter().map(|p| p.duration).sum();
    if claimed > MAX_SAMPLE_SECONDS + 1.0 {
        return Err(too_long_samples(claimed).into());
    }
    let mut samples = Vec::new();
    for (i, (upload, p)) in uploads.iter().zip(&probed).enumerate() {
        let (path, max, demuxer) = (upload.file.path().to_owned(), p.duration + 0.5, p.demuxer);
        let decoded = tokio::task::spawn_blocking(move || decode_mono(&path, demuxer, RATE, max))
            .await
            .map_err(Error::internal)?
            .map_err(|e| {
                tracing::info!(index = i, error = %e, "a voice sample did not decode");
                ApiError::unprocessable("files", format!("sample {i} cannot be decoded"))
            })?;
        if let Err(problem) = check_sample(&decoded) {
            return Err(ApiError::new(ErrorCode::UnprocessableEntity)
                .with_message(format!("Sample {i}: {problem}."))
                .with_detail("parameter", "files")
                .with_detail("index", i)
                .with_detail("reason", problem.to_string())
                .into());
        }
        samples.push(decoded);
    }
    let seconds: f64 = samples
        .iter()
        .map(|s| s.len() as f64 / f64::from(RATE))
        .sum();
    if !(MIN_SAMPLE_SECONDS..=MAX_SAMPLE_SECONDS).contains(&seconds) {
        return Err(too_long_samples(seconds).into());
    }
    // The preview: the first 10 s of the first sample (the language is
    // heard on its first 30 s).
    let preview: Vec<f32> = samples[0]
        .iter()
        .take(10 * RATE as usize)
        .copied()
        .collect();
    let first: Vec<f32> = samples[0]
        .iter()
        .take(30 * RATE as usize)
        .copied()
        .collect();
    let (profile, preview) = tokio::task::spawn_blocking(move || {
        (
            analyse(&samples),
            encode(&Audio::new(preview, RATE), AudioFormat::Mp3, RATE),
        )
    })
    .await
    .map_err(Error::internal)?;
    let profile = profile.map_err(|p| ApiError::unprocessable("files", p.to_string()))?;
    let preview = preview.map_err(Error::internal)?;
    let language = match language {
        Some(l) => l,
        None => sample_language(&state, &first).await?,
    };
    let base_voice_id = closest_voice(&state, &profile, &language).await?;
    let id = new_id("voice");
    let account = &auth.account_id;
    let preview_key = format!("voices/{account}/{id}.mp3");
    state.blobs.put(&preview_key, preview.into()).await?;
    let record = VoiceRecord {
        id,
        account_id: account.clone(),
        name,
        description,
        labels,
        language,
        gender: profile.gender.clone(),
        profile: serde_json::to_value(Stored {
            profile,
            base_voice_id,
        })
        .map_err(Error::internal)?,
        preview_key,
        created_at: 0,
    };
    let record = state.db.create_voice(record).await?;
    Ok((StatusCode::CREATED, Json(cloned_view(&state, record))))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoicePatch {
    /// 1–100 characters (not only spaces).
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    name: Option<String>,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    description: Option<String>,
    #[schema(schema_with = super::labels_schema)]
    labels: Option<Vec<String>>,
}

/// Update a cloned voice
///
/// Renames a cloned voice or changes its `description` or `labels`
/// (catalog voices cannot be changed: 404).
#[utoipa::path(patch, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["write"])),
    params(("id" = String, Path)), request_body = VoicePatch,
    responses((status = 200, body = VoiceView), (status = 400), (status = 404)))]
pub async fn update(
    State(state): State<AppState>,
    auth: Auth<Write>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<VoicePatch>,
) -> ApiResult<Json<VoiceView>> {
    let description = body.description.map(|d| d.trim().to_owned());
    if description
        .as_ref()
        .is_some_and(|d| d.chars().count() > 500)
    {
        return Err(ApiError::invalid_parameter("description", "at most 500 characters").into());
    }
    let changes = VoiceChanges {
        name: body.name.as_deref().map(check_name).transpose()?,
        description,
        labels: body.labels.map(clean_labels).transpose()?,
    };
    let v = state
        .db
        .update_voice(&auth.account_id, &id, changes)
        .await?
        .ok_or_else(|| voice_not_found(&id))?;
    Ok(Json(cloned_view(&state, v)))
}

/// Delete a cloned voice
#[utoipa::path(delete, path = "/v1/voices/{id}", tag = "voice", security(("bearer" = ["write"])),
    params(("id" = String, Path)),
    responses((status = 200, description = "`{id, deleted: true}`"), (status = 404)))]
pub async fn delete(
    State(state): State<AppState>,
    auth: Auth<Write>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let v = state
        .db
        .delete_voice(&auth.account_id, &id)
        .await?
        .ok_or_else(|| voice_not_found(&id))?;
    state.blobs.delete(&v.preview_key).await?;
    Ok(Json(json!({ "id": v.id, "deleted": true })))
}
