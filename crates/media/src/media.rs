//! Audio encoding with ffmpeg, run as a sandboxed subprocess: no stdin
//! interaction, pipes only (`-protocol_whitelist pipe`), an explicit input
//! format, and a time limit.

use std::process::Command;
use std::time::Duration;

use crate::audio::Audio;
use crate::process::{run, ProcessError};

pub use mediagen_core::format::AudioFormat;

/// ffmpeg's output options for `format`.
pub(crate) fn ffmpeg_output(format: AudioFormat) -> &'static [&'static str] {
    match format {
        AudioFormat::Mp3 => &["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"],
        AudioFormat::Wav => &["-c:a", "pcm_s16le", "-f", "wav"],
        AudioFormat::Ogg => &[
            "-c:a",
            "libopus",
            "-b:a",
            "64k",
            "-application",
            "voip",
            "-f",
            "ogg",
        ],
        AudioFormat::Flac => &["-c:a", "flac", "-f", "flac"],
        AudioFormat::Pcm => &["-c:a", "pcm_s16le", "-f", "s16le"],
        AudioFormat::Aac => &["-c:a", "aac", "-b:a", "128k", "-f", "adts"],
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

/// A time for ffmpeg's arguments and filters, seconds to the microsecond.
pub(crate) fn secs(t: f64) -> String {
    format!("{t:.6}")
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
    args.extend(ffmpeg_output(format).iter().map(|s| s.to_string()));
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
    let mut args = encoder_args(format, audio.sample_rate, rate)?;
    // Generous: encoding runs at hundreds of times real time.
    let timeout = Duration::from_secs_f64(30.0 + audio.duration() / 5.0);
    if format != AudioFormat::Flac {
        let mut cmd = Command::new("ffmpeg");
        cmd.args(args);
        return Ok(run(cmd, &audio.to_s16le(), timeout)?);
    }
    // FLAC is written to a file, not a pipe: ffmpeg then goes back to its
    // header and fills in the length (STREAMINFO's sample count and MD5),
    // without which players show no duration and seek poorly.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("speech.flac");
    args.pop();
    for arg in args.iter_mut().filter(|a| *a == "pipe") {
        *arg = "file,pipe".into();
    }
    let mut cmd = Command::new("ffmpeg");
    cmd.args(args).arg(&path);
    run(cmd, &audio.to_s16le(), timeout)?;
    Ok(std::fs::read(&path)?)
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

pub use mediagen_probe::{
    demuxer_of, in_dir_of, open_input, parse_probe, probe, Probe, ProbeError, AUDIO_CODECS,
    DEMUXERS, VIDEO_CODECS,
};

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
        // Every picture decoder of user input is capped (the probe sees
        // only a stream's first picture size).
        let cap = args.iter().position(|a| a == "-max_pixels").unwrap();
        assert_eq!(args[cap + 1], (4096u64 * 4096).to_string());
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

    /// A FLAC answer's header says how long it is (STREAMINFO's total
    /// samples), as players need to show a duration and seek.
    #[test]
    fn flac_carries_its_length() {
        let audio = Audio::new(vec![0.1; 24_000], 24_000);
        let flac = encode(&audio, AudioFormat::Flac, 16_000).unwrap();
        assert_eq!(&flac[..4], b"fLaC");
        let info = &flac[8..8 + 34];
        let packed = u64::from_be_bytes(info[10..18].try_into().unwrap());
        let total = packed & ((1 << 36) - 1);
        assert!((15_900..=16_100).contains(&total), "{total} samples");
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
