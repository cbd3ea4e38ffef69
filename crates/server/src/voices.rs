//! The account's voices as the speech pipelines take them: a cloned voice
//! resolved for the key's account (its profile and base voice), shared by
//! every route that names a `voiceId` (text to speech, the voice changer,
//! dubbing) so none reaches into another route's module.

use mediagen_core::page::RawPageQuery;
use mediagen_core::time::now_ms;
use mediagen_core::voice::{
    candidates, styled_languages, styled_speaker, VoiceInfo, VoiceProfile, CONVERSION_RATE as RATE,
};
use mediagen_core::{AccountId, ApiError, VoiceId};
use mediagen_store::VoiceRecord;
use serde::{Deserialize, Serialize};

use crate::jobs::signed_url;
use crate::routes::previews::preview_url;
use mediagen_jobs::tts::ClonedVoice;
use mediagen_jobs::voice_clone::{StoredVoice, VoiceSimilarity};

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
    if state.catalog.voices.voice(id).is_some() {
        return Ok(None);
    }
    let Some(id) = VoiceId::parse(id) else {
        return Ok(None);
    };
    let Some(v) = state.db.voice(account_id, &id).await? else {
        return Ok(None);
    };
    let stored: StoredVoice = serde_json::from_value(v.profile).map_err(Error::internal)?;
    // A neural clone is spoken by an engine with style tables (Kokoro).
    let neural = stored.neural.is_some();
    let base_voice_id = match stored.base_voice_id {
        Some(b) if state.catalog.voices.voice(&b).is_some() => Some(b),
        _ => {
            let voices = state.catalog.voices.voices();
            let (gender, language) = (&stored.profile.gender, &v.language);
            if neural {
                styled_speaker(voices, gender, language)
            } else {
                candidates(voices, gender, language).first().copied()
            }
            .map(|c| c.id.clone())
        }
    };
    Ok(Some(ClonedVoice {
        base_voice_id,
        language: v.language,
        profile: stored.profile,
        neural: stored.neural,
    }))
}

pub fn voice_not_found(id: &str) -> ApiError {
    ApiError::voice_not_found(id)
}

/// A voice.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoiceView {
    /// Stable opaque id (20 characters).
    pub id: String,
    pub name: String,
    /// BCP-47, e.g. `en-US`.
    pub language: String,
    /// Every language it speaks (`language` first): a neural clone's are
    /// all of Kokoro's (`languageCode` of text-to-speech picks one).
    pub languages: Vec<String>,
    /// `male`, `female` or `neutral`.
    pub gender: String,
    pub accent: Option<String>,
    /// `kokoro`, `piper` or `espeak` (more engines join as they are
    /// installed).
    pub engine: String,
    /// The engine's own name for a catalog voice (`af_heart`,
    /// `en_US-lessac-medium`), which the CLI's `--voice` also takes; `null`
    /// for cloned voices.
    pub engine_voice: Option<String>,
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
    /// The catalog voice a cloned voice speaks with: a neural clone (engine
    /// `kokoro`) speaks its own style table in this voice's language and
    /// phonemes; a WORLD clone is this voice converted toward the profile
    /// (the closest one in its language). `null` for the catalog, or when
    /// no catalog voice speaks it.
    pub base_voice_id: Option<String>,
    /// A cloned voice's measured likeness to its samples:
    /// `{samples, base}`, cosine similarities of speaker embeddings (1 is
    /// the same direction) of its speech and of its base voice against the
    /// samples; for a neural clone also `heldOut`: `{clone, bestStock,
    /// bestStockVoiceId, world, coloured, pitch, formant, searchSeconds,
    /// heldOutSeconds}`, the likeness to samples the search did not use of
    /// the clone (at the pitch, formants and colour most alike there), the
    /// most alike stock voice and the WORLD clone, on sentences the search
    /// did not hear; whether the clone is spoken
    /// through the samples' recording colour, and the factors its pitch
    /// and its formants are spoken at. `null` for the catalog. Cosines of speaker embeddings: 0.9
    /// and more is the same voice, 0.5–0.65 different people.
    #[schema(value_type = Option<Object>)]
    pub similarity: Option<VoiceSimilarity>,
}

impl VoiceView {
    pub fn new(state: &AppState, v: &VoiceInfo) -> Self {
        Self {
            id: v.id.clone(),
            name: v.name.clone(),
            language: v.language.clone(),
            languages: v.languages.clone(),
            gender: v.gender.clone(),
            accent: v.accent.clone(),
            engine: v.engine.to_owned(),
            engine_voice: Some(v.key.clone()),
            quality: v.quality.to_owned(),
            sample_rate: v.sample_rate,
            description: v.description.clone(),
            preview_url: Some(preview_url(state, &v.id)),
            category: "premade".to_owned(),
            labels: Vec::new(),
            profile: None,
            base_voice_id: None,
            similarity: None,
        }
    }
}

#[derive(Deserialize)]
pub struct VoiceQuery {
    pub language: Option<String>,
    pub gender: Option<String>,
    pub engine: Option<String>,
    pub q: Option<String>,
    pub category: Option<String>,
    pub sort: Option<String>,
    #[serde(flatten)]
    pub page: RawPageQuery,
}

pub fn quality_rank(q: &str) -> u8 {
    match q {
        "high" => 0,
        "medium" => 1,
        _ => 2,
    }
}

/// Keeps the voices matching every given filter.
pub fn matches(v: &VoiceView, q: &VoiceQuery) -> bool {
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
            || v.engine_voice
                .as_ref()
                .is_some_and(|k| k.to_lowercase().contains(&needle))
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

/// A cloned voice as the catalog shows it.
pub fn cloned_view(state: &AppState, v: VoiceRecord) -> VoiceView {
    let expires = now_ms() / 1000 + state.config.url_ttl_seconds as i64;
    let stored: Option<StoredVoice> = serde_json::from_value(v.profile).ok();
    let neural = stored.as_ref().is_some_and(|s| s.neural.is_some());
    let (profile, base_voice_id, similarity) = match stored {
        Some(s) => (Some(s.profile), s.base_voice_id, s.similarity),
        None => (None, None, None),
    };
    // A neural clone speaks through Kokoro (24 kHz); a WORLD clone is its
    // base voice converted (at the conversion rate, also 24 kHz).
    let (engine, quality) = if neural {
        ("kokoro", "high")
    } else {
        ("world", "medium")
    };
    // A neural clone speaks every language Kokoro has (`languageCode`):
    // its own first.
    let mut languages = vec![v.language.clone()];
    if neural {
        let own = v.language.get(..2).unwrap_or_default().to_ascii_lowercase();
        languages.extend(
            styled_languages(state.catalog.voices.voices())
                .into_iter()
                .filter(|l| *l != own),
        );
    }
    VoiceView {
        preview_url: Some(signed_url(state, &v.preview_key, expires)),
        id: v.id.into(),
        name: v.name,
        languages,
        language: v.language,
        gender: v.gender,
        accent: None,
        engine: engine.to_owned(),
        engine_voice: None,
        quality: quality.to_owned(),
        sample_rate: RATE,
        description: v.description,
        category: "cloned".to_owned(),
        labels: v.labels,
        profile,
        base_voice_id,
        similarity,
    }
}

/// Every voice the account may use: the catalog and its cloned voices.
pub async fn all_voices(state: &AppState, account_id: &AccountId) -> ApiResult<Vec<VoiceView>> {
    let cloned = state.db.voices(account_id).await?;
    Ok(state
        .catalog
        .voices
        .voices()
        .iter()
        .map(|v| VoiceView::new(state, v))
        .chain(cloned.into_iter().map(|v| cloned_view(state, v)))
        .collect())
}

/// Keeps preview `body.designId` of a voice design of the account as its
/// voice: the design's table and preview are copied beside its voices and
/// the voice recorded as a neural clone is (`category: cloned`, spoken
/// everywhere a clone is). 404 for a design that is not the account's, or
/// whose job is gone or not completed.
pub async fn keep_design(
    state: &AppState,
    account_id: &AccountId,
    body: mediagen_jobs::voice_design::KeepBody,
) -> ApiResult<VoiceRecord> {
    use mediagen_core::{JobKind, JobStatus};
    use mediagen_jobs::voice_clone::{cloned_preview_key, cloned_styles_key, NeuralStyle};
    use mediagen_jobs::voice_design::DesignId;
    let meta = crate::routes::described(
        Some(&body.name),
        body.description.as_deref(),
        body.labels,
        true,
    )?;
    let id = DesignId::parse(&body.design_id)?;
    let not_found = || Error::from(ApiError::not_found("design", &body.design_id));
    let job = state
        .db
        .job(account_id, &id.job)
        .await?
        .filter(|j| j.kind == JobKind::VoiceDesign && j.status == JobStatus::Completed)
        .ok_or_else(not_found)?;
    let result = job.result.unwrap_or_default();
    let preview = &result["previews"][id.index];
    let number = |k: &str| preview[k].as_f64().unwrap_or(1.0) as f32;
    let profile: VoiceProfile =
        serde_json::from_value(preview["profile"].clone()).map_err(|_| not_found())?;
    let (Some(base), Some(language)) = (
        preview["baseVoiceId"].as_str(),
        preview["language"].as_str(),
    ) else {
        return Err(not_found());
    };
    let voice_id = VoiceId::random();
    let (account, voice) = (account_id.as_str(), voice_id.as_str());
    let read = |key: String| async move {
        match state.blobs.get_bytes(&key).await {
            Ok(bytes) => Ok(bytes),
            Err(mediagen_store::BlobError::NotFound) => Err(not_found()),
            Err(e) => Err(Error::from(e)),
        }
    };
    let styles = read(id.styles_key()).await?;
    let mp3 = read(format!("jobs/{}/{}", id.job, id.preview_name())).await?;
    let styles_key = cloned_styles_key(account, voice);
    let preview_key = cloned_preview_key(account, voice);
    state.blobs.put(&styles_key, styles).await?;
    state.blobs.put(&preview_key, mp3).await?;
    let stored = StoredVoice {
        base_voice_id: Some(base.to_owned()),
        profile: profile.clone(),
        similarity: None,
        neural: Some(NeuralStyle {
            styles_key,
            pitch: number("pitch"),
            formant: number("formant"),
            pace: number("pace"),
            colour: Vec::new(),
        }),
    };
    let description = meta.description.or_else(|| {
        result["description"]
            .as_str()
            .map(|d| d.chars().take(500).collect())
    });
    let record = VoiceRecord {
        id: voice_id,
        account_id: account_id.clone(),
        name: meta.name.unwrap_or_default(),
        description: description.unwrap_or_default(),
        labels: meta.labels.unwrap_or_default(),
        language: language.to_owned(),
        gender: profile.gender,
        profile: serde_json::to_value(&stored).map_err(Error::internal)?,
        preview_key,
        created_at: now_ms(),
    };
    state.db.create_voice(record.clone()).await?;
    Ok(record)
}
