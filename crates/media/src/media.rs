//! Audio encoding with ffmpeg, run as a sandboxed subprocess: no stdin
//! interaction, pipes only (`-protocol_whitelist pipe`), an explicit input
//! format, and a time limit.

use std::process::Command;
use std::time::Duration;

use crate::audio::Audio;
use crate::process::{run, ProcessError};

/// Output formats of generated audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AudioFormat {
    /// MPEG-1/2 Layer III, 128 kbit/s CBR (the default).
    Mp3,
    /// RIFF/WAVE, 16-bit PCM.
    Wav,
    /// Ogg Opus, 64 kbit/s.
    Ogg,
    /// FLAC, 16-bit, lossless.
    Flac,
    /// Raw 16-bit little-endian mono PCM, no header.
    Pcm,
}

impl AudioFormat {
    pub const ALL: [AudioFormat; 5] = [Self::Mp3, Self::Wav, Self::Ogg, Self::Flac, Self::Pcm];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mp3 => "mp3",
            Self::Wav => "wav",
            Self::Ogg => "ogg",
            Self::Flac => "flac",
            Self::Pcm => "pcm",
        }
    }

    /// The Content-Type of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Mp3 => "audio/mpeg",
            Self::Wav => "audio/wav",
            Self::Ogg => "audio/ogg",
            Self::Flac => "audio/flac",
            Self::Pcm => "audio/L16",
        }
    }

    /// File extension of stored outputs.
    pub fn extension(self) -> &'static str {
        self.as_str()
    }

    /// Sample rates this format can be asked for.
    pub fn sample_rates(self) -> &'static [u32] {
        match self {
            // Opus runs at these rates only.
            Self::Ogg => &[8000, 12000, 16000, 24000, 48000],
            Self::Mp3 => &[8000, 16000, 22050, 24000, 32000, 44100, 48000],
            _ => &[8000, 16000, 22050, 24000, 32000, 44100, 48000],
        }
    }

    /// The rate used when none is asked for: the engine's own rate when the
    /// format allows it, else the nearest allowed rate above it.
    pub fn default_rate(self, native: u32) -> u32 {
        let rates = self.sample_rates();
        rates
            .iter()
            .copied()
            .find(|r| *r >= native)
            .unwrap_or(rates[rates.len() - 1])
    }

    /// Nominal bit rate in kbit/s for lossy formats.
    pub fn bitrate_kbps(self) -> Option<u32> {
        match self {
            Self::Mp3 => Some(128),
            Self::Ogg => Some(64),
            _ => None,
        }
    }

    pub(crate) fn ffmpeg_output(self) -> &'static [&'static str] {
        match self {
            Self::Mp3 => &["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"],
            Self::Wav => &["-c:a", "pcm_s16le", "-f", "wav"],
            Self::Ogg => &[
                "-c:a",
                "libopus",
                "-b:a",
                "64k",
                "-application",
                "voip",
                "-f",
                "ogg",
            ],
            Self::Flac => &["-c:a", "flac", "-f", "flac"],
            Self::Pcm => &["-c:a", "pcm_s16le", "-f", "s16le"],
        }
    }
}

/// Why media processing failed.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("unsupported sample rate {rate} for {format}")]
    BadRate { rate: u32, format: &'static str },
    #[error("scratch file: {0}")]
    Io(#[from] std::io::Error),
    /// The input is not media this server reads (the reason is for the
    /// client).
    #[error("{0}")]
    Input(String),
}

/// ffmpeg for untrusted input: no stdin, files and pipes only, errors only
/// on stderr, outputs overwritten.
pub(crate) fn ffmpeg() -> Command {
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

/// ffmpeg arguments that read raw s16le mono at `input_rate` from stdin and
/// write `format` at `rate` to stdout (used whole and streaming).
pub fn encoder_args(
    format: AudioFormat,
    input_rate: u32,
    rate: u32,
) -> Result<Vec<String>, MediaError> {
    if !format.sample_rates().contains(&rate) {
        return Err(MediaError::BadRate {
            rate,
            format: format.as_str(),
        });
    }
    let mut args: Vec<String> = [
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-protocol_whitelist",
        "pipe",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The input format is given, so nothing needs probing: without these
    // ffmpeg would wait for seconds of input before writing anything.
    args.extend(["-probesize", "32", "-analyzeduration", "0"].map(String::from));
    args.extend(
        [
            "-f",
            "s16le",
            "-ar",
            &input_rate.to_string(),
            "-ac",
            "1",
            "-i",
            "pipe:0",
        ]
        .map(String::from),
    );
    args.extend(["-ar", &rate.to_string(), "-ac", "1"].map(String::from));
    // Streamed output is flushed packet by packet so the first sentence
    // reaches the client at once.
    args.extend(["-flush_packets", "1"].map(String::from));
    args.extend(format.ffmpeg_output().iter().map(|s| s.to_string()));
    args.push("pipe:1".into());
    Ok(args)
}

/// Encodes mono audio to `format` at `rate` Hz. Uncompressed output at the
/// audio's own rate is written here; everything else goes through ffmpeg.
pub fn encode(audio: &Audio, format: AudioFormat, rate: u32) -> Result<Vec<u8>, MediaError> {
    if rate == audio.sample_rate {
        match format {
            AudioFormat::Pcm => return Ok(audio.to_s16le()),
            AudioFormat::Wav => return Ok(wav(&audio.to_s16le(), rate)),
            _ => {}
        }
    }
    let mut cmd = Command::new("ffmpeg");
    cmd.args(encoder_args(format, audio.sample_rate, rate)?);
    // Generous: encoding runs at hundreds of times real time.
    let timeout = Duration::from_secs_f64(30.0 + audio.duration() / 5.0);
    Ok(run(cmd, &audio.to_s16le(), timeout)?)
}

/// A 16-bit mono PCM WAV file around `pcm` (s16le samples).
fn wav(pcm: &[u8], rate: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(44 + pcm.len());
    let size = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&size(36 + pcm.len()));
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes()); // bytes per second
    out.extend_from_slice(&2u16.to_le_bytes()); // block align
    out.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"data");
    out.extend_from_slice(&size(pcm.len()));
    out.extend_from_slice(pcm);
    out
}

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

/// `-format_whitelist <d> -f <d> -i <path>`: opens user input with exactly
/// the demuxer its probe found, from the directory holding the input.
pub fn open_input<'a>(
    cmd: &'a mut Command,
    path: &std::path::Path,
    demuxer: &str,
) -> &'a mut Command {
    in_dir_of(cmd, path)
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
    #[error("ffprobe failed")]
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

/// The allowed demuxer of an input stored before (probed on upload), found
/// again by a probe limited to [`DEMUXERS`].
pub fn demuxer(path: &std::path::Path) -> Result<&'static str, MediaError> {
    probe(path)
        .map(|p| p.demuxer)
        .map_err(|e| MediaError::Input(e.to_string()))
}

/// The first sound stream of `path` (read by `demuxer`, from its probe) as
/// mono f32 samples at `rate`, whole: at most `max_seconds` of it are
/// decoded, whatever the file claims.
pub fn decode_mono(
    path: &std::path::Path,
    demuxer: &str,
    rate: u32,
    max_seconds: f64,
) -> Result<Vec<f32>, MediaError> {
    let mut cmd = ffmpeg();
    open_input(&mut cmd, path, demuxer)
        .args(["-t", &format!("{max_seconds:.3}")])
        .args(["-map", "0:a:0", "-vn", "-ac", "1", "-ar", &rate.to_string()])
        .args(["-f", "f32le", "pipe:1"]);
    let out = run(cmd, b"", Duration::from_secs(600))?;
    Ok(out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
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

    use super::*;

    /// Tools reading user input run in the directory that holds it.
    #[test]
    fn inputs_are_opened_from_their_own_directory() {
        let mut cmd = ffmpeg();
        open_input(&mut cmd, std::path::Path::new("/job/scratch/input"), "wav");
        assert_eq!(
            cmd.get_current_dir(),
            Some(std::path::Path::new("/job/scratch"))
        );
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
        assert!(args.ends_with(
            &[
                "-format_whitelist",
                "wav",
                "-f",
                "wav",
                "-i",
                "/job/scratch/input"
            ]
            .map(Into::into)
        ));
    }

    #[test]
    fn default_rates_follow_the_engine() {
        assert_eq!(AudioFormat::Mp3.default_rate(22050), 22050);
        assert_eq!(AudioFormat::Ogg.default_rate(22050), 24000);
        assert_eq!(AudioFormat::Wav.default_rate(24000), 24000);
        assert_eq!(AudioFormat::parse("opus"), None);
    }

    #[test]
    fn pcm_and_wav_encode_exactly() {
        let audio = Audio::new(
            (0..8000).map(|i| (i as f32 * 0.05).sin() * 0.5).collect(),
            8000,
        );
        let pcm = encode(&audio, AudioFormat::Pcm, 8000).unwrap();
        assert_eq!(pcm.len(), 16000);
        let wav = encode(&audio, AudioFormat::Wav, 16000).unwrap();
        let back = crate::audio::parse_wav(&wav).unwrap();
        assert_eq!(back.sample_rate, 16000);
        assert!((back.duration() - 1.0).abs() < 0.01);
        assert!(encode(&audio, AudioFormat::Ogg, 22050).is_err());
    }

    /// WAV written here reads back through ffprobe like ffmpeg's own.
    #[test]
    fn wav_is_written_in_process_and_readable() {
        let audio = Audio::new(
            (0..16_000).map(|i| (i as f32 * 0.05).sin() * 0.5).collect(),
            16_000,
        );
        let bytes = encode(&audio, AudioFormat::Wav, 16_000).unwrap();
        assert_eq!(bytes.len(), 44 + 32_000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wav");
        std::fs::write(&path, &bytes).unwrap();
        let p = probe(&path).unwrap();
        assert!((p.duration - 1.0).abs() < 1e-3 && p.has_audio, "{p:?}");
        assert_eq!(
            encode(&audio, AudioFormat::Pcm, 16_000).unwrap(),
            audio.to_s16le()
        );
        // Another rate still goes through ffmpeg's resampler.
        assert_eq!(
            encode(&audio, AudioFormat::Pcm, 8_000).unwrap().len(),
            16_000
        );
    }
}
