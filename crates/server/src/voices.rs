//! The account's voices as the speech pipelines take them: a cloned voice
//! resolved for the key's account (its profile and base voice), shared by
//! every route that names a `voiceId` (text to speech, the voice changer,
//! dubbing) so none reaches into another route's module.

use mediagen_core::{AccountId, ApiError, VoiceId};
use mediagen_jobs::tts::ClonedVoice;
use mediagen_jobs::voice_clone::StoredVoice;

use crate::error::{ApiResult, Error};
use crate::state::AppState;

/// How a cloned voice of the account is spoken: its profile and base
/// voice (when the stored one is gone from the catalog, the first
/// candidate of its language and gender: choosing by measuring is a
/// worker's work). `None` for anything else (a catalog voice, or no voice:
/// the caller answers 404).
pub async fn cloned_voice(
    state: &AppState,
    account_id: &AccountId,
    id: &str,
) -> ApiResult<Option<ClonedVoice>> {
    if state.catalog.voice(id).is_some() {
        return Ok(None);
    }
    let Some(id) = VoiceId::parse(id) else {
        return Ok(None);
    };
    let Some(v) = state.db.voice(account_id, &id).await? else {
        return Ok(None);
    };
    let stored: StoredVoice = serde_json::from_value(v.profile).map_err(Error::internal)?;
    let base_voice_id = match stored.base_voice_id {
        Some(b) if state.catalog.voice(&b).is_some() => Some(b),
        _ => mediagen_core::voice::candidates(
            state.catalog.voices(),
            &stored.profile.gender,
            &v.language,
        )
        .first()
        .map(|c| c.id.clone()),
    };
    Ok(Some(ClonedVoice {
        base_voice_id,
        language: v.language,
        profile: stored.profile,
    }))
}

pub fn voice_not_found(id: &str) -> ApiError {
    ApiError::voice_not_found(id)
}
