//! What ffprobe says about a video: its size, rate, codecs and demuxer.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::media::{demuxer_of, in_dir_of, open_input, MediaError, DEMUXERS};
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
    /// The average rate (frames over the duration), when the file says.
    pub average_fps: Option<f64>,
    pub video_codec: String,
    /// The picture's pixel format, e.g. `yuv420p`.
    pub pix_fmt: String,
    /// `None` without an audio stream.
    pub audio_codec: Option<String>,
    /// The sound's channel count (0 without sound).
    pub audio_channels: u32,
    /// The picture stream's index in the file.
    pub video_index: u64,
    /// The demuxer ffprobe read the file with, one of
    /// [`crate::media::DEMUXERS`]; every decode names it.
    pub demuxer: &'static str,
}

impl VideoInfo {
    /// The rate its frames come at, at most `cap`: the nominal rate, or the
    /// average where that is lower (a nominal rate is guessed from the
    /// smallest gap between timestamps: one timestamp shifted by 10 µs in
    /// a 1-fps Matroska file reads as 1000 fps).
    pub fn frame_rate(&self, cap: f64) -> f64 {
        let average = self.average_fps.filter(|a| a.is_finite() && *a > 0.0);
        average.map_or(self.fps, |a| a.min(self.fps)).min(cap)
    }

    /// `-max_pixels <n> -format_whitelist <d> -f <d> -i <path>` for this file.
    pub(super) fn open<'a>(&self, cmd: &'a mut Command, path: &Path) -> &'a mut Command {
        open_input(cmd, path, self.demuxer)
    }

    /// `-max_pixels <n> -format_whitelist <d> -f <d>` (the caller adds
    /// `-i`, after seeking options): as [`open_input`] opens it.
    pub fn demuxer_args(&self) -> Vec<String> {
        let pixels = mediagen_probe::MAX_PIXELS.to_string();
        [
            "-max_pixels",
            &pixels,
            "-format_whitelist",
            self.demuxer,
            "-f",
            self.demuxer,
        ]
        .map(String::from)
        .to_vec()
    }
}

fn rate(r: &str) -> Option<f64> {
    let (n, d) = r.split_once('/')?;
    let (n, d): (f64, f64) = (n.parse().ok()?, d.parse().ok()?);
    (n > 0.0 && d > 0.0).then_some(n / d)
}

pub(super) fn ffprobe(args: &[&str], path: &Path, timeout: f64) -> Result<String, MediaError> {
    let mut cmd = Command::new("ffprobe");
    in_dir_of(&mut cmd, path)
        .args(["-v", "error", "-protocol_whitelist", "file"])
        .args(["-format_whitelist", &DEMUXERS.join(",")])
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
        average_fps: average,
        video_codec: video["codec_name"].as_str()?.to_owned(),
        pix_fmt: video["pix_fmt"].as_str().unwrap_or("").to_owned(),
        audio_codec: audio.and_then(|a| a["codec_name"].as_str().map(str::to_owned)),
        audio_channels: audio.and_then(|a| a["channels"].as_u64()).unwrap_or(0) as u32,
        video_index: video["index"].as_u64().unwrap_or(0),
        demuxer: demuxer_of(v["format"]["format_name"].as_str()?)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's Matroska file: one frame a second with one timestamp
    /// shifted by 10 µs reads as 1000 fps nominal; its frames come at the
    /// average rate, and no rate passes the cap.
    #[test]
    fn frames_come_at_the_measured_rate() {
        let with = |nominal: &str, average: &str| {
            let json = format!(
                r#"{{"streams":[{{"codec_type":"video","codec_name":"h264","width":64,"height":64,
                "r_frame_rate":"{nominal}","avg_frame_rate":"{average}"}}],
                "format":{{"duration":"300.0","format_name":"matroska,webm"}}}}"#
            );
            parse_info(&json).unwrap()
        };
        assert_eq!(with("1000/1", "1/1").frame_rate(60.0), 1.0);
        assert_eq!(
            with("30000/1001", "30000/1001").frame_rate(60.0),
            30000.0 / 1001.0
        );
        assert_eq!(with("240/1", "240/1").frame_rate(60.0), 60.0);
        assert_eq!(with("25/1", "0/0").frame_rate(60.0), 25.0);
    }

    #[test]
    fn probe_json_is_read() {
        let json = r#"{"streams":[{"codec_type":"video","codec_name":"h264","width":640,"height":360,
            "r_frame_rate":"25/1","avg_frame_rate":"25/1"},{"codec_type":"audio","codec_name":"aac",
            "channels":2}],"format":{"duration":"10.000000","format_name":"mov,mp4,m4a,3gp,3g2,mj2"}}"#;
        let info = parse_info(json).unwrap();
        assert_eq!((info.width, info.height, info.fps), (640, 360, 25.0));
        assert!(info.constant_rate);
        assert_eq!(info.audio_codec.as_deref(), Some("aac"));
        assert_eq!(info.audio_channels, 2);
        assert_eq!(info.demuxer, "mov");
        // Formats that open other files are never read.
        for other in ["hls", "concat", "image2", ""] {
            let named = json.replace("mov,mp4,m4a,3gp,3g2,mj2", other);
            assert_eq!(parse_info(&named), None, "{other}");
        }
        let audio_only = r#"{"streams":[{"codec_type":"audio","codec_name":"mp3"}],"format":{"duration":"3","format_name":"mp3"}}"#;
        assert_eq!(parse_info(audio_only), None);
    }
}
