//! `stt`: an uploaded audio or video file → text with timestamps.

use mediagen_core::ErrorCode;
use std::sync::Arc;

use mediagen_media::media::{demuxer, DEMUXERS};
use mediagen_media::pcm;

use mediagen_jobs::limits::SPEECH_TO_TEXT;
use mediagen_speech::stt::speakers::{attribute, with_overlaps};
use mediagen_speech::stt::{
    transcribe_stream, Segment, SpeakerCount, SttCatalog, SttError, SttOptions, Transcript,
};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

pub use mediagen_jobs::stt::*;

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

/// SubRip subtitles of the segments; a diarized segment's text starts
/// with its speaker in brackets (`[speaker_0] …`), SubRip having no voice
/// tag of its own.
pub fn srt(segments: &[Segment]) -> String {
    segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let text = match &s.speaker {
                Some(who) => format!("[{who}] {}", s.text),
                None => s.text.clone(),
            };
            format!(
                "{}\n{} --> {}\n{}\n",
                i + 1,
                timestamp(s.start, ','),
                timestamp(s.end, ','),
                text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// WebVTT subtitles of the segments; a diarized segment is in a voice
/// span (`<v speaker_0>…`). Cue text escapes `&` and `<`.
pub fn vtt(segments: &[Segment]) -> String {
    let cues: Vec<String> = segments
        .iter()
        .map(|s| {
            let text = s.text.replace('&', "&amp;").replace('<', "&lt;");
            let text = match &s.speaker {
                Some(who) => format!("<v {who}>{text}"),
                None => text,
            };
            format!(
                "{} --> {}\n{}\n",
                timestamp(s.start, '.'),
                timestamp(s.end, '.'),
                text
            )
        })
        .collect();
    format!("WEBVTT\n\n{}", cues.join("\n"))
}

pub struct SttPipeline {
    pub catalog: Arc<SttCatalog>,
}

/// The recogniser `name`, or the failure of a job that asks for one not
/// installed on this worker.
pub(crate) fn installed(
    catalog: &SttCatalog,
    name: &str,
) -> Result<Arc<dyn mediagen_speech::stt::SpeechToText>, JobFailure> {
    catalog.model(Some(name)).ok_or_else(|| {
        JobFailure::abort(
            ErrorCode::EngineUnavailable,
            format!("model {name} is not installed here"),
        )
    })
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
impl RequestPipeline for SttPipeline {
    type Request = SttRequest;

    async fn work(&self, ctx: JobContext, req: SttRequest) -> Result<Value, JobFailure> {
        let model = installed(&self.catalog, &req.model)?;
        let (_scratch, input) = ctx.scratch_with(&req.input, "input").await?;
        let progress = ctx.clone();
        let opts = SttOptions {
            language: req.language.clone(),
            translate: req.translate,
            prompt: req.prompt.clone(),
            // Speakers are given to words, and segments cut between them.
            words: req.words || req.diarize,
            decoding: mediagen_speech::stt::Decoding::Full,
        };
        let n = |v: Option<u32>| v.map(|n| n as usize);
        let speakers = SpeakerCount {
            exactly: n(req.num_speakers),
            at_least: n(req.min_speakers),
            at_most: n(req.max_speakers),
        };
        let (diarize, keep_words) = (req.diarize, req.words);
        // Decoded up to the capability's limit, whatever the header said,
        // and charged for what was decoded.
        let duration = SPEECH_TO_TEXT.max_seconds;
        let catalog = self.catalog.clone();
        // The API's probe of the upload, where it made one and named an
        // allowed demuxer; a probe here otherwise (an ffprobe costs ~0.1 s).
        let probed = req
            .demuxer
            .as_deref()
            .and_then(|d| DEMUXERS.iter().find(|allowed| **allowed == d).copied());
        let transcript: Transcript = ctx
            .blocking(move || {
                let scratch = input.with_extension("pcm");
                let pcm = crate::failure::media_result(
                    probed
                        .map_or_else(|| demuxer(&input), Ok)
                        .and_then(|d| pcm::decode(&input, d, &scratch, 16_000, duration)),
                )?;
                progress.meter_blocking(pcm.duration())?;
                let mut transcript = transcribe_stream(
                    model.as_ref(),
                    catalog.gate(),
                    catalog.vad(),
                    &opts,
                    &pcm,
                    &mut |done| {
                        progress.set_progress((done * 100.0) as i64);
                        !progress.is_cancelled()
                    },
                )
                .map_err(stt_failure)?;
                if diarize {
                    let who = catalog.diarize(&pcm, speakers).map_err(stt_failure)?;
                    attribute(&mut transcript, &who);
                    if !keep_words {
                        transcript.words.clear();
                    }
                }
                Ok::<_, JobFailure>(transcript)
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
            "srt" => Some((
                "transcript.srt",
                "subtitles",
                srt(&with_overlaps(&transcript)),
            )),
            "vtt" => Some((
                "transcript.vtt",
                "subtitles",
                vtt(&with_overlaps(&transcript)),
            )),
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
                compression_ratio: 0.0,
                speaker: None,
            },
            Segment {
                id: 1,
                start: 61.25,
                end: 3725.0,
                text: "Bye.".into(),
                avg_logprob: 0.0,
                no_speech_prob: 0.0,
                compression_ratio: 0.0,
                speaker: None,
            },
        ];
        assert_eq!(
            srt(&segs),
            "1\n00:00:00,000 --> 00:00:01,500\nHello.\n\n2\n00:01:01,250 --> 01:02:05,000\nBye.\n"
        );
        assert_eq!(vtt(&segs), "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello.\n\n00:01:01.250 --> 01:02:05.000\nBye.\n");
        // Diarized: the speaker as a voice span (vtt) or a bracketed
        // prefix (srt); cue text cannot open a tag of its own.
        let mut said = segs[..1].to_vec();
        said[0].speaker = Some("speaker_1".into());
        said[0].text = "<b>Tom & Jerry</b>".into();
        assert_eq!(
            vtt(&said),
            "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n<v speaker_1>&lt;b>Tom &amp; Jerry&lt;/b>\n"
        );
        assert!(srt(&said).contains("\n[speaker_1] <b>Tom & Jerry</b>\n"));
    }
}
