//! `POST /v1/test-jobs`: the internal `test.sleep` job kind, mounted only
//! with `enable_test_jobs` (the test suite). Not part of the public API.

use axum::extract::State;
use axum::response::Response;
use mediagen_worker::testing::SleepPayload;
use serde::Deserialize;

use crate::error::ApiResult;
use crate::extract::{ApiJson, Auth, JobOptions};
use crate::jobs::{submit, JobSpec};
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestJob {
    #[serde(default)]
    ms: u64,
    #[serde(default)]
    fail: Option<String>,
    #[serde(default)]
    output: Option<String>,
    /// Copied into the result as sent, as capabilities copy user text.
    #[serde(default)]
    echo: Option<serde_json::Value>,
    /// Billable units (priced by `costs."test.sleep"`).
    #[serde(default)]
    units: f64,
    /// Blocking work first that hears no cancel.
    #[serde(default)]
    block_ms: u64,
    #[serde(default)]
    dry_run: bool,
}

pub async fn create(
    State(state): State<AppState>,
    auth: Auth,
    opts: JobOptions,
    ApiJson(body): ApiJson<TestJob>,
) -> ApiResult<Response> {
    let payload = SleepPayload {
        ms: body.ms,
        fail: body.fail,
        output: body.output,
        echo: body.echo,
        units: body.units,
        block_ms: body.block_ms,
    };
    let spec = JobSpec::of(&payload, body.dry_run)?;
    submit(&state, &auth, opts, spec).await
}
