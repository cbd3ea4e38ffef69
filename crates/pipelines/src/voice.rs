//! `voice.change`: the voice in an audio file (or a video's sound track)
//! changed toward a target voice profile, words and timing kept.

use std::collections::HashMap;

use mediagen_core::ApiError;
use mediagen_engines::media::{decode_mono, encode};
use mediagen_engines::video::{inspect, replace_audio, Container};
use mediagen_engines::voice::{VoiceConverter, VoiceProfile, WorldConverter, RATE};
use mediagen_engines::{Audio, AudioFormat};
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::audio_output;

/// A validated voice change (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChangeRequest {
    /// Blob key of the input file.
    pub input: String,
    pub file_id: String,
    pub voice_id: String,
    pub target: VoiceProfile,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

/// The options of a voice change besides the input and the target.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeOptions {
    pub voice_id: String,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

impl ChangeOptions {
    pub fn parse(fields: &HashMap<String, String>) -> Result<Self, ApiError> {
        const KNOWN: [&str; 5] = ["voiceId", "mode", "format", "sampleRate", "dryRun"];
        if let Some(key) = fields.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ApiError::invalid_parameter(key, "unknown parameter"));
        }
        let voice_id = fields
            .get("voiceId")
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| ApiError::invalid_parameter("voiceId", "required"))?
            .clone();
        match fields.get("mode").map(String::as_str) {
            None | Some("convert") => {}
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "mode",
                    "must be convert (the only mode this server offers yet)",
                ))
            }
        }
        let rate = match fields.get("sampleRate") {
            None => None,
            Some(r) => Some(
                r.parse()
                    .map_err(|_| ApiError::invalid_parameter("sampleRate", "must be an integer"))?,
            ),
        };
        let (format, sample_rate) =
            audio_output(fields.get("format").map(String::as_str), rate, RATE)?;
        Ok(Self {
            voice_id,
            format,
            sample_rate,
        })
    }

    pub fn with(self, input: String, file_id: String, target: VoiceProfile) -> ChangeRequest {
        ChangeRequest {
            input,
            file_id,
            voice_id: self.voice_id,
            target,
            format: self.format,
            sample_rate: self.sample_rate,
        }
    }
}

pub struct VoiceChangePipeline;

fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

#[async_trait::async_trait]
impl Pipeline for VoiceChangePipeline {
    fn kind(&self) -> &'static str {
        "voice.change"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: ChangeRequest = ctx.payload()?;
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let input = ctx
            .blobs
            .readable_file(&req.input, &dir.path().join("input"))
            .await
            .map_err(JobFailure::storage)?;
        let scratch = dir.path().to_owned();
        let r = req.clone();
        let (name, bytes, converted, seconds, video) = tokio::task::spawn_blocking(move || {
            let unreadable =
                |e: &dyn std::fmt::Display| JobFailure::abort("unreadable_media", e.to_string());
            let video = inspect(&input).map_err(|e| unreadable(&e))?;
            let samples = decode_mono(&input, RATE).map_err(|e| unreadable(&e))?;
            if samples.is_empty() {
                return Err(JobFailure::abort("no_audio", "the file has no sound"));
            }
            let mut converted = WorldConverter.convert(&samples, &r.target);
            let audio = Audio::new(std::mem::take(&mut converted.samples), RATE);
            let seconds = audio.duration();
            let failed =
                |e: &dyn std::fmt::Display| JobFailure::abort("conversion_failed", e.to_string());
            match &video {
                Some(info) => {
                    // A video keeps its picture (copied) with the new sound.
                    let container = if Container::Mp4.accepts(&info.video_codec) {
                        Container::Mp4
                    } else {
                        Container::Mkv
                    };
                    let wav = scratch.join("voice.wav");
                    std::fs::write(
                        &wav,
                        encode(&audio, AudioFormat::Wav, RATE).map_err(|e| failed(&e))?,
                    )
                    .map_err(JobFailure::storage)?;
                    let out = scratch.join(format!("changed.{}", container.as_str()));
                    replace_audio(&input, info, &wav, container, &out).map_err(|e| failed(&e))?;
                    let bytes = std::fs::read(&out).map_err(JobFailure::storage)?;
                    Ok((
                        format!("changed.{}", container.as_str()),
                        bytes,
                        converted,
                        seconds,
                        Some(container),
                    ))
                }
                None => {
                    let bytes = encode(&audio, r.format, r.sample_rate).map_err(|e| failed(&e))?;
                    Ok((
                        format!("changed.{}", r.format.extension()),
                        bytes,
                        converted,
                        seconds,
                        None,
                    ))
                }
            }
        })
        .await
        .map_err(|e| JobFailure::abort("internal_error", e.to_string()))??;
        let key = ctx.output_key(&name);
        ctx.blobs
            .put(&key, bytes.into())
            .await
            .map_err(JobFailure::storage)?;
        let duration = round(seconds, 3);
        let url = format!("blob:{key}");
        let mut result = json!({
            "duration": duration,
            "voiceId": req.voice_id,
            "fileId": req.file_id,
            "mode": "convert",
            "converter": WorldConverter.name(),
            "pitchBefore": round(converted.pitch_before, 1),
            "pitchAfter": round(converted.pitch_after, 1),
            "targetPitch": round(req.target.pitch_median, 1),
        });
        match video {
            Some(container) => {
                result["videoUrl"] = json!(url);
                result["format"] = json!(container);
                result["contentType"] = json!(container.content_type());
            }
            None => {
                result["audioUrl"] = json!(url);
                result["format"] = json!(req.format.as_str());
                result["sampleRate"] = json!(req.sample_rate);
                result["contentType"] = json!(req.format.content_type());
            }
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_validated() {
        let f = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let ok = ChangeOptions::parse(&f(&[("voiceId", "voice_1"), ("format", "wav")])).unwrap();
        assert_eq!((ok.format, ok.sample_rate), (AudioFormat::Wav, RATE));
        for (bad, param) in [
            (f(&[]), "voiceId"),
            (f(&[("voiceId", "v"), ("mode", "magic")]), "mode"),
            (f(&[("voiceId", "v"), ("format", "aiff")]), "format"),
            (f(&[("voiceId", "v"), ("pitch", "2")]), "pitch"),
        ] {
            assert_eq!(
                ChangeOptions::parse(&bad).unwrap_err().details["parameter"],
                param
            );
        }
    }
}
