//! One module per resource. Handlers stay short: extract, parse into domain
//! types, call the store or the job service, return a view.

pub mod account;
pub mod accounts;
pub mod avatars;
pub mod blobs;
pub mod dubbing;
pub mod files;
pub mod image;
pub mod jobs;
pub mod keys;
pub mod models;
pub mod previews;
pub mod sound;
pub mod stt;
pub mod system;
pub mod test_jobs;
pub mod tts;
pub mod video;
pub mod voice_changer;
pub mod voices;

use mediagen_core::page::{PageParams, RawPageQuery};
use mediagen_core::{ApiError, Page, Pagination};
use serde::Serialize;

use crate::error::ApiResult;

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

/// Labels as stored: trimmed, lower-case, no empty ones or repeats; at
/// most 20 of at most 40 characters (400 naming `labels` otherwise).
pub fn clean_labels(labels: Vec<String>) -> Result<Vec<String>, ApiError> {
    let mut clean: Vec<String> = labels
        .iter()
        .map(|l| l.trim().to_lowercase())
        .filter(|l| !l.is_empty())
        .collect();
    clean.dedup();
    if clean.len() > 20 || clean.iter().any(|l| l.chars().count() > 40) {
        return Err(ApiError::invalid_parameter(
            "labels",
            "at most 20 labels of at most 40 characters",
        ));
    }
    Ok(clean)
}
