//! ElevenLabs' voice list and voice (the catalog and the account's cloned
//! voices in ElevenLabs' shape), and its text-to-voice design.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use mediagen_core::VoiceId;
use mediagen_jobs::elevenlabs::{
    elevenlabs_names, premade_voice, VoiceDesignBody, VoiceFromPreview,
};
use mediagen_jobs::voice_design::DesignRequest;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{output_bytes, run_to_end, JobSpec};
use crate::routes::{with_ignored, with_job};
use crate::state::AppState;
use crate::voices::{all_voices, cloned_view, keep_design, voice_not_found, VoiceView};

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

/// `POST /text-to-voice/design`: three previews of a described voice,
/// each its audio in base64 and the `generated_voice_id` it is kept by.
pub async fn design(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(body): ApiJson<VoiceDesignBody>,
) -> ApiResult<Response> {
    let (body, ignored) = body.parse();
    let req =
        DesignRequest::parse(body, state.catalog.voices.as_ref()).map_err(elevenlabs_names)?;
    let job = run_to_end(&state, &auth, opts, JobSpec::of(&req, false)?).await?;
    let result = job.result.clone().unwrap_or_default();
    let empty = Vec::new();
    let mut previews = Vec::new();
    for (i, p) in result["previews"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .enumerate()
    {
        let (audio, media_type) =
            output_bytes(&state, &job, &format!("/previews/{i}/audioUrl")).await?;
        previews.push(json!({
            "audio_base_64": base64::engine::general_purpose::STANDARD.encode(&audio),
            "generated_voice_id": p["designId"],
            "media_type": media_type,
            "duration_secs": p["duration"],
            "language": p["language"].as_str().and_then(|l| l.split('-').next()),
        }));
    }
    let body = json!({ "previews": previews, "text": result["text"] });
    Ok(with_ignored(
        with_job(Json(body).into_response(), &job.id),
        &ignored,
    ))
}

/// `POST /text-to-voice`: a preview kept as a voice of the account, in
/// ElevenLabs' shape.
pub async fn create_from_design(
    State(state): State<AppState>,
    auth: Auth,
    ApiJson(body): ApiJson<VoiceFromPreview>,
) -> ApiResult<Response> {
    let (body, ignored) = body.parse();
    let record = keep_design(&state, &auth.account_id, body).await?;
    let id = record.id.to_string();
    let voice = eleven_voice(cloned_view(&state, record), id);
    Ok(with_ignored(Json(voice).into_response(), &ignored))
}
