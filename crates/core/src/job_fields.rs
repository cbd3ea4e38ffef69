//! The members every job request takes beside its own: `dryRun` (price
//! only) and `webhookUrl` (the job's own webhook). One type, flattened
//! into each job body and form (`#[serde(flatten)] pub job: JobFields`),
//! so that the document and the parsers state them once. The API reads
//! them before the body (`submission::JobJson`, `media_input::MediaJob`):
//! a bad value is refused naming its member.

use serde::Deserialize;

#[derive(Debug, Default, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobFields {
    /// Validate and price only.
    #[serde(default)]
    pub dry_run: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = crate::schema::webhook_url_schema)]
    pub webhook_url: Option<String>,
}

impl JobFields {
    /// Whether the request asks only for its price.
    pub fn dry_run(&self) -> bool {
        self.dry_run.unwrap_or(false)
    }
}
