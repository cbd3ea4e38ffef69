//! One module per resource. Handlers stay short: extract, parse into domain
//! types, call the store or the job service, return a view.

pub mod account;
pub mod accounts;
pub mod avatars;
pub mod blobs;
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
pub mod voices;

use mediagen_core::page::{PageParams, RawPageQuery};
use mediagen_core::{Page, Pagination};
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
