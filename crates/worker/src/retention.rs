//! The retention sweep: finished jobs with their outputs, and uploaded
//! files, are deleted from the store and then from the database once their
//! retention has passed. Result URLs never outlive a job's retention (the
//! API caps their expiry at it), so nothing a user can still fetch through
//! an unexpired URL is removed. Runs in every worker's maintenance tick;
//! sweeps in several processes at once only repeat each other's deletes.
//! Streamed jobs' pieces left behind (a relay that died) go after an hour
//! whatever the settings.

use std::time::Duration;

use mediagen_core::time::now_ms;
use mediagen_store::{BlobStore, Db};
use tracing::warn;

/// How long things are kept (`None`: forever).
#[derive(Debug, Clone, Copy, Default)]
pub struct Retention {
    /// Finished jobs and their outputs, counted from when they finished.
    pub jobs: Option<Duration>,
    /// Uploaded files, counted from the upload (kept while a queued or
    /// running job reads them).
    pub files: Option<Duration>,
}

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub jobs: u64,
    pub files: u64,
}

/// Rows handled per sweep; the rest wait for the next tick.
const BATCH: i64 = 200;

fn cutoff(keep: Duration) -> i64 {
    now_ms().saturating_sub(keep.as_millis().min(i64::MAX as u128) as i64)
}

/// Removes what has outlived `retention`: the bytes first, then the row,
/// so an interrupted sweep is completed by the next.
pub async fn sweep(db: &Db, blobs: &BlobStore, retention: Retention) -> Swept {
    let mut swept = Swept::default();
    if let Err(e) = db.sweep_chunks().await {
        warn!(error = %e, "retention: deleting old stream pieces failed");
    }
    if let Err(e) = db.sweep_tokens().await {
        warn!(error = %e, "retention: deleting expired session tokens failed");
    }
    if let Some(keep) = retention.jobs {
        match db.expired_jobs(cutoff(keep), BATCH).await {
            Ok(ids) => {
                for id in ids {
                    if remove_job_files(blobs, &id).await
                        && db.delete_finished_job(&id).await.unwrap_or(false)
                    {
                        swept.jobs += 1;
                    }
                }
            }
            Err(e) => warn!(error = %e, "retention: listing expired jobs failed"),
        }
    }
    if let Some(keep) = retention.files {
        match db.expired_files(cutoff(keep), BATCH).await {
            Ok(files) => {
                for (id, key) in files {
                    let removed = match blobs.delete(&key).await {
                        Ok(()) => db.delete_expired_file(&id).await.unwrap_or(false),
                        Err(e) => {
                            warn!(error = %e, file = %id, "retention: deleting an upload failed");
                            false
                        }
                    };
                    swept.files += u64::from(removed);
                }
            }
            Err(e) => warn!(error = %e, "retention: listing expired uploads failed"),
        }
    }
    swept
}

/// Deletes every stored file of a job (outputs and working files).
async fn remove_job_files(blobs: &BlobStore, id: &str) -> bool {
    let keys = match blobs.list(&format!("jobs/{id}")).await {
        Ok(keys) => keys,
        Err(e) => {
            warn!(error = %e, job = %id, "retention: listing a job's files failed");
            return false;
        }
    };
    for key in keys {
        if let Err(e) = blobs.delete(&key).await {
            warn!(error = %e, job = %id, "retention: deleting a job's file failed");
            return false;
        }
    }
    true
}
