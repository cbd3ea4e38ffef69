//! How a media tool's failure on a request's file becomes the job's error:
//! the client's file is at fault (422 `unreadable_media`) unless the work
//! was stopped (cancel, time limit) or the tool could not run at all.

use mediagen_core::ErrorCode;
use mediagen_media::media::MediaError;
use mediagen_media::process::ProcessError;
use mediagen_worker::JobFailure;

/// The job error for `e`, a failure while reading, cutting or decoding the
/// media a request sent. Messages never name the tool (`ProcessError`'s
/// own are plain).
pub fn media_failure(e: MediaError) -> JobFailure {
    match &e {
        MediaError::Process(ProcessError::Cancelled) => {
            JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled.")
        }
        MediaError::Process(ProcessError::Timeout { .. }) => {
            JobFailure::abort(ErrorCode::JobTimeout, e.to_string())
        }
        MediaError::Process(ProcessError::Spawn { .. }) => {
            JobFailure::retry(ErrorCode::EngineUnavailable, e.to_string())
        }
        MediaError::Io(_) => JobFailure::storage(&e),
        _ => JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string()),
    }
}
