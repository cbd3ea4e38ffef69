use axum::extract::{Path, State};
use axum::Json;
use mediagen_core::page::PageParams;
use mediagen_core::{ApiError, Capability, ErrorCode, JobKind, Page, Pagination};
use mediagen_jobs::openai::models::{aliases, model_ids};
use serde::Serialize;

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;

/// A model: an engine and what start-up found of it, or one of OpenAI's
/// model names and the model of ours that serves it. It has both our
/// fields and OpenAI's (`id`, `object`, `created`, `owned_by`).
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelView {
    /// What `model` of a request names it by: its name, its engine's name
    /// where it has none (`kokoro`), or the name with its medium where two
    /// share it (`embedded-image`); OpenAI's names as they are (`tts-1`).
    pub id: String,
    /// Always `model`.
    #[schema(value_type = String, example = "model")]
    pub object: &'static str,
    /// When this server loaded it, Unix seconds.
    pub created: i64,
    /// `mediagen`; `openai` for OpenAI's names.
    #[serde(rename = "owned_by")]
    #[schema(rename = "owned_by")]
    pub owned_by: &'static str,
    /// Engine name, e.g. `piper`; `ctranslate2` or `whisper.cpp` for a
    /// speech-to-text model; `diffusion` for a neural image or sound model;
    /// `openai` for OpenAI's names.
    pub engine: String,
    /// The model's name, for engines chosen by name (`model` of
    /// speech-to-text, image and sound generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For OpenAI's names: the `id` of the model of ours that serves it
    /// (absent when this server has none for the capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    /// Capability, e.g. `text-to-speech`.
    pub kind: String,
    pub available: bool,
    /// A live worker (of any process) runs this capability's jobs now;
    /// without one they wait queued.
    pub workers: bool,
    pub voices: usize,
    /// Where it was loaded from, or why it is missing.
    pub detail: String,
}

/// OpenAI's list shape (`object: "list"`) around our list envelope.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ModelList {
    /// Always `list`.
    #[schema(value_type = String, example = "list")]
    pub object: &'static str,
    pub data: Vec<ModelView>,
    pub pagination: Pagination,
}

/// Every model: ours, then OpenAI's names.
async fn all(state: &AppState) -> ApiResult<Vec<ModelView>> {
    let live = state.live_kinds().await?;
    let models = state.catalog.models.models();
    let ids = model_ids(&models);
    // A model has a live worker when some worker claims a kind that runs
    // on it; OpenAI's names, when one claims a kind of their capability.
    let live_for = |kinds: &[JobKind]| kinds.iter().any(|k| live.contains(k));
    let capability_live = |capability: Capability| {
        models
            .iter()
            .any(|m| m.kind == capability && live_for(&m.job_kinds))
    };
    let mut data: Vec<ModelView> = models
        .iter()
        .cloned()
        .zip(ids)
        .map(|(s, id)| ModelView {
            workers: live_for(&s.job_kinds),
            id,
            object: "model",
            created: state.started,
            owned_by: "mediagen",
            engine: s.engine,
            name: s.name,
            alias_of: None,
            kind: s.kind.to_string(),
            available: s.available,
            voices: s.voices,
            detail: s.detail,
        })
        .collect();
    for alias in aliases(&state.catalog) {
        let detail = match &alias.serves {
            Some(ours) => format!("OpenAI's name; served by `{ours}`"),
            None => "OpenAI's name; no model of this capability is installed here".into(),
        };
        data.push(ModelView {
            id: alias.id.to_owned(),
            object: "model",
            created: state.started,
            owned_by: "openai",
            engine: "openai".into(),
            name: Some(alias.id.to_owned()),
            available: alias.serves.is_some(),
            alias_of: alias.serves,
            kind: alias.kind.to_string(),
            workers: capability_live(alias.kind),
            voices: 0,
            detail,
        });
    }
    Ok(data)
}

/// Engines and models
///
/// What this server found at start-up: every engine, whether it is
/// available, and why not when it is missing; the neural image and sound
/// models in the models directory now (`engine: diffusion`, picked with
/// `model`); and OpenAI's model names (`tts-1`,
/// `tts-1-hd`, `gpt-4o-mini-tts`, `whisper-1`, `gpt-4o-transcribe`,
/// `gpt-4o-mini-transcribe`, `dall-e-2`, `dall-e-3`, `gpt-image-1`), each
/// with `aliasOf`, the model of ours that serves it. Both our list
/// envelope and OpenAI's list shape (`object: "list"`; every item has
/// `id`, `object`, `created`, `owned_by`). One page holds them all.
#[utoipa::path(get, path = "/v1/models", tag = "voice", security(("bearer" = ["read"])),
    responses((status = 200, body = ModelList)))]
pub async fn list(State(state): State<AppState>, _auth: Auth) -> ApiResult<Json<ModelList>> {
    let data = all(&state).await?;
    let n = data.len() as u64;
    let params = PageParams {
        page: 1,
        limit: n.max(1) as u32,
    };
    let page = Page::new(data, params, n);
    Ok(Json(ModelList {
        object: "list",
        data: page.data,
        pagination: page.pagination,
    }))
}

/// One model
///
/// A model of `GET /v1/models` by its `id` (OpenAI's `models.retrieve`).
#[utoipa::path(get, path = "/v1/models/{id}", tag = "voice", security(("bearer" = ["read"])),
    params(("id" = String, Path)),
    responses((status = 200, body = ModelView), (status = 404, description = "`resource_not_found`")))]
pub async fn get(
    State(state): State<AppState>,
    _auth: Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<ModelView>> {
    all(&state)
        .await?
        .into_iter()
        .find(|m| m.id == id)
        .map(Json)
        .ok_or_else(|| {
            ApiError::new(ErrorCode::ResourceNotFound)
                .with_message("No model has this id (GET /v1/models lists them).")
                .into()
        })
}
