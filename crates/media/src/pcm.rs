//! Raw mono audio (f32, little-endian) in scratch files. ffmpeg decodes
//! inputs straight into them and encodes outputs straight from them; the
//! pipelines read and write them window by window, so a long recording is
//! never held whole in memory.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::audio::{wav_layout, WavLayout};
use crate::media::{ffmpeg, open_input, AudioFormat, MediaError};
use crate::process::{run, Piped};

/// Seconds of audio a pipeline works on at once when it walks a file.
pub const WINDOW_SECONDS: usize = 30;

/// Mono f32 samples at `rate` in a file, read and written at any point.
pub struct PcmFile {
    file: File,
    path: PathBuf,
    rate: u32,
    samples: usize,
}

impl PcmFile {
    /// A new, empty file at `path` (replacing what was there).
    pub fn create(path: &Path, rate: u32) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Self {
            file,
            path: path.to_owned(),
            rate,
            samples: 0,
        })
    }

    /// An existing file of samples at `rate`, opened for reading.
    pub fn open(path: &Path, rate: u32) -> std::io::Result<Self> {
        let file = File::open(path)?;
        let samples = (file.metadata()?.len() / 4) as usize;
        Ok(Self {
            file,
            path: path.to_owned(),
            rate,
            samples,
        })
    }

    /// Samples in all.
    pub fn len(&self) -> usize {
        self.samples
    }

    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    pub fn rate(&self) -> u32 {
        self.rate
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Seconds in all.
    pub fn duration(&self) -> f64 {
        self.samples as f64 / f64::from(self.rate)
    }

    /// Samples in one window of [`WINDOW_SECONDS`].
    pub fn window(&self) -> usize {
        WINDOW_SECONDS * self.rate as usize
    }

    /// Up to `max` samples from sample `at`; fewer only at the end.
    pub fn read_at(&self, at: usize, max: usize) -> std::io::Result<Vec<f32>> {
        let n = max.min(self.samples.saturating_sub(at));
        let mut bytes = vec![0u8; n * 4];
        self.file.read_exact_at(&mut bytes, at as u64 * 4)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Writes `samples` from sample `at` (the file grows as needed).
    pub fn write_at(&mut self, at: usize, samples: &[f32]) -> std::io::Result<()> {
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.file.write_all_at(&bytes, at as u64 * 4)?;
        self.samples = self.samples.max(at + samples.len());
        Ok(())
    }

    /// Adds `samples` at the end.
    pub fn append(&mut self, samples: &[f32]) -> std::io::Result<()> {
        self.write_at(self.samples, samples)
    }

    /// A new file at `dest` made window by window: each window of this one
    /// is read, given to `f` with the index of its first sample, and
    /// written out as `f` left it.
    pub fn map_windows(
        &self,
        dest: &Path,
        mut f: impl FnMut(usize, &mut [f32]),
    ) -> std::io::Result<PcmFile> {
        let mut out = PcmFile::create(dest, self.rate)?;
        let mut at = 0;
        while at < self.samples {
            let mut window = self.read_at(at, self.window())?;
            f(at, &mut window);
            out.write_at(at, &window)?;
            at += window.len();
        }
        Ok(out)
    }
}

/// Decodes the first sound stream of `path` (read by `demuxer`, from its
/// probe) to mono f32 at `rate` in `dest`, then opens it. ffmpeg writes the
/// file itself (4 bytes a sample: 230 MB an hour at 16 kHz) at full speed,
/// under a time limit that scales with `duration` (seconds); at most
/// `duration` + 1 s is decoded, whatever the file claims.
pub fn decode(
    path: &Path,
    demuxer: &str,
    dest: &Path,
    rate: u32,
    duration: f64,
) -> Result<PcmFile, MediaError> {
    let max_samples = ((duration + 1.0) * f64::from(rate)) as u64;
    if demuxer == "wav" {
        if let Some(pcm) = plain_wav(path, dest, rate, max_samples)? {
            return Ok(pcm);
        }
    }
    let mut cmd = ffmpeg();
    open_input(&mut cmd, path, demuxer)
        .args(["-t", &format!("{:.3}", duration + 1.0)])
        .args(["-map", "0:a:0", "-vn", "-ac", "1", "-ar", &rate.to_string()])
        .args(["-f", "f32le", "pipe:1"]);
    // The samples come through a pipe and this process writes them: a
    // disk that fills is our write's error (a storage fault), never a tool
    // that stops writing and still exits cleanly with short output.
    let mut tool = Piped::spawn(cmd, Duration::from_secs_f64(60.0 + duration / 2.0))?;
    drop(tool.stdin.take());
    let mut samples = tool.stdout.take().expect("piped stdout");
    let mut out = std::io::BufWriter::new(File::create(dest)?);
    let written =
        std::io::copy(&mut samples, &mut out).and_then(|_| std::io::Write::flush(&mut out));
    drop(samples);
    if let Err(e) = written {
        // Ours first: the tool dies of the closed pipe.
        return Err(e.into());
    }
    tool.finish()?;
    Ok(PcmFile::open(dest, rate)?)
}

/// A WAV file that already holds what [`decode`] makes (16-bit PCM, one
/// channel, at `rate`), its samples copied into `dest` here (at most
/// `max_samples`): ffmpeg's start alone costs about 0.1 s. `None` (and
/// nothing written) for any other WAV, which ffmpeg decodes.
fn plain_wav(
    path: &Path,
    dest: &Path,
    rate: u32,
    max_samples: u64,
) -> Result<Option<PcmFile>, MediaError> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let layout = wav_layout(len, |at, buf| file.read_exact_at(buf, at).is_ok());
    let plain = |l: &WavLayout| l.format == 1 && l.channels == 1 && l.rate == rate && l.bits == 16;
    let Some(WavLayout { start, bytes, .. }) = layout.filter(plain) else {
        return Ok(None);
    };
    let bytes = bytes.min(max_samples.saturating_mul(2));
    let mut out = std::io::BufWriter::new(File::create(dest)?);
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0u64;
    while at + 1 < bytes {
        let want = (bytes - at).min(buf.len() as u64) as usize & !1;
        file.read_exact_at(&mut buf[..want], start + at)?;
        for pair in buf[..want].chunks_exact(2) {
            let sample = f32::from(i16::from_le_bytes([pair[0], pair[1]])) / 32768.0;
            std::io::Write::write_all(&mut out, &sample.to_le_bytes())?;
        }
        at += want as u64;
    }
    std::io::Write::flush(&mut out)?;
    Ok(Some(PcmFile::open(dest, rate)?))
}

/// Encodes `pcm` as `format` at `rate` Hz into `dest`, ffmpeg reading the
/// samples from their file.
pub fn encode(
    pcm: &PcmFile,
    format: AudioFormat,
    rate: u32,
    dest: &Path,
) -> Result<(), MediaError> {
    if !format.sample_rates().contains(&rate) {
        return Err(MediaError::BadRate {
            rate,
            format: format.as_str(),
        });
    }
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args(["-protocol_whitelist", "file", "-y"])
        .args(["-f", "f32le", "-ar", &pcm.rate().to_string(), "-ac", "1"])
        .arg("-i")
        .arg(pcm.path())
        .args(["-ar", &rate.to_string(), "-ac", "1"])
        .args(crate::media::ffmpeg_output(format))
        .arg(dest);
    // Generous: encoding runs at hundreds of times real time.
    run(
        cmd,
        b"",
        Duration::from_secs_f64(30.0 + pcm.duration() / 5.0),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows cover the file in order; writes land where they are asked.
    #[test]
    fn files_are_walked_window_by_window() {
        let dir = tempfile::tempdir().unwrap();
        let mut pcm = PcmFile::create(&dir.path().join("a.f32"), 100).unwrap();
        let n = WINDOW_SECONDS * 100 * 2 + 7;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        pcm.append(&x[..10]).unwrap();
        pcm.append(&x[10..]).unwrap();
        assert_eq!(pcm.len(), n);
        assert_eq!(pcm.read_at(n - 3, 10).unwrap(), x[n - 3..]);
        let mut starts = Vec::new();
        let doubled = pcm
            .map_windows(&dir.path().join("b.f32"), |at, w| {
                starts.push(at);
                w.iter_mut().for_each(|s| *s *= 2.0);
            })
            .unwrap();
        assert_eq!(starts, [0, 3000, 6000]);
        let back = PcmFile::open(doubled.path(), 100).unwrap();
        assert_eq!(back.len(), n);
        assert_eq!(back.read_at(2999, 2).unwrap(), [5998.0, 6000.0]);
    }

    /// A WAV already at the rate asked for, one channel of 16-bit PCM, is
    /// read here: the same samples as ffmpeg gives, a data size the header
    /// does not know runs to the end, and `duration` (plus a second) caps
    /// it. Any other WAV is left to ffmpeg.
    #[test]
    fn plain_wav_is_read_without_ffmpeg() {
        let dir = tempfile::tempdir().unwrap();
        let tone: Vec<f32> = (0..32_000).map(|i| (i as f32 * 0.05).sin() * 0.5).collect();
        let audio = crate::audio::Audio::new(tone.clone(), 16_000);
        let bytes = crate::media::encode(&audio, AudioFormat::Wav, 16_000).unwrap();
        let wav = dir.path().join("tone.wav");
        std::fs::write(&wav, &bytes).unwrap();
        let here = plain_wav(&wav, &dir.path().join("a.f32"), 16_000, u64::MAX)
            .unwrap()
            .expect("read here");
        let mut cmd = ffmpeg();
        open_input(&mut cmd, &wav, "wav")
            .args(["-ac", "1", "-ar", "16000", "-f", "f32le", "pipe:1"]);
        let by_ffmpeg = run(cmd, b"", Duration::from_secs(30)).unwrap();
        assert_eq!(here.len(), 32_000);
        let ours: Vec<u8> = here
            .read_at(0, 32_000)
            .unwrap()
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        assert_eq!(ours, by_ffmpeg);
        // Streamed (size unknown), capped at one second.
        let mut streamed = bytes.clone();
        streamed[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&wav, &streamed).unwrap();
        let capped = decode(&wav, "wav", &dir.path().join("b.f32"), 16_000, 0.0).unwrap();
        assert_eq!(capped.len(), 16_000);
        let whole = plain_wav(&wav, &dir.path().join("c.f32"), 16_000, u64::MAX).unwrap();
        assert_eq!(whole.map(|p| p.len()), Some(32_000));
        // Another rate, or two channels: ffmpeg's.
        assert!(plain_wav(&wav, &dir.path().join("d.f32"), 24_000, u64::MAX)
            .unwrap()
            .is_none());
        let mut stereo = bytes;
        stereo[22] = 2;
        std::fs::write(&wav, &stereo).unwrap();
        assert!(plain_wav(&wav, &dir.path().join("e.f32"), 16_000, u64::MAX)
            .unwrap()
            .is_none());
    }

    /// Decoded and encoded through files, the sound survives.
    #[test]
    fn decodes_and_encodes_through_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut pcm = PcmFile::create(&dir.path().join("tone.f32"), 24_000).unwrap();
        let tone: Vec<f32> = (0..24_000).map(|i| (i as f32 * 0.05).sin() * 0.5).collect();
        pcm.append(&tone).unwrap();
        let wav = dir.path().join("tone.wav");
        encode(&pcm, AudioFormat::Wav, 16_000, &wav).unwrap();
        let probed = crate::media::probe(&wav).unwrap();
        assert!((probed.duration - 1.0).abs() < 0.01, "{probed:?}");
        let back = decode(
            &wav,
            probed.demuxer,
            &dir.path().join("back.f32"),
            24_000,
            1.0,
        )
        .unwrap();
        assert!((back.duration() - 1.0).abs() < 0.01);
        let mid = back.read_at(12_000, 100).unwrap();
        let err: f32 = mid
            .iter()
            .zip(&tone[12_000..])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(err < 0.02, "{err}");
        assert!(encode(&pcm, AudioFormat::Ogg, 22_050, &wav).is_err());
    }
}
