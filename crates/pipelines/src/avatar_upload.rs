//! `avatar.create`: an uploaded avatar clip made into one of the account's
//! avatars by a worker. The API probes the clip (its container, streams
//! and length against the allowlist) and stores it where the avatar keeps
//! it; the worker reads its picture facts, cuts the first frame as the
//! poster and records the avatar. A clip it cannot use is deleted.

use mediagen_core::ApiError;
use mediagen_core::ErrorCode;
use mediagen_media::video::{inspect, poster, VideoInfo};
use mediagen_store::{AvatarRecord, Db};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

use crate::avatar::not_a_video;

pub use mediagen_jobs::avatar_upload::*;

pub struct AvatarUploadPipeline {
    pub db: Db,
}

impl AvatarUploadPipeline {
    async fn make(&self, ctx: &JobContext, req: &AvatarUpload) -> Result<(), JobFailure> {
        let (dir, clip) = ctx.scratch_with(&req.video_key, "clip").await?;
        let poster_path = dir.path().join("poster.png");
        let out = poster_path.clone();
        let info = ctx
            .blocking(move || {
                let info = inspect(&clip)?;
                if let Some(info) = &info {
                    poster(&clip, info, &out)?;
                }
                Ok::<Option<VideoInfo>, mediagen_media::media::MediaError>(info)
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))?
            .map_err(|e| {
                tracing::info!(error = %e, "an avatar clip did not decode");
                JobFailure::refused(ApiError::unprocessable(
                    "file",
                    "the clip cannot be read: it is damaged or truncated",
                ))
            })?
            .ok_or_else(|| JobFailure::refused(not_a_video("file")))?;
        // Progress by step: read and its poster drawn (60), stored (90).
        ctx.set_progress(60);
        ctx.blobs
            .put_file(&req.poster_key, &poster_path)
            .await
            .map_err(JobFailure::storage)?;
        let record = AvatarRecord {
            id: req.avatar_id.clone(),
            account_id: ctx.job.account_id.clone(),
            name: req.name.clone(),
            description: req.description.clone(),
            gender: req.gender.clone(),
            labels: req.labels.clone(),
            video_key: req.video_key.clone(),
            poster_key: req.poster_key.clone(),
            content_type: req.content_type.clone(),
            width: i64::from(info.width),
            height: i64::from(info.height),
            duration: (req.duration * 1000.0).round() / 1000.0,
            fps: (info.fps * 1000.0).round() / 1000.0,
            created_at: 0,
        };
        ctx.set_progress(90);
        self.db
            .create_avatar(record)
            .await
            .map_err(JobFailure::storage)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl RequestPipeline for AvatarUploadPipeline {
    type Request = AvatarUpload;

    async fn work(&self, ctx: JobContext, req: AvatarUpload) -> Result<Value, JobFailure> {
        let done = json!({ "avatarId": req.avatar_id });
        // A retried job whose first attempt recorded the avatar is done.
        let found = self.db.avatar(&ctx.job.account_id, &req.avatar_id).await;
        if found.map_err(JobFailure::storage)?.is_some() {
            return Ok(done);
        }
        match self.make(&ctx, &req).await {
            Ok(()) => Ok(done),
            Err(refused @ JobFailure::Abort(_)) => {
                for key in [&req.video_key, &req.poster_key] {
                    if let Err(e) = ctx.blobs.delete(key).await {
                        tracing::warn!(error = %e, "a refused avatar's clip was not deleted");
                    }
                }
                Err(refused)
            }
            Err(other) => Err(other),
        }
    }
}
