//! `stt`: an uploaded audio or video file → text with timestamps.

use mediagen_core::ErrorCode;
use std::collections::HashMap;
use std::sync::Arc;

use mediagen_core::ApiError;
use mediagen_media::media::demuxer;
use mediagen_media::pcm;

use crate::limits::SPEECH_TO_TEXT;
use mediagen_speech::stt::{
    languages, transcribe_stream, Segment, SttCatalog, SttError, SttOptions, Transcript,
};
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Output formats.
pub const FORMATS: [&str; 5] = ["json", "text", "srt", "vtt", "verbose_json"];

/// A validated speech-to-text request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SttRequest {
    /// Blob key of the input file.
    pub input: String,
    pub file_id: String,
    /// Seconds, from probing.
    pub duration: f64,
    /// ISO 639-1, or `None` to detect.
    pub language: Option<String>,
    pub translate: bool,
    pub prompt: Option<String>,
    pub response_format: String,
    pub words: bool,
    pub model: String,
}

impl SttRequest {
    /// Validates the request's options (from JSON fields or multipart text
    /// parts, as strings). Errors name the parameter.
    pub fn parse(
        fields: &HashMap<String, String>,
        catalog: &SttCatalog,
    ) -> Result<SttOptionsParsed, ApiError> {
        for key in fields.keys() {
            if ![
                "language",
                "task",
                "prompt",
                "responseFormat",
                "timestampGranularities",
                "model",
                "fileId",
                "dryRun",
            ]
            .contains(&key.as_str())
            {
                return Err(ApiError::invalid_parameter(key, "unknown parameter"));
            }
        }
        let model_name = fields.get("model").map(String::as_str);
        let model = catalog.model(model_name).ok_or_else(|| {
            ApiError::invalid_parameter(
                "model",
                format!("must be one of: {}", catalog.names().join(", ")),
            )
        })?;
        let language = match fields
            .get("language")
            .map(|l| l.trim().to_ascii_lowercase())
        {
            None => None,
            Some(l) if l.is_empty() || l == "auto" => None,
            Some(l) => {
                if !languages().contains(&l.as_str()) {
                    return Err(ApiError::invalid_parameter(
                        "language",
                        format!("`{l}` is not a supported ISO 639-1 code (or send `auto`)"),
                    ));
                }
                if !model.multilingual() && l != "en" {
                    return Err(ApiError::invalid_parameter(
                        "language",
                        format!("model `{}` knows English only", model.name()),
                    ));
                }
                Some(l)
            }
        };
        let translate = match fields.get("task").map(String::as_str) {
            None | Some("transcribe") => false,
            Some("translate") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "task",
                    "must be transcribe or translate",
                ))
            }
        };
        let response_format = fields
            .get("responseFormat")
            .cloned()
            .unwrap_or_else(|| "json".into());
        if !FORMATS.contains(&response_format.as_str()) {
            return Err(ApiError::invalid_parameter(
                "responseFormat",
                format!("must be one of {}", FORMATS.join(", ")),
            ));
        }
        let granularities = fields
            .get("timestampGranularities")
            .map(String::as_str)
            .unwrap_or("segment");
        let words = granularities.split(',').map(str::trim).any(|g| g == "word");
        if granularities
            .split(',')
            .map(str::trim)
            .any(|g| g != "word" && g != "segment")
        {
            return Err(ApiError::invalid_parameter(
                "timestampGranularities",
                "must be segment, word or both",
            ));
        }
        if words && response_format != "verbose_json" {
            return Err(ApiError::invalid_parameter(
                "timestampGranularities",
                "word timestamps need responseFormat verbose_json",
            ));
        }
        let prompt = fields
            .get("prompt")
            .filter(|p| !p.trim().is_empty())
            .cloned();
        if prompt.as_ref().is_some_and(|p| p.chars().count() > 1000) {
            return Err(ApiError::invalid_parameter(
                "prompt",
                "must be at most 1000 characters",
            ));
        }
        Ok(SttOptionsParsed {
            language,
            translate,
            prompt,
            response_format,
            words,
            model: model.name().to_owned(),
        })
    }

    /// Billable units: seconds of audio.
    pub fn seconds(&self) -> f64 {
        self.duration
    }
}

/// The options part of a request, before the file is known.
#[derive(Debug, Clone)]
pub struct SttOptionsParsed {
    pub language: Option<String>,
    pub translate: bool,
    pub prompt: Option<String>,
    pub response_format: String,
    pub words: bool,
    pub model: String,
}

impl SttOptionsParsed {
    pub fn with_file(self, input: String, file_id: String, duration: f64) -> SttRequest {
        SttRequest {
            input,
            file_id,
            duration,
            language: self.language,
            translate: self.translate,
            prompt: self.prompt,
            response_format: self.response_format,
            words: self.words,
            model: self.model,
        }
    }
}

fn timestamp(seconds: f64, sep: char) -> String {
    let ms = (seconds.max(0.0) * 1000.0).round() as u64;
    format!(
        "{:02}:{:02}:{:02}{sep}{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// SubRip subtitles of the segments.
pub fn srt(segments: &[Segment]) -> String {
    segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "{}\n{} --> {}\n{}\n",
                i + 1,
                timestamp(s.start, ','),
                timestamp(s.end, ','),
                s.text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// WebVTT subtitles of the segments.
pub fn vtt(segments: &[Segment]) -> String {
    let cues: Vec<String> = segments
        .iter()
        .map(|s| {
            format!(
                "{} --> {}\n{}\n",
                timestamp(s.start, '.'),
                timestamp(s.end, '.'),
                s.text
            )
        })
        .collect();
    format!("WEBVTT\n\n{}", cues.join("\n"))
}

pub struct SttPipeline {
    pub catalog: Arc<SttCatalog>,
}

/// A recogniser's failure as a job's.
pub(crate) fn stt_failure(e: SttError) -> JobFailure {
    match e {
        SttError::Cancelled => JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled."),
        SttError::Input(m) => JobFailure::abort(ErrorCode::UnreadableMedia, m),
        SttError::Failed(m) => JobFailure::retry(ErrorCode::RecognitionFailed, m),
    }
}

#[async_trait::async_trait]
impl Pipeline for SttPipeline {
    fn kind(&self) -> &'static str {
        "stt"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: SttRequest = ctx.payload()?;
        let model = self.catalog.model(Some(&req.model)).ok_or_else(|| {
            JobFailure::abort(
                ErrorCode::EngineUnavailable,
                format!("model {} is not installed here", req.model),
            )
        })?;
        let dir = tempfile::tempdir()
            .map_err(|e| JobFailure::retry(ErrorCode::StorageError, e.to_string()))?;
        let input = ctx
            .blobs
            .readable_file(&req.input, &dir.path().join("input"))
            .await
            .map_err(|e| JobFailure::retry(ErrorCode::StorageError, e.to_string()))?;
        let progress = ctx.clone();
        let opts = SttOptions {
            language: req.language.clone(),
            translate: req.translate,
            prompt: req.prompt.clone(),
            words: req.words,
        };
        // Decoded up to the capability's limit, whatever the header said,
        // and charged for what was decoded.
        let duration = SPEECH_TO_TEXT.max_seconds;
        let catalog = self.catalog.clone();
        let transcript: Transcript = tokio::task::spawn_blocking(move || {
            let scratch = input.with_extension("pcm");
            let pcm = demuxer(&input)
                .and_then(|d| pcm::decode(&input, d, &scratch, 16_000, duration))
                .map_err(|e| JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string()))?;
            progress.meter_blocking(pcm.duration())?;
            transcribe_stream(model.as_ref(), catalog.gate(), &opts, &pcm, &mut |done| {
                progress.set_progress((done * 100.0) as i64);
                !progress.is_cancelled()
            })
            .map_err(stt_failure)
        })
        .await
        .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        let mut result = serde_json::to_value(&transcript)
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))?;
        result["model"] = json!(req.model);
        result["task"] = json!(if req.translate {
            "translate"
        } else {
            "transcribe"
        });
        result["responseFormat"] = json!(req.response_format);
        let rendered = match req.response_format.as_str() {
            "srt" => Some(("transcript.srt", "subtitles", srt(&transcript.segments))),
            "vtt" => Some(("transcript.vtt", "subtitles", vtt(&transcript.segments))),
            "text" => Some(("transcript.txt", "transcript", transcript.text.clone())),
            _ => None,
        };
        if let Some((name, field, body)) = rendered {
            ctx.put_output(&format!("/{field}Url"), name, body.clone().into())
                .await?;
            if field == "subtitles" {
                result["subtitles"] = json!(body);
            }
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtitles_render() {
        let segs = vec![
            Segment {
                id: 0,
                start: 0.0,
                end: 1.5,
                text: "Hello.".into(),
                avg_logprob: 0.0,
                no_speech_prob: 0.0,
            },
            Segment {
                id: 1,
                start: 61.25,
                end: 3725.0,
                text: "Bye.".into(),
                avg_logprob: 0.0,
                no_speech_prob: 0.0,
            },
        ];
        assert_eq!(
            srt(&segs),
            "1\n00:00:00,000 --> 00:00:01,500\nHello.\n\n2\n00:01:01,250 --> 01:02:05,000\nBye.\n"
        );
        assert_eq!(vtt(&segs), "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello.\n\n00:01:01.250 --> 01:02:05.000\nBye.\n");
    }
}
