//! ElevenLabs' voice list and voice: the catalog and the account's cloned
//! voices in ElevenLabs' shape.

use axum::extract::{Path, State};
use axum::Json;
use mediagen_core::VoiceId;
use mediagen_jobs::elevenlabs::premade_voice;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;
use crate::voices::{all_voices, cloned_view, voice_not_found, VoiceView};

/// A voice as ElevenLabs describes one.
fn eleven_voice(v: VoiceView, voice_id: String) -> Value {
    json!({
        "voice_id": voice_id,
        "name": v.name,
        "category": v.category,
        "description": v.description,
        "preview_url": v.preview_url,
        "labels": {
            "gender": v.gender,
            "accent": v.accent,
            "language": v.language,
        },
        "verified_languages": v.languages.iter().map(|l| json!({"language": l})).collect::<Vec<_>>(),
        "settings": null,
        "available_for_tiers": [],
        "high_quality_base_model_ids": [],
    })
}

/// `GET /voices`: `{voices: [...]}`, every voice the account may use.
pub async fn list(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Value>> {
    let voices: Vec<Value> = all_voices(&state, &auth.account_id)
        .await?
        .into_iter()
        .map(|v| {
            let id = v.id.clone();
            eleven_voice(v, id)
        })
        .collect();
    Ok(Json(json!({ "voices": voices })))
}

/// `GET /voices/{voice_id}`: a voice of ours, or a premade ElevenLabs id
/// as the catalog voice it maps to (under the id asked for).
pub async fn get(
    State(state): State<AppState>,
    auth: Auth,
    Path(voice_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let catalog = state.catalog.voices.as_ref();
    if let Some(v) = catalog
        .voice(&voice_id)
        .or_else(|| premade_voice(catalog, &voice_id))
    {
        return Ok(Json(eleven_voice(VoiceView::new(&state, v), voice_id)));
    }
    let record = match VoiceId::parse(&voice_id) {
        Some(id) => state.db.voice(&auth.account_id, &id).await?,
        None => None,
    };
    let v = record.ok_or_else(|| voice_not_found(&voice_id))?;
    Ok(Json(eleven_voice(cloned_view(&state, v), voice_id)))
}
