//! A new sound track delivered the way the input came: as an audio file in
//! the requested format, or inside the input video (picture copied).

use mediagen_core::ErrorCode;
use std::path::{Path, PathBuf};

use mediagen_media::pcm::{encode, PcmFile};
use mediagen_media::video::{replace_audio, Container, VideoInfo};
use mediagen_media::AudioFormat;
use mediagen_worker::{JobContext, JobFailure};
use serde_json::{json, Value};

/// An encoded result file, on disk until stored (stored from its file, in
/// parts, never read whole).
pub struct Delivered {
    /// File name (`<stem>.<extension>`).
    pub name: String,
    pub path: PathBuf,
    /// Set when the result is a video.
    pub container: Option<Container>,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

/// `audio` (a file of samples) as a result file: inside a copy of `input`'s
/// picture when `video` is given (mp4, or mkv for codecs mp4 cannot hold),
/// else encoded as `format` at `rate`. ffmpeg reads the samples from their
/// file and writes the result to `scratch`. Blocking.
pub fn deliver(
    input: &Path,
    video: Option<&VideoInfo>,
    audio: &PcmFile,
    (format, sample_rate): (AudioFormat, u32),
    scratch: &Path,
    stem: &str,
) -> Result<Delivered, JobFailure> {
    let failed =
        |e: &dyn std::fmt::Display| JobFailure::abort(ErrorCode::EncodingFailed, e.to_string());
    let Some(info) = video else {
        let name = format!("{stem}.{}", format.extension());
        let path = scratch.join(&name);
        encode(audio, format, sample_rate, &path).map_err(|e| failed(&e))?;
        return Ok(Delivered {
            name,
            path,
            container: None,
            format,
            sample_rate,
        });
    };
    let container = if Container::Mp4.accepts(&info.video_codec) {
        Container::Mp4
    } else {
        Container::Mkv
    };
    let name = format!("{stem}.{}", container.as_str());
    let path = scratch.join(&name);
    replace_audio(input, info, audio, container, &path).map_err(|e| failed(&e))?;
    Ok(Delivered {
        name,
        path,
        container: Some(container),
        format,
        sample_rate,
    })
}

impl Delivered {
    /// Stores the file as the job's output at [`Delivered::url_field`].
    pub async fn store(&self, ctx: &JobContext) -> Result<String, JobFailure> {
        ctx.put_output_file(self.url_field(), &self.name, &self.path)
            .await
    }

    /// Where the file's URL goes in the result: `/videoUrl` or `/audioUrl`.
    pub fn url_field(&self) -> &'static str {
        match self.container {
            Some(_) => "/videoUrl",
            None => "/audioUrl",
        }
    }

    /// Adds `format` and `contentType` (and `sampleRate` for audio).
    pub fn describe(&self, result: &mut Value) {
        match self.container {
            Some(container) => {
                result["format"] = json!(container);
                result["contentType"] = json!(container.content_type());
            }
            None => {
                result["format"] = json!(self.format.as_str());
                result["sampleRate"] = json!(self.sample_rate);
                result["contentType"] = json!(self.format.content_type());
            }
        }
    }
}
