//! The `tts` job: speech made whole into a file ([`crate::tts::render`]),
//! or streamed as it is made ([`crate::tts_stream::run`]).

use std::sync::Arc;

use mediagen_speech::stt::SttCatalog;
use mediagen_speech::tts::TtsCatalog;
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::Value;

use mediagen_jobs::tts::TtsRequest;

pub struct TtsPipeline {
    pub catalog: Arc<TtsCatalog>,
    /// Aligns words for `timestamps: true` (no engine here reports durations).
    pub stt: Arc<SttCatalog>,
}

#[async_trait::async_trait]
impl RequestPipeline for TtsPipeline {
    type Request = TtsRequest;

    async fn work(&self, ctx: JobContext, req: TtsRequest) -> Result<Value, JobFailure> {
        if req.stream {
            crate::tts_stream::run(self.catalog.clone(), ctx, req).await
        } else {
            crate::tts::render(self.catalog.clone(), self.stt.clone(), ctx, req).await
        }
    }
}
