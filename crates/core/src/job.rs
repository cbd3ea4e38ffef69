//! Jobs: the unit of work, credits and results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Lifecycle of a job:
/// `queued → processing → completed | failed`, `queued | processing → cancelled`,
/// and `processing → queued` when a lease expires (the worker died) or a
/// retryable failure happens while attempts remain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Queued,
    Processing,
    Completed,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Queued,
        JobStatus::Processing,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Processing => "processing",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Completed, failed and cancelled jobs never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled
        )
    }
}

/// What happened to a job's credit hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CreditState {
    /// Reserved when the job was created.
    Held,
    /// Charged: the job completed.
    Captured,
    /// Returned: the job failed or was cancelled.
    Refunded,
}

impl CreditState {
    pub fn as_str(self) -> &'static str {
        match self {
            CreditState::Held => "held",
            CreditState::Captured => "captured",
            CreditState::Refunded => "refunded",
        }
    }
}

/// The error object of a failed job: `{code, message}`, and `details`
/// when the work refused its input for a reason it can name (the sample a
/// voice clone could not use, say): the same members an API error has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Map<String, Value>>,
}

impl JobError {
    /// An error of `code` (one of the error table's: a job's failure
    /// codes are API error codes, with their statuses and docs).
    pub fn new(code: crate::ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.as_str().to_owned(),
            message: message.into(),
            details: None,
        }
    }
}

impl From<crate::ApiError> for JobError {
    fn from(e: crate::ApiError) -> Self {
        Self {
            code: e.code.as_str().to_owned(),
            message: e.message,
            details: (!e.details.is_empty()).then_some(e.details),
        }
    }
}

/// A file a job produced, registered by the pipeline that wrote it. A job's
/// result holds no storage keys: its URLs are made from this list only, for
/// the job's own account, so no text a user sent can name a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOutput {
    /// Where the file's URL goes in the job's `result`: a JSON pointer such
    /// as `/audioUrl` or `/images/0/imageUrl`.
    pub field: String,
    /// The blob key, under `jobs/<job id>/`.
    pub key: String,
    pub content_type: String,
    /// Bytes.
    pub size: u64,
}

/// A job as stored: the row of the jobs table.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: crate::JobId,
    pub account_id: crate::AccountId,
    pub kind: crate::JobKind,
    pub status: JobStatus,
    pub payload: Value,
    pub result: Option<Value>,
    /// The files of a completed job.
    pub outputs: Vec<JobOutput>,
    pub error: Option<JobError>,
    pub progress: i64,
    pub cost: i64,
    pub credit_state: CreditState,
    pub attempts: i64,
    pub max_attempts: i64,
    /// Wall-clock limit of one attempt, in milliseconds.
    pub timeout_ms: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip() {
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::parse(s.as_str()), Some(s));
        }
        assert!(JobStatus::Cancelled.is_terminal() && !JobStatus::Queued.is_terminal());
        assert_eq!(JobStatus::parse("done"), None);
    }
}
