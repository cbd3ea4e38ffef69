//! Webhooks to the Standard Webhooks specification (standardwebhooks.com):
//! job events signed with the endpoint's secret, sent by a dispatcher in
//! every API process from the deliveries the database keeps, retried with
//! backoff for a day under the same `webhook-id`.

mod dispatch;
pub mod signing;
pub mod target;

pub use dispatch::{run, RETRY_DELAYS};

/// The events an endpoint may subscribe to.
pub const EVENTS: [&str; 3] = ["job.completed", "job.failed", "job.cancelled"];
