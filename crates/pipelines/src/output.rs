//! A new sound track delivered the way the input came: as an audio file in
//! the requested format, or inside the input video (picture copied).

use std::path::Path;

use mediagen_engines::media::encode;
use mediagen_engines::video::{replace_audio, Container, VideoInfo};
use mediagen_engines::{Audio, AudioFormat};
use mediagen_worker::{JobContext, JobFailure};
use serde_json::{json, Value};

/// An encoded result file.
pub struct Delivered {
    /// File name (`<stem>.<extension>`).
    pub name: String,
    /// Encoded audio in memory, or a video left on disk (videos are stored
    /// from their file, in parts, never read whole).
    pub body: Body,
    /// Set when the result is a video.
    pub container: Option<Container>,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

/// `audio` as a file: inside a copy of `input`'s picture when `video` is
/// given (mp4, or mkv for codecs mp4 cannot hold), else encoded as
/// `format` at `rate`. Blocking.
pub fn deliver(
    input: &Path,
    video: Option<&VideoInfo>,
    audio: &Audio,
    (format, sample_rate): (AudioFormat, u32),
    scratch: &Path,
    stem: &str,
) -> Result<Delivered, JobFailure> {
    let failed = |e: &dyn std::fmt::Display| JobFailure::abort("encoding_failed", e.to_string());
    let Some(info) = video else {
        return Ok(Delivered {
            name: format!("{stem}.{}", format.extension()),
            body: Body::Bytes(encode(audio, format, sample_rate).map_err(|e| failed(&e))?),
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
    let wav = scratch.join(format!("{stem}.wav"));
    std::fs::write(
        &wav,
        encode(audio, AudioFormat::Wav, audio.sample_rate).map_err(|e| failed(&e))?,
    )
    .map_err(JobFailure::storage)?;
    let out = scratch.join(format!("{stem}.{}", container.as_str()));
    replace_audio(input, info, &wav, container, &out).map_err(|e| failed(&e))?;
    Ok(Delivered {
        name: format!("{stem}.{}", container.as_str()),
        body: Body::File(out),
        container: Some(container),
        format,
        sample_rate,
    })
}

/// Where a delivered file's bytes are.
pub enum Body {
    Bytes(Vec<u8>),
    File(std::path::PathBuf),
}

impl Delivered {
    /// Stores the file as the job's output at [`Delivered::url_field`].
    pub async fn store(&mut self, ctx: &JobContext) -> Result<String, JobFailure> {
        let field = self.url_field();
        match &mut self.body {
            Body::Bytes(bytes) => {
                ctx.put_output(field, &self.name, std::mem::take(bytes).into())
                    .await
            }
            Body::File(path) => ctx.put_output_file(field, &self.name, path).await,
        }
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
