//! Video trimming with ffmpeg and ffprobe, run as subprocesses: files only
//! (`-protocol_whitelist file,pipe`), no stdin, a time limit scaled to the
//! media, and every argument built by us from validated numbers (no
//! user-supplied string reaches a command line or a filter graph).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::media::MediaError;
use crate::process::run;

/// What ffprobe says about a video file.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoInfo {
    /// Seconds.
    pub duration: f64,
    pub width: u32,
    pub height: u32,
    /// Frames per second (the stream's nominal rate).
    pub fps: f64,
    /// True when the nominal and the average rate agree (constant rate).
    pub constant_rate: bool,
    pub video_codec: String,
    /// `None` without an audio stream.
    pub audio_codec: Option<String>,
}

fn rate(r: &str) -> Option<f64> {
    let (n, d) = r.split_once('/')?;
    let (n, d): (f64, f64) = (n.parse().ok()?, d.parse().ok()?);
    (n > 0.0 && d > 0.0).then_some(n / d)
}

fn ffprobe(args: &[&str], path: &Path, timeout: f64) -> Result<String, MediaError> {
    let mut cmd = Command::new("ffprobe");
    cmd.args(["-v", "error", "-protocol_whitelist", "file"])
        .args(args)
        .arg(path);
    let out = run(cmd, b"", Duration::from_secs_f64(timeout))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Parses `ffprobe -show_streams -show_format -of json`.
pub fn parse_info(json: &str) -> Option<VideoInfo> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let streams = v["streams"].as_array()?;
    let video = streams
        .iter()
        .find(|s| s["codec_type"] == "video" && s["disposition"]["attached_pic"] != 1)?;
    let audio = streams.iter().find(|s| s["codec_type"] == "audio");
    let nominal = rate(video["r_frame_rate"].as_str()?)?;
    let average = video["avg_frame_rate"].as_str().and_then(rate);
    Some(VideoInfo {
        duration: v["format"]["duration"].as_str()?.parse().ok()?,
        width: video["width"].as_u64()? as u32,
        height: video["height"].as_u64()? as u32,
        fps: nominal,
        constant_rate: average.is_some_and(|a| (a - nominal).abs() < 0.01 * nominal),
        video_codec: video["codec_name"].as_str()?.to_owned(),
        audio_codec: audio.and_then(|a| a["codec_name"].as_str().map(str::to_owned)),
    })
}

/// The video facts of a file; `None` when it has no picture stream.
pub fn inspect(path: &Path) -> Result<Option<VideoInfo>, MediaError> {
    let json = ffprobe(
        &["-show_streams", "-show_format", "-of", "json"],
        path,
        60.0,
    )?;
    Ok(parse_info(&json))
}

/// Times (seconds) of the video's keyframes, read from the packet index
/// without decoding.
pub fn keyframes(path: &Path, duration: f64) -> Result<Vec<f64>, MediaError> {
    let csv = ffprobe(
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            "packet=pts_time,flags",
            "-of",
            "csv=p=0",
        ],
        path,
        60.0 + duration / 10.0,
    )?;
    let mut keys: Vec<f64> = csv
        .lines()
        .filter_map(|l| {
            let (t, flags) = l.split_once(',')?;
            flags.contains('K').then(|| t.parse().ok()).flatten()
        })
        .collect();
    keys.sort_by(f64::total_cmp);
    keys.dedup();
    Ok(keys)
}

/// A time range in seconds, `start` < `end`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Range {
    pub start: f64,
    pub end: f64,
}

/// Output containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    Mp4,
    Webm,
    Mov,
    Mkv,
}

impl Container {
    pub const ALL: [Container; 4] = [Self::Mp4, Self::Webm, Self::Mov, Self::Mkv];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Webm => "webm",
            Self::Mov => "mov",
            Self::Mkv => "mkv",
        }
    }

    /// ffmpeg's muxer.
    fn muxer(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Webm => "webm",
            Self::Mov => "mov",
            Self::Mkv => "matroska",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Mp4 => "video/mp4",
            Self::Webm => "video/webm",
            Self::Mov => "video/quicktime",
            Self::Mkv => "video/x-matroska",
        }
    }

    /// Whether a stream-copied stream of `codec` fits this container.
    pub fn accepts(self, codec: &str) -> bool {
        match self {
            Self::Webm => ["vp8", "vp9", "av1", "opus", "vorbis"].contains(&codec),
            Self::Mp4 | Self::Mov => [
                "h264", "hevc", "mpeg4", "av1", "vp9", "aac", "mp3", "opus", "alac", "ac3",
            ]
            .contains(&codec),
            Self::Mkv => true,
        }
    }

    /// Encoder arguments for a re-encode into this container.
    fn encoders(self) -> &'static [&'static str] {
        match self {
            Self::Webm => &[
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "realtime",
                "-cpu-used",
                "8",
                "-row-mt",
                "1",
                "-b:v",
                "0",
                "-crf",
                "32",
                "-c:a",
                "libopus",
                "-b:a",
                "128k",
            ],
            _ => &[
                "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p",
                "-c:a", "aac", "-b:a", "192k",
            ],
        }
    }
}

/// How a trim was made.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trimmed {
    /// The ranges as cut (fast mode snaps starts to keyframes).
    pub ranges: Vec<Range>,
    /// `reencode` or `stream_copy`.
    pub method: &'static str,
}

fn ffmpeg() -> Command {
    let mut cmd = Command::new("ffmpeg");
    cmd.args([
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-protocol_whitelist",
        "file,pipe",
        "-y",
    ]);
    cmd
}

fn secs(t: f64) -> String {
    format!("{t:.6}")
}

/// Frame-exact cuts by decoding and re-encoding the ranges: each range
/// keeps the frames from the one at `start` up to (not including) the one at
/// `end` (times snapped to the frame grid), audio cut at the same times,
/// all joined in order.
pub fn trim_accurate(
    input: &Path,
    info: &VideoInfo,
    ranges: &[Range],
    container: Container,
    out: &Path,
) -> Result<Trimmed, MediaError> {
    let fps = info.fps;
    let frame = |t: f64| (t * fps).round() as i64;
    let mut graph = String::new();
    let mut applied = Vec::new();
    for (i, r) in ranges.iter().enumerate() {
        let (a, b) = (frame(r.start), frame(r.end).max(frame(r.start) + 1));
        let (s, e) = (a as f64 / fps, b as f64 / fps);
        applied.push(Range { start: s, end: e });
        graph.push_str(&format!(
            "[0:v:0]trim=start_frame={a}:end_frame={b},setpts=PTS-STARTPTS[v{i}];"
        ));
        if info.audio_codec.is_some() {
            graph.push_str(&format!(
                "[0:a:0]atrim=start={}:end={},asetpts=PTS-STARTPTS[a{i}];",
                secs(s),
                secs(e)
            ));
        }
    }
    let audio = info.audio_codec.is_some();
    for i in 0..ranges.len() {
        graph.push_str(&format!("[v{i}]"));
        if audio {
            graph.push_str(&format!("[a{i}]"));
        }
    }
    graph.push_str(&format!(
        "concat=n={}:v=1:a={}[v]{}",
        ranges.len(),
        u8::from(audio),
        if audio { "[a]" } else { "" }
    ));
    let mut cmd = ffmpeg();
    cmd.arg("-i")
        .arg(input)
        .args(["-filter_complex", &graph, "-map", "[v]"]);
    if audio {
        cmd.args(["-map", "[a]"]);
    }
    // The graph yields exactly the frames wanted: no duplicates or drops.
    cmd.args(["-fps_mode", "passthrough"])
        .args(container.encoders())
        .args(["-f", container.muxer()])
        .arg(out);
    run(cmd, b"", time_limit(info.duration))?;
    Ok(Trimmed {
        ranges: applied,
        method: "reencode",
    })
}

fn time_limit(duration: f64) -> Duration {
    Duration::from_secs_f64(120.0 + duration * 4.0)
}

/// Cuts without re-encoding: each range starts at the keyframe at or
/// before its start and runs to its end, the pieces joined by ffmpeg's
/// concat demuxer from a list we write in `scratch`.
pub fn trim_fast(
    input: &Path,
    info: &VideoInfo,
    ranges: &[Range],
    container: Container,
    scratch: &Path,
    out: &Path,
) -> Result<Trimmed, MediaError> {
    let keys = keyframes(input, info.duration)?;
    let mut list = String::from("ffconcat version 1.0\n");
    let mut applied = Vec::new();
    for (i, r) in ranges.iter().enumerate() {
        let key = keys
            .iter()
            .copied()
            .rfind(|&k| k <= r.start + 0.5 / info.fps)
            .unwrap_or(0.0);
        let name = format!("part{i}.mkv");
        let mut cmd = ffmpeg();
        // Seeking a hair past the keyframe lands on it, not the one before.
        cmd.args(["-ss", &secs(key + 0.25 / info.fps), "-i"])
            .arg(input)
            // Up to, not including, the frame at the end.
            .args(["-t", &secs(r.end - key - 0.5 / info.fps), "-map", "0:v:0"]);
        if info.audio_codec.is_some() {
            cmd.args(["-map", "0:a:0"]);
        }
        cmd.args([
            "-c",
            "copy",
            "-avoid_negative_ts",
            "make_zero",
            "-f",
            "matroska",
        ])
        .arg(scratch.join(&name));
        run(cmd, b"", time_limit(r.end - key))?;
        list.push_str(&format!("file {name}\n"));
        applied.push(Range {
            start: key,
            end: r.end,
        });
    }
    let list_path = scratch.join("parts.ffconcat");
    std::fs::write(&list_path, list).map_err(|source| {
        MediaError::Process(crate::process::ProcessError::Io {
            program: "ffmpeg".into(),
            source,
        })
    })?;
    let mut cmd = ffmpeg();
    cmd.args(["-f", "concat", "-safe", "1", "-i"])
        .arg(&list_path)
        .args(["-map", "0", "-c", "copy", "-f", container.muxer()])
        .arg(out);
    run(cmd, b"", time_limit(info.duration))?;
    Ok(Trimmed {
        ranges: applied,
        method: "stream_copy",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_json_is_read() {
        let json = r#"{"streams":[{"codec_type":"video","codec_name":"h264","width":640,"height":360,
            "r_frame_rate":"25/1","avg_frame_rate":"25/1"},{"codec_type":"audio","codec_name":"aac"}],
            "format":{"duration":"10.000000"}}"#;
        let info = parse_info(json).unwrap();
        assert_eq!((info.width, info.height, info.fps), (640, 360, 25.0));
        assert!(info.constant_rate);
        assert_eq!(info.audio_codec.as_deref(), Some("aac"));
        let audio_only =
            r#"{"streams":[{"codec_type":"audio","codec_name":"mp3"}],"format":{"duration":"3"}}"#;
        assert_eq!(parse_info(audio_only), None);
    }

    #[test]
    fn containers_know_their_codecs() {
        assert!(Container::Mp4.accepts("h264") && !Container::Webm.accepts("h264"));
        assert_eq!(Container::parse("mkv"), Some(Container::Mkv));
        assert_eq!(Container::parse("avi"), None);
    }
}
