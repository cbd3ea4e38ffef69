use axum::extract::State;
use axum::Json;
use mediagen_core::page::PageParams;
use mediagen_core::Page;
use serde::Serialize;

use crate::extract::{Auth, Read};
use crate::routes::ListEnvelope;
use crate::state::AppState;

/// An engine and what start-up found of it.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelView {
    /// Engine name, e.g. `piper`; `ctranslate2` or `whisper.cpp` for a
    /// speech-to-text model; `diffusion` for a neural image or sound model.
    pub engine: String,
    /// The model's name, for engines chosen by name (`model` of
    /// speech-to-text, image and sound generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
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

/// The job kinds that use a capability's engines.
fn job_kinds(capability: &str) -> &'static [&'static str] {
    match capability {
        "text-to-speech" => &["tts"],
        "speech-to-text" => &["stt"],
        "sound-generation" => &["sound"],
        "image-generation" => &["image"],
        "translation" => &["dubbing", "dubbing.edit"],
        _ => &[],
    }
}

/// Engines and models
///
/// What this server found at start-up: every engine, whether it is
/// available, and why not when it is missing; and the neural image and
/// sound models in the models directory now (`engine: diffusion`, picked
/// with `model`; docs/models.md).
#[utoipa::path(get, path = "/v1/models", tag = "voice", security(("bearer" = ["read"])),
    responses((status = 200, body = ListEnvelope<ModelView>)))]
pub async fn list(
    State(state): State<AppState>,
    _auth: Auth<Read>,
) -> crate::error::ApiResult<Json<Page<ModelView>>> {
    let live = state.live_kinds().await?;
    let mut data: Vec<ModelView> = state
        .catalog
        .models()
        .into_iter()
        .map(|s| ModelView {
            engine: s.engine,
            name: s.name,
            kind: s.kind,
            available: s.available,
            workers: false,
            voices: s.voices,
            detail: s.detail,
        })
        .collect();
    for model in &mut data {
        model.workers = job_kinds(&model.kind).iter().any(|k| live.contains(*k));
    }
    let n = data.len() as u64;
    let params = PageParams {
        page: 1,
        limit: n.max(1) as u32,
    };
    Ok(Json(Page::new(data, params, n)))
}
