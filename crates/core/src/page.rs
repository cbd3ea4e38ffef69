//! Pagination: the spec's list envelope `{data, pagination}`.

use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// Default page size (the spec's example value).
pub const DEFAULT_LIMIT: u32 = 20;
/// Largest page size accepted.
pub const MAX_LIMIT: u32 = 100;

/// Raw `page` and `limit` query parameters, validated by [`PageParams::parse`].
#[derive(Debug, Default, Deserialize)]
pub struct RawPageQuery {
    pub page: Option<String>,
    pub limit: Option<String>,
}

/// Validated paging parameters; `page` starts at 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageParams {
    pub page: u32,
    pub limit: u32,
}

impl PageParams {
    /// Parses `page` (integer ≥ 1, default 1) and `limit` (1–100, default 20).
    pub fn parse(page: Option<&str>, limit: Option<&str>) -> Result<Self, ApiError> {
        let page = match page {
            None => 1,
            // An int32, as the document says.
            Some(s) => match s.trim().parse::<u32>() {
                Ok(n) if n >= 1 && n <= i32::MAX as u32 => n,
                _ => {
                    return Err(ApiError::invalid_parameter(
                        "page",
                        "must be an integer from 1 to 2147483647",
                    ))
                }
            },
        };
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(s) => match s.trim().parse::<u32>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(ApiError::invalid_parameter(
                        "limit",
                        format!("must be an integer from 1 to {MAX_LIMIT}"),
                    ))
                }
            },
        };
        Ok(Self { page, limit })
    }

    /// Rows to skip.
    pub fn offset(&self) -> i64 {
        i64::from(self.page - 1) * i64::from(self.limit)
    }
}

/// Paging metadata of a list response.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub page: u32,
    pub limit: u32,
    pub total: u64,
    pub has_more: bool,
}

/// A list response: the items of one page plus paging metadata.
#[derive(Debug, Clone, Serialize)]
pub struct Page<T> {
    pub data: Vec<T>,
    pub pagination: Pagination,
}

impl<T> Page<T> {
    pub fn new(data: Vec<T>, params: PageParams, total: u64) -> Self {
        let seen = params.offset() as u64 + data.len() as u64;
        Self {
            data,
            pagination: Pagination {
                page: params.page,
                limit: params.limit,
                total,
                has_more: seen < total,
            },
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            data: self.data.into_iter().map(f).collect(),
            pagination: self.pagination,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(
            PageParams::parse(None, None).unwrap(),
            PageParams { page: 1, limit: 20 }
        );
        assert_eq!(
            PageParams::parse(Some("3"), Some("100")).unwrap().offset(),
            200
        );
        for bad in ["0", "-1", "x", "1.5", ""] {
            assert!(PageParams::parse(Some(bad), None).is_err(), "page={bad}");
        }
        for bad in ["0", "101", "abc"] {
            let e = PageParams::parse(None, Some(bad)).unwrap_err();
            assert_eq!(e.details["parameter"], "limit");
        }
    }

    #[test]
    fn has_more_is_exact_at_the_boundary() {
        let p = PageParams { page: 2, limit: 10 };
        assert!(!Page::new(vec![0; 10], p, 20).pagination.has_more);
        assert!(Page::new(vec![0; 10], p, 21).pagination.has_more);
        assert!(
            !Page::new(Vec::<u8>::new(), PageParams { page: 5, limit: 10 }, 3)
                .pagination
                .has_more
        );
    }
}
