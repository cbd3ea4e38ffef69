//! Whole-file video operations besides trimming: a poster frame, and the
//! picture with another sound track.

use std::path::Path;
use std::time::Duration;

use super::probe::VideoInfo;
use super::trim::{time_limit, Container};
use crate::media::{ffmpeg, MediaError};
use crate::pcm::PcmFile;
use crate::process::run;

/// Writes the first frame of a video as a PNG poster.
pub fn poster(input: &Path, info: &VideoInfo, out: &Path) -> Result<(), MediaError> {
    let mut cmd = ffmpeg();
    info.open(&mut cmd, input)
        .args([
            "-map",
            "0:v:0",
            "-frames:v",
            "1",
            "-f",
            "image2",
            "-c:v",
            "png",
        ])
        .arg(out);
    run(cmd, b"", Duration::from_secs(60))?;
    Ok(())
}

/// `input`'s picture, copied, with the sound of `audio` (mono PCM we
/// wrote, read as raw 32-bit floats at its rate: the demuxer is forced,
/// nothing is probed) encoded for `container` instead of its own.
pub fn replace_audio(
    input: &Path,
    info: &VideoInfo,
    audio: &PcmFile,
    container: Container,
    out: &Path,
) -> Result<(), MediaError> {
    let mut cmd = ffmpeg();
    info.open(&mut cmd, input)
        .args([
            "-f",
            "f32le",
            "-ar",
            &audio.rate().to_string(),
            "-ac",
            "1",
            "-i",
        ])
        .arg(audio.path())
        .args(["-map", "0:v:0", "-map", "1:a:0", "-c:v", "copy"])
        .args([
            "-c:a",
            if container == Container::Webm {
                "libopus"
            } else {
                "aac"
            },
        ])
        .args(["-b:a", &container.audio_bitrate(1)])
        .args(["-f", container.muxer()])
        .arg(out);
    run(cmd, b"", time_limit(info.duration))?;
    Ok(())
}
