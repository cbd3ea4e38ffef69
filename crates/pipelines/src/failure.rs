//! How a media tool's failure on a request's file becomes the job's error:
//! the client's file is at fault (422 `unreadable_media`) unless the work
//! was stopped (cancel, time limit), the tool could not run at all, or the
//! scratch disk is full (a storage fault, retried).

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
        // A tool that had no room to write says nothing of the file: it
        // said so itself (the disk may have room again by the time it is
        // looked at), or the disk is full now.
        _ if out_of_room(&e) || scratch_full() => {
            JobFailure::storage(format!("the scratch disk is full: {e}"))
        }
        _ => JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string()),
    }
}

/// A media tool's result on a request's file: its failure as
/// [`media_failure`] says, and a success on a full scratch disk as a
/// storage fault too (a tool may stop writing for want of room and still
/// exit cleanly, leaving short output that would pass for the file's).
pub fn media_result<T>(result: Result<T, MediaError>) -> Result<T, JobFailure> {
    match result {
        Err(e) => Err(media_failure(e)),
        Ok(_) if scratch_full() => Err(JobFailure::storage("the scratch disk is full")),
        Ok(done) => Ok(done),
    }
}

/// Whether the tool failed for want of room to write: ENOSPC on a pipe or
/// file of ours, or its own report of it (read to classify, never shown).
fn out_of_room(e: &MediaError) -> bool {
    const ENOSPC: i32 = 28;
    match e {
        MediaError::Process(ProcessError::Failed { stderr, .. }) => {
            stderr.contains("No space left on device")
        }
        MediaError::Process(ProcessError::Io { source, .. }) => {
            source.raw_os_error() == Some(ENOSPC)
        }
        _ => false,
    }
}

/// Whether the scratch disk (where the tools write) has no room left: 64 KiB
/// cannot be written to a new file there.
fn scratch_full() -> bool {
    use std::io::Write;
    let Ok(mut probe) = tempfile::tempfile() else {
        return true;
    };
    probe
        .write_all(&[0u8; 64 * 1024])
        .and_then(|()| probe.sync_all())
        .is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(stderr: &str) -> MediaError {
        MediaError::Process(ProcessError::Failed {
            program: "ffmpeg".into(),
            status: "exit status: 1".into(),
            stderr: stderr.into(),
        })
    }

    #[test]
    fn a_tool_without_room_is_a_storage_fault_not_the_files() {
        let full = media_failure(failed(
            "av_interleaved_write_frame(): No space left on device",
        ));
        assert!(!matches!(full, JobFailure::Abort(_)), "{full:?}");
        let damaged = media_failure(failed("Invalid data found when processing input"));
        assert!(matches!(damaged, JobFailure::Abort(_)), "{damaged:?}");
    }
}
