//! What can go wrong in a client command, and the exit code each gives.

use serde_json::Value;

/// A failed command. Its `Display` is the line printed on stderr.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or settings (exit 2, as clap's own usage errors).
    #[error("{0}")]
    Usage(String),
    /// The API answered an error (exit 1): its message and code, as sent.
    #[error("{message} ({code}, HTTP {status}, request {request_id})")]
    Api {
        status: u16,
        code: String,
        message: String,
        request_id: String,
    },
    /// The job ended without a result (exit 1).
    #[error("job {id} {status}: {message} ({code})")]
    Job {
        id: String,
        status: String,
        code: String,
        message: String,
    },
    /// The server could not be reached or answered something that is not
    /// the API (exit 3).
    #[error("{0}")]
    Unreachable(String),
    /// A local file could not be read or written (exit 4).
    #[error("{0}")]
    Local(String),
    /// Whatever read stdout closed it (`mediagen voices | head`): it had
    /// what it wanted, so the command ends quietly (exit 0).
    #[error("stdout was closed")]
    Closed,
}

impl CliError {
    /// The process exit code (docs/cli.md).
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Api { .. } | CliError::Job { .. } => 1,
            CliError::Usage(_) => 2,
            CliError::Unreachable(_) => 3,
            CliError::Local(_) => 4,
            CliError::Closed => 0,
        }
    }

    /// The error of an API answer with `status`, from its body (the spec's
    /// error shape) or, where the body is not that, from the status alone.
    pub fn from_answer(status: u16, body: &[u8]) -> CliError {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let error = parsed.as_ref().and_then(|v| v.get("error"));
        let text = |name: &str| {
            error
                .and_then(|e| e.get(name))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        match (text("code"), text("message")) {
            (Some(code), Some(message)) => CliError::Api {
                status,
                code,
                message,
                request_id: text("request_id").unwrap_or_else(|| "-".into()),
            },
            _ => CliError::Unreachable(format!(
                "the server answered HTTP {status} without an API error: is the address a Mediagen server?"
            )),
        }
    }

    /// The error of a job that ended `failed` or `cancelled`.
    pub fn from_job(job: &Value) -> CliError {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let error = job.get("error");
        let status = text(job.get("status"));
        let cancelled = status == "cancelled";
        CliError::Job {
            id: text(job.get("id")),
            code: match error.and_then(|e| e.get("code")).and_then(Value::as_str) {
                Some(code) => code.to_string(),
                None if cancelled => "cancelled".into(),
                None => "job_failed".into(),
            },
            message: match error.and_then(|e| e.get("message")).and_then(Value::as_str) {
                Some(m) => m.to_string(),
                None if cancelled => "the job was cancelled".into(),
                None => "the job failed".into(),
            },
            status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn api_errors_keep_their_message_and_code() {
        let body = json!({"error": {"code": "voice_not_found", "message": "No voice `x`", "request_id": "req_1", "details": {}}});
        let e = CliError::from_answer(404, body.to_string().as_bytes());
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.to_string(),
            "No voice `x` (voice_not_found, HTTP 404, request req_1)"
        );
        let e = CliError::from_answer(502, b"<html>bad gateway</html>");
        assert_eq!(e.exit_code(), 3);
    }

    #[test]
    fn failed_and_cancelled_jobs_say_so() {
        let failed = json!({"id": "job_1", "status": "failed", "error": {"code": "unreadable_media", "message": "No audio"}});
        assert_eq!(
            CliError::from_job(&failed).to_string(),
            "job job_1 failed: No audio (unreadable_media)"
        );
        let cancelled = json!({"id": "job_2", "status": "cancelled", "error": null});
        assert_eq!(
            CliError::from_job(&cancelled).to_string(),
            "job job_2 cancelled: the job was cancelled (cancelled)"
        );
    }
}
