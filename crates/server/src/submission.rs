//! What every job request's handler does with the members all jobs take
//! ([`JobFields`]: `dryRun`, `webhookUrl`): read them first, naming a bad
//! one, check the webhook into the job's options, and in the end either
//! price the request or submit it.

use std::collections::HashMap;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::response::Response;
use mediagen_core::{JobFields, JobRequest};
use serde::de::DeserializeOwned;

use crate::error::{ApiResult, Error};
use crate::extract::{json_bytes, parse_json, JobOptions};
use crate::jobs::{submit, JobSpec};
use crate::middleware::Principal;
use crate::state::AppState;

/// A job's options and whether it only asks for its price.
pub struct Submission {
    pub opts: JobOptions,
    pub dry_run: bool,
}

impl Submission {
    /// The options of the request's headers with its shared members:
    /// the webhook checked (400/422 naming `webhookUrl`).
    pub fn new(state: &AppState, opts: JobOptions, fields: JobFields) -> Result<Self, Error> {
        Ok(Self {
            dry_run: fields.dry_run(),
            opts: opts.with_webhook(state, fields.webhook_url)?,
        })
    }

    /// The shared members among a form's fields (or a `fileId` body's):
    /// `dryRun` read (400 naming it unless `true` or `false`; it stays for
    /// the form's own reading), `webhookUrl` taken out and checked.
    pub fn from_fields(
        state: &AppState,
        opts: JobOptions,
        fields: &mut HashMap<String, String>,
    ) -> Result<Self, Error> {
        let dry_run = mediagen_core::params::boolean(fields, "dryRun", false)?;
        let webhook_url = fields.remove("webhookUrl");
        let job = JobFields {
            dry_run: Some(dry_run),
            webhook_url,
        };
        Self::new(state, opts, job)
    }

    /// Prices `request` (a dry run) or submits it as its kind.
    pub async fn submit<R: JobRequest>(
        self,
        state: &AppState,
        who: &Principal,
        request: &R,
    ) -> ApiResult<Response> {
        submit(state, who, self.opts, JobSpec::of(request, self.dry_run)?).await
    }
}

/// A job request's JSON body `T` (which flattens [`JobFields`]) and the
/// submission its shared members make. They are read before the rest, so
/// a bad `dryRun` or `webhookUrl` is refused naming it.
pub struct JobJson<T> {
    pub body: T,
    pub job: Submission,
}

impl<T: DeserializeOwned> FromRequest<AppState> for JobJson<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Error> {
        let (mut parts, body) = req.into_parts();
        let opts = JobOptions::from_request_parts(&mut parts, state).await?;
        let bytes = json_bytes(Request::from_parts(parts, body), state).await?;
        let (body, fields) = match parse_json::<T>(&bytes) {
            Ok(body) => (body, parse_json::<JobFields>(&bytes)?),
            // The shared members' own refusal names them (inside `T`
            // they are read untyped first).
            Err(refused) => return Err(parse_json::<JobFields>(&bytes).err().unwrap_or(refused)),
        };
        Ok(Self {
            body,
            job: Submission::new(state, opts, fields)?,
        })
    }
}
