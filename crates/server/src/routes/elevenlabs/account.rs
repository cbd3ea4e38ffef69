//! ElevenLabs' user and subscription, reporting the account's credits
//! (one credit is one character of speech, as ElevenLabs counts).

use axum::extract::State;
use axum::Json;
use mediagen_core::ApiError;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::state::AppState;

/// The account's credits as ElevenLabs' subscription: `character_count`
/// is what was used and is held now, `character_limit` that plus the
/// balance.
async fn subscription_of(state: &AppState, auth: &Auth) -> ApiResult<Value> {
    let a = state
        .db
        .account(&auth.account_id)
        .await?
        .ok_or_else(|| ApiError::not_found("account", &auth.account_id))?;
    let voices = state.db.voices(&auth.account_id).await?.len();
    let count = a.used + a.reserved;
    Ok(json!({
        "tier": "self-hosted",
        "status": "active",
        "character_count": count,
        "character_limit": count + a.balance,
        "can_extend_character_limit": false,
        "allowed_to_extend_character_limit": false,
        "next_character_count_reset_unix": null,
        "voice_slots_used": voices,
        "voice_limit": 1000,
        "voice_add_edit_counter": 0,
        "professional_voice_slots_used": 0,
        "professional_voice_slots_used_in_workspace": 0,
        "professional_voice_limit": 0,
        "can_extend_voice_limit": false,
        "can_use_instant_voice_cloning": true,
        "can_use_professional_voice_cloning": false,
    }))
}

/// `GET /user/subscription`.
pub async fn subscription(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Value>> {
    Ok(Json(subscription_of(&state, &auth).await?))
}

/// `GET /user`: the account, with its subscription.
pub async fn user(State(state): State<AppState>, auth: Auth) -> ApiResult<Json<Value>> {
    let subscription = subscription_of(&state, &auth).await?;
    Ok(Json(json!({
        "user_id": auth.account_id,
        "subscription": subscription,
        "is_new_user": false,
        "xi_api_key": null,
        "can_use_delayed_payment_methods": false,
        "is_onboarding_completed": true,
        "is_onboarding_checklist_completed": true,
    })))
}
