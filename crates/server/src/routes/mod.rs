//! One module per resource. Handlers stay short: extract, parse into domain
//! types, call the store or the job service, return a view.

pub mod account;
pub mod accounts;
pub mod assets;
pub mod avatars;
pub mod blobs;
pub mod dubbing;
pub mod elevenlabs;
pub mod files;
pub mod image;
pub mod jobs;
pub mod keys;
pub mod models;
pub mod openai;
pub mod previews;
pub mod realtime;
pub mod reference;
pub mod sound;
pub mod stt;
pub mod system;
pub mod test_jobs;
pub mod tokens;
pub mod tts;
pub mod video;
pub mod voice_changer;
pub mod voice_design;
pub mod voices;
pub mod webapp;
pub mod webhooks;

use axum::http::HeaderValue;
use axum::response::Response;
use mediagen_core::page::{PageParams, RawPageQuery};
use mediagen_core::{ApiError, Page, Pagination};
use serde::{Deserialize, Serialize};

use crate::error::ApiResult;

/// The response, naming in `X-Mediagen-Ignored` the parameters that were
/// taken and not used (the compatibility routes).
pub fn with_ignored(mut response: Response, ignored: &[impl AsRef<str>]) -> Response {
    if !ignored.is_empty() {
        let names: Vec<&str> = ignored.iter().map(AsRef::as_ref).collect();
        if let Ok(v) = HeaderValue::from_str(&names.join(", ")) {
            response.headers_mut().insert("x-mediagen-ignored", v);
        }
    }
    response
}

/// The response, naming its job in `X-Job-Id` (as the streaming routes do).
pub fn with_job(mut response: Response, job: &mediagen_core::JobId) -> Response {
    if let Ok(v) = HeaderValue::from_str(job.as_ref()) {
        response.headers_mut().insert("x-job-id", v);
    }
    response
}

/// The spec's list envelope, as a schema for the OpenAPI document.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ListEnvelope<T: utoipa::ToSchema> {
    pub data: Vec<T>,
    pub pagination: Pagination,
}

/// Validated `page`/`limit` from the raw query.
pub fn page_params(q: &RawPageQuery) -> ApiResult<PageParams> {
    Ok(PageParams::parse(q.page.as_deref(), q.limit.as_deref())?)
}

/// Builds a page from store rows and the total count.
pub fn page_of<T, U>(rows: (Vec<T>, u64), params: PageParams, view: impl FnMut(T) -> U) -> Page<U> {
    Page::new(rows.0, params, rows.1).map(view)
}

/// Labels from a form field: a JSON list or comma-separated words.
pub fn form_labels(raw: &str) -> Result<Vec<String>, ApiError> {
    if raw.trim_start().starts_with('[') {
        serde_json::from_str(raw)
            .map_err(|_| ApiError::invalid_parameter("labels", "must be a list of strings"))
    } else {
        Ok(raw.split(',').map(str::to_owned).collect())
    }
}

pub use mediagen_core::schema::{
    audio_format_schema, gender_schema, one_of_strings, sample_rate_schema, webhook_url_schema,
};

/// The most labels a resource has, and the longest label.
const MAX_LABELS: usize = 20;
const MAX_LABEL: usize = 40;

/// The document's schema of `labels` (see [`clean_labels`]).
pub fn labels_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(MAX_LABEL)),
        )
        .max_items(Some(MAX_LABELS))
        .description(Some(format!(
            "At most {MAX_LABELS} labels of at most {MAX_LABEL} characters (kept trimmed and lowercased)."
        )))
        .build()
}

/// What `PATCH` may change of a resource of the account's own (a cloned
/// voice, an avatar): flattened into each one's patch body.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MetaPatch {
    /// 1–100 characters (not only spaces).
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    name: Option<String>,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    description: Option<String>,
    #[schema(schema_with = labels_schema)]
    labels: Option<Vec<String>>,
}

impl MetaPatch {
    /// The changes, checked as [`described`] checks them.
    pub fn checked(self) -> Result<Described, ApiError> {
        described(
            self.name.as_deref(),
            self.description.as_deref(),
            self.labels,
            false,
        )
    }
}

/// The answer to deleting a resource of the account's own, once its files
/// (`keys`) are gone too: `{id, deleted: true}`.
pub async fn deleted(
    state: &crate::state::AppState,
    id: &impl Serialize,
    keys: &[&str],
) -> ApiResult<axum::Json<serde_json::Value>> {
    for key in keys {
        state.blobs.delete(key).await?;
    }
    Ok(axum::Json(serde_json::json!({ "id": id, "deleted": true })))
}

/// What a caller names and describes one of its own resources by (a
/// cloned voice, an avatar), checked alike when it is made and changed.
pub struct Described {
    pub name: Option<String>,
    pub description: Option<String>,
    pub labels: Option<Vec<String>>,
}

/// `name` 1–100 characters once spaces are trimmed (required when
/// `creating`), `description` at most 500 once trimmed (the bounds of
/// [`MetaPatch`]'s schema, which the forms that make a resource state
/// too: `create_forms_bound_names_as_patches_do`), `labels` as
/// [`clean_labels`]; 400 naming the parameter otherwise.
pub fn described(
    name: Option<&str>,
    description: Option<&str>,
    labels: Option<Vec<String>>,
    creating: bool,
) -> Result<Described, ApiError> {
    use mediagen_jobs::bounds::Bound;
    let longest = Bound::of::<MetaPatch>("name").max_length();
    let name = name.map(|n| mediagen_core::params::trim_spaces(n).to_owned());
    match &name {
        Some(n) if n.is_empty() || n.chars().count() > longest => {
            return Err(ApiError::invalid_parameter(
                "name",
                format!("must be 1 to {longest} characters"),
            ))
        }
        None if creating => {
            return Err(ApiError::invalid_parameter(
                "name",
                format!("required: 1 to {longest} characters"),
            ))
        }
        _ => {}
    }
    let longest = Bound::of::<MetaPatch>("description").max_length();
    let description = description.map(|d| d.trim().to_owned());
    if description
        .as_ref()
        .is_some_and(|d| d.chars().count() > longest)
    {
        return Err(ApiError::invalid_parameter(
            "description",
            format!("at most {longest} characters"),
        ));
    }
    Ok(Described {
        name,
        description,
        labels: labels.map(clean_labels).transpose()?,
    })
}

/// Labels as stored: trimmed, lower-case, no empty ones or repeats; at
/// most 20 of at most 40 characters (400 naming `labels` otherwise).
pub fn clean_labels(labels: Vec<String>) -> Result<Vec<String>, ApiError> {
    let trimmed: Vec<&str> = labels
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    // Counted as sent: lowercasing may lengthen a label ('İ' is two).
    let too_long = trimmed.iter().any(|l| l.chars().count() > MAX_LABEL);
    let mut clean: Vec<String> = trimmed.iter().map(|l| l.to_lowercase()).collect();
    clean.dedup();
    if clean.len() > MAX_LABELS || too_long {
        return Err(ApiError::invalid_parameter(
            "labels",
            format!("at most {MAX_LABELS} labels of at most {MAX_LABEL} characters"),
        ));
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use mediagen_jobs::bounds::Bound;

    use super::*;

    /// The forms and bodies that make a resource state the bounds
    /// [`described`] checks, which it reads from [`MetaPatch`]'s schema;
    /// an account's balance is bounded by [`accounts::MAX_BALANCE`].
    #[test]
    fn create_forms_bound_names_as_patches_do() {
        use mediagen_jobs::voice_design::KeepBody;
        use mediagen_jobs::{avatar_upload::AvatarUploadForm, voice_clone::VoiceCloneForm};
        let limits = |name: Bound, description: Bound| {
            (name.min_length, name.max_length, description.max_length)
        };
        let patch = limits(
            Bound::of::<MetaPatch>("name"),
            Bound::of::<MetaPatch>("description"),
        );
        assert_eq!(patch, (Some(1), Some(100), Some(500)));
        let made = [
            limits(
                Bound::of::<VoiceCloneForm>("name"),
                Bound::of::<VoiceCloneForm>("description"),
            ),
            limits(
                Bound::of::<AvatarUploadForm>("name"),
                Bound::of::<AvatarUploadForm>("description"),
            ),
            limits(
                Bound::of::<KeepBody>("name"),
                Bound::of::<KeepBody>("description"),
            ),
        ];
        for (i, form) in made.into_iter().enumerate() {
            assert_eq!(form, patch, "form {i}");
        }
        for label in [
            Bound::of::<VoiceCloneForm>("labels"),
            Bound::of::<AvatarUploadForm>("labels"),
        ] {
            assert_eq!(label.max_length, Some(MAX_LABEL));
        }
        let credits = Bound::of::<accounts::CreateAccount>("credits");
        assert_eq!(credits.maximum(), accounts::MAX_BALANCE as f64);
        assert_eq!(
            Bound::of::<accounts::CreateAccount>("name").max_length,
            patch.1
        );
    }
}
