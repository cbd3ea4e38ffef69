//! What a media file is, asked of ffprobe and checked against our
//! allowlists of demuxers and codecs before anything decodes it; and the
//! sandboxed way every media tool runs (`process`: files only, no stdin, a
//! time limit). The API probes uploads with this crate alone: it runs no
//! engine.

pub mod process;

use std::process::Command;
use std::time::Duration;

use process::{run, ProcessError};

/// Demuxers that may read user input. Each reads one self-contained file:
/// none opens another file or URL (playlists such as `hls`, `concat` lists,
/// image sequences, `dash`, `sdp` and subtitle formats are absent), so no
/// input can make ffmpeg read anything but itself. Every probe of user
/// input is limited to these (`-format_whitelist`), and every decode names
/// the one the probe found (`-f`), so ffmpeg never guesses.
pub const DEMUXERS: [&str; 15] = [
    "wav", "w64", "mp3", "ogg", "flac", "aac", "aiff", "caf", "mov", "matroska", "mpegts", "avi",
    "flv", "mpeg", "asf",
];

/// Sound codecs the capabilities decode.
pub const AUDIO_CODECS: [&str; 24] = [
    "pcm_s16le",
    "pcm_s16be",
    "pcm_s24le",
    "pcm_s24be",
    "pcm_s32le",
    "pcm_f32le",
    "pcm_f64le",
    "pcm_u8",
    "pcm_mulaw",
    "pcm_alaw",
    "mp3",
    "mp2",
    "aac",
    "opus",
    "vorbis",
    "flac",
    "alac",
    "ac3",
    "eac3",
    "wmav2",
    "amr_nb",
    "amr_wb",
    "adpcm_ima_wav",
    "adpcm_ms",
];

/// Picture codecs the capabilities decode (`png` and `mjpeg` also as the
/// cover art of audio files).
pub const VIDEO_CODECS: [&str; 14] = [
    "h264",
    "hevc",
    "vp8",
    "vp9",
    "av1",
    "mpeg4",
    "mpeg2video",
    "mpeg1video",
    "mjpeg",
    "prores",
    "theora",
    "png",
    "wmv2",
    "wmv3",
];

/// The allowed demuxer that read a container ffprobe names
/// (`mov,mp4,m4a,3gp,3g2,mj2` → `mov`).
pub fn demuxer_of(format_name: &str) -> Option<&'static str> {
    format_name
        .split(',')
        .find_map(|f| DEMUXERS.into_iter().find(|&d| d == f))
}

/// Most pixels a decoded picture of user input may have: the limits'
/// largest side squared. The probe sees only a stream's first picture
/// size; every decoder of user input is capped here, so a stream whose
/// later pictures grow fails to decode (422) instead of taking memory.
pub const MAX_PIXELS: u64 = 4096 * 4096;

/// `-max_pixels <n> -format_whitelist <d> -f <d> -i <path>`: opens user
/// input with exactly the demuxer its probe found, every picture decoder
/// capped at [`MAX_PIXELS`], from the directory holding the input.
pub fn open_input<'a>(
    cmd: &'a mut Command,
    path: &std::path::Path,
    demuxer: &str,
) -> &'a mut Command {
    in_dir_of(cmd, path)
        .args(["-max_pixels", &MAX_PIXELS.to_string()])
        .args(["-format_whitelist", demuxer, "-f", demuxer])
        .arg("-i")
        .arg(path)
}

/// Runs a tool reading user input from the directory that holds the input:
/// each job's (or upload's) own scratch directory, which holds nothing but
/// its inputs and outputs, so no relative name can reach another's files.
pub fn in_dir_of<'a>(cmd: &'a mut Command, path: &std::path::Path) -> &'a mut Command {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => cmd.current_dir(dir),
        _ => cmd,
    }
}

/// What ffprobe found in a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Seconds, as the container says (decoders measure what they read).
    pub duration: f64,
    pub has_audio: bool,
    pub has_video: bool,
    /// ffprobe's container name, e.g. `wav`, `mov,mp4,m4a,3gp,3g2,mj2`.
    pub format: String,
    /// The allowed demuxer that reads it (see [`DEMUXERS`]).
    pub demuxer: &'static str,
    /// Codec of the first sound stream.
    pub audio_codec: Option<String>,
    /// Codec of the first picture stream (cover art included).
    pub video_codec: Option<String>,
    /// Size of the first picture stream, in pixels.
    pub width: u32,
    pub height: u32,
}

/// Why a file was refused: not media at all, media of a kind not accepted,
/// or media that cannot be read. Messages are for the client: they never
/// hold a path or a tool's output (that is logged).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProbeError {
    #[error("not an audio or video file")]
    NotMedia,
    #[error("{0}")]
    NotAllowed(String),
    #[error("unreadable media: {0}")]
    Unreadable(String),
    #[error("the file could not be examined")]
    Tool(String),
}

/// Parses `ffprobe -of json -show_entries format=duration,format_name:stream=codec_type,codec_name,width,height:stream_disposition=attached_pic`.
pub fn parse_probe(json: &str) -> Result<Probe, ProbeError> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ProbeError::Tool(e.to_string()))?;
    let streams = v["streams"].as_array().cloned().unwrap_or_default();
    let first = |k: &str| streams.iter().find(|s| s["codec_type"] == k);
    let duration = v["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse::<f64>().ok())
        .unwrap_or(0.0);
    let format = v["format"]["format_name"].as_str().unwrap_or("").to_owned();
    let (audio, video) = (first("audio"), first("video"));
    if audio.is_none() && video.is_none() {
        return Err(ProbeError::NotMedia);
    }
    let demuxer = demuxer_of(&format)
        .ok_or_else(|| ProbeError::NotAllowed("this container format is not accepted".into()))?;
    if !duration.is_finite() || duration <= 0.0 {
        return Err(ProbeError::Unreadable(
            "no duration: the file is empty or damaged".into(),
        ));
    }
    let codec =
        |s: Option<&serde_json::Value>| s.and_then(|s| s["codec_name"].as_str()).map(str::to_owned);
    let dim = |k: &str| video.and_then(|s| s[k].as_u64()).unwrap_or(0) as u32;
    Ok(Probe {
        duration,
        has_audio: audio.is_some(),
        has_video: video.is_some(),
        format,
        demuxer,
        audio_codec: codec(audio),
        video_codec: codec(video),
        width: dim("width"),
        height: dim("height"),
    })
}

impl Probe {
    /// Checks the codecs against the allowlists: a sound stream in an
    /// allowed codec, and a picture (when there is one) in one too.
    pub fn check_codecs(&self) -> Result<(), ProbeError> {
        let allowed = |codec: &Option<String>, list: &[&str]| {
            codec.as_deref().is_none_or(|c| list.contains(&c))
        };
        if !allowed(&self.audio_codec, &AUDIO_CODECS) {
            return Err(ProbeError::NotAllowed(
                "the sound is in a codec that is not accepted".into(),
            ));
        }
        if !allowed(&self.video_codec, &VIDEO_CODECS) {
            return Err(ProbeError::NotAllowed(
                "the picture is in a codec that is not accepted".into(),
            ));
        }
        Ok(())
    }
}

/// Probes a local file with ffprobe (a subprocess, reading that file only:
/// no demuxer outside [`DEMUXERS`] runs, so playlists and lists are not
/// media here), then checks its codecs.
pub fn probe(path: &std::path::Path) -> Result<Probe, ProbeError> {
    let mut cmd = Command::new("ffprobe");
    in_dir_of(&mut cmd, path)
        .args(["-v", "error", "-protocol_whitelist", "file"])
        .args(["-format_whitelist", &DEMUXERS.join(",")])
        .args([
            "-show_entries",
            "format=duration,format_name:stream=codec_type,codec_name,width,height",
            "-of",
            "json",
        ])
        .arg(path);
    let probed = match run(cmd, b"", Duration::from_secs(60)) {
        Ok(out) => parse_probe(&String::from_utf8_lossy(&out)),
        // ffprobe fails on files it cannot parse at all (and on formats
        // outside the whitelist: to it they are not media).
        Err(ProcessError::Failed { stderr, .. }) => {
            tracing::info!(stderr = %stderr.trim(), "ffprobe refused an input");
            if stderr.contains("Invalid data found") || stderr.contains("not on whitelist") {
                Err(ProbeError::NotMedia)
            } else {
                Err(ProbeError::Unreadable(
                    "the file is damaged or truncated".into(),
                ))
            }
        }
        Err(e) => Err(ProbeError::Tool(e.to_string())),
    }?;
    probed.check_codecs()?;
    Ok(probed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_output_is_classified() {
        let audio = r#"{"streams":[{"codec_type":"audio"}],"format":{"format_name":"wav","duration":"2.500000"}}"#;
        assert_eq!(super::parse_probe(audio).unwrap().duration, 2.5);
        let subtitles = r#"{"streams":[{"codec_type":"subtitle"}],"format":{"format_name":"srt","duration":"10"}}"#;
        assert_eq!(
            super::parse_probe(subtitles),
            Err(super::ProbeError::NotMedia)
        );
        let empty = r#"{"streams":[{"codec_type":"audio"}],"format":{"format_name":"wav"}}"#;
        assert!(matches!(
            super::parse_probe(empty),
            Err(super::ProbeError::Unreadable(_))
        ));
    }
}
