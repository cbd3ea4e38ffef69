//! Mono PCM audio in memory.

use rubato::{FftFixedIn, Resampler};

/// Mono audio as `f32` samples in −1…1.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Audio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
}

impl Audio {
    pub fn new(samples: Vec<f32>, sample_rate: u32) -> Self {
        Self {
            samples,
            sample_rate,
        }
    }

    pub fn silence(seconds: f64, sample_rate: u32) -> Self {
        Self::new(
            vec![0.0; (seconds * f64::from(sample_rate)).round() as usize],
            sample_rate,
        )
    }

    /// Seconds.
    pub fn duration(&self) -> f64 {
        if self.sample_rate == 0 {
            return 0.0;
        }
        self.samples.len() as f64 / f64::from(self.sample_rate)
    }

    /// Appends `other`, resampling it to this audio's rate when they differ
    /// (an empty audio takes the rate of the first one appended).
    pub fn append(&mut self, other: &Audio) {
        if self.samples.is_empty() && self.sample_rate != other.sample_rate {
            self.sample_rate = other.sample_rate;
        }
        if other.sample_rate == self.sample_rate {
            self.samples.extend_from_slice(&other.samples);
        } else {
            self.samples.extend(resample(
                &other.samples,
                other.sample_rate,
                self.sample_rate,
            ));
        }
    }

    /// 16-bit little-endian PCM.
    pub fn to_s16le(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.samples.len() * 2);
        for s in &self.samples {
            let v = (s.clamp(-1.0, 1.0) * 32767.0).round() as i16;
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Decodes 16-bit little-endian PCM.
    pub fn from_s16le(bytes: &[u8], sample_rate: u32) -> Self {
        let samples = bytes
            .chunks_exact(2)
            .map(|c| f32::from(i16::from_le_bytes([c[0], c[1]])) / 32768.0)
            .collect();
        Self::new(samples, sample_rate)
    }

    /// Peak absolute amplitude.
    pub fn peak(&self) -> f32 {
        self.samples.iter().fold(0.0, |m, s| m.max(s.abs()))
    }

    /// Cuts leading and trailing silence: 10 ms frames quieter than
    /// `threshold_db` below the peak, keeping `keep` seconds of margin.
    pub fn trim_silence(&mut self, threshold_db: f32, keep: f64) {
        let frame = (self.sample_rate as usize / 100).max(1);
        let peak = self.peak();
        if peak <= 1e-6 || self.samples.len() < frame {
            return;
        }
        let floor = peak * 10f32.powf(threshold_db / 20.0);
        let loud = |chunk: &[f32]| {
            (chunk.iter().map(|s| s * s).sum::<f32>() / chunk.len() as f32).sqrt() > floor
        };
        let frames: Vec<bool> = self.samples.chunks(frame).map(loud).collect();
        let (Some(first), Some(last)) = (
            frames.iter().position(|l| *l),
            frames.iter().rposition(|l| *l),
        ) else {
            return;
        };
        let margin = (keep * f64::from(self.sample_rate)) as usize;
        let start = (first * frame).saturating_sub(margin);
        let end = ((last + 1) * frame + margin).min(self.samples.len());
        self.samples = self.samples[start..end].to_vec();
    }

    /// Scales so the peak is `target` (no-op on silence).
    pub fn normalize_peak(&mut self, target: f32) {
        let peak = self.peak();
        if peak > 1e-6 {
            let k = target / peak;
            self.samples.iter_mut().for_each(|s| *s *= k);
        }
    }
}

/// Resamples `samples` from `from` Hz to `to` Hz with an anti-aliased
/// FFT resampler (rubato's): what lies above the lower rate's Nyquist
/// frequency is filtered out instead of folding back as noise. The output
/// holds `len × to / from` samples, aligned with the input (the filter's
/// delay is removed).
pub fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() || from == 0 || to == 0 {
        return samples.to_vec();
    }
    let want = (samples.len() as u64 * u64::from(to) / u64::from(from)) as usize;
    let resampled = FftFixedIn::<f32>::new(from as usize, to as usize, CHUNK, 2, 1)
        .map_err(|e| e.to_string())
        .and_then(|mut r| run(&mut r, samples, want).map_err(|e| e.to_string()));
    match resampled {
        Ok(out) => out,
        // Only rates rubato cannot pair (none of ours): never silence.
        Err(e) => {
            tracing::warn!(from, to, error = %e, "resampler refused the rates; interpolating");
            interpolate(samples, from, to, want)
        }
    }
}

/// Input frames per FFT chunk.
const CHUNK: usize = 1024;

fn run(
    r: &mut FftFixedIn<f32>,
    samples: &[f32],
    want: usize,
) -> Result<Vec<f32>, rubato::ResampleError> {
    let delay = r.output_delay();
    let mut out = Vec::with_capacity(want + delay + r.output_frames_max());
    let mut at = 0;
    while samples.len() - at >= r.input_frames_next() {
        let n = r.input_frames_next();
        out.extend_from_slice(&r.process(&[&samples[at..at + n]], None)?[0]);
        at += n;
    }
    if at < samples.len() {
        out.extend_from_slice(&r.process_partial(Some(&[&samples[at..]]), None)?[0]);
    }
    // Flush what the filter still holds.
    while out.len() < want + delay {
        let tail = r.process_partial::<&[f32]>(None, None)?;
        if tail[0].is_empty() {
            break;
        }
        out.extend_from_slice(&tail[0]);
    }
    out.drain(..delay.min(out.len()));
    out.resize(want, 0.0);
    Ok(out)
}

/// Linear interpolation (the fallback of [`resample`]).
fn interpolate(samples: &[f32], from: u32, to: u32, n: usize) -> Vec<f32> {
    let step = f64::from(from) / f64::from(to);
    (0..n)
        .map(|i| {
            let x = i as f64 * step;
            let j = x.floor() as usize;
            let frac = (x - j as f64) as f32;
            let a = samples[j.min(samples.len() - 1)];
            let b = samples[(j + 1).min(samples.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

/// What a RIFF/WAVE header says: the sample format (`1` is integer
/// PCM), channels, rate, bits a sample, and where the samples lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavLayout {
    pub format: u16,
    pub channels: u16,
    pub rate: u32,
    pub bits: u16,
    /// Offset of the first sample's byte.
    pub start: u64,
    /// Bytes of samples: to the end of the file when the header does not
    /// know (0 or 0xFFFFFFFF, as a program streaming it writes) or says
    /// more than there is.
    pub bytes: u64,
}

/// The layout of a WAV file of `len` bytes, read through `read_at`
/// (`false` when it cannot fill the buffer from that offset): `None` for
/// anything else, or when the samples start beyond the first MiB (the
/// chunks before them are small).
pub fn wav_layout(len: u64, mut read_at: impl FnMut(u64, &mut [u8]) -> bool) -> Option<WavLayout> {
    let mut head = [0u8; 12];
    if !read_at(0, &mut head) || &head[0..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return None;
    }
    let (mut pos, mut found) = (12u64, None);
    while pos + 8 <= len.min(1 << 20) {
        let mut chunk = [0u8; 8];
        if !read_at(pos, &mut chunk) {
            return None;
        }
        let size = u64::from(u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]));
        let body = pos + 8;
        match &chunk[0..4] {
            b"fmt " => {
                let mut fmt = [0u8; 16];
                if !read_at(body, &mut fmt) {
                    return None;
                }
                found = Some(WavLayout {
                    format: u16::from_le_bytes([fmt[0], fmt[1]]),
                    channels: u16::from_le_bytes([fmt[2], fmt[3]]),
                    rate: u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]),
                    bits: u16::from_le_bytes([fmt[14], fmt[15]]),
                    start: 0,
                    bytes: 0,
                });
            }
            b"data" => {
                let rest = len - body;
                let known = size != 0 && size != u64::from(u32::MAX);
                return found.map(|f| WavLayout {
                    start: body,
                    bytes: if known { size.min(rest) } else { rest },
                    ..f
                });
            }
            _ => {}
        }
        pos = body + size + (size & 1);
    }
    None
}

/// Reads a RIFF/WAVE file of 16-bit PCM (as espeak-ng writes, whose header
/// may claim an unknown length). Multi-channel input keeps the first channel.
pub fn parse_wav(bytes: &[u8]) -> Option<Audio> {
    let layout = wav_layout(bytes.len() as u64, |at, buf| {
        let at = at as usize;
        match bytes.get(at..at + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                true
            }
            None => false,
        }
    })?;
    if layout.bits != 16 || layout.rate == 0 || layout.channels == 0 {
        return None;
    }
    let data = &bytes[layout.start as usize..(layout.start + layout.bytes) as usize];
    let samples = data
        .chunks_exact(2 * layout.channels as usize)
        .map(|c| f32::from(i16::from_le_bytes([c[0], c[1]])) / 32768.0)
        .collect();
    Some(Audio::new(samples, layout.rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_and_append_with_resampling() {
        let mut a = Audio::silence(1.0, 16000);
        a.append(&Audio::silence(0.5, 8000));
        assert_eq!(a.sample_rate, 16000);
        assert!((a.duration() - 1.5).abs() < 1e-3);
    }

    #[test]
    fn trimming_keeps_the_sound_and_a_margin() {
        let mut samples = vec![0.0; 8000];
        samples.extend((0..8000).map(|i| (i as f32 * 0.1).sin() * 0.5));
        samples.extend(vec![0.0001; 8000]);
        let mut a = Audio::new(samples, 8000);
        a.trim_silence(-45.0, 0.05);
        assert!((a.duration() - 1.1).abs() < 0.03, "{}", a.duration());
        let mut quiet = Audio::silence(1.0, 8000);
        quiet.trim_silence(-45.0, 0.05);
        assert_eq!(quiet.duration(), 1.0, "silence is left alone");
    }

    #[test]
    fn s16le_round_trip() {
        let a = Audio::new(vec![0.0, 0.5, -0.5, 1.0], 8000);
        let b = Audio::from_s16le(&a.to_s16le(), 8000);
        for (x, y) in a.samples.iter().zip(&b.samples) {
            assert!((x - y).abs() < 1e-3);
        }
    }

    #[test]
    fn wav_parses_with_streaming_header() {
        let pcm = Audio::new(vec![0.25; 100], 22050).to_s16le();
        let mut wav = b"RIFF\xff\xff\xff\x7fWAVEfmt ".to_vec();
        wav.extend_from_slice(&16u32.to_le_bytes());
        wav.extend_from_slice(&[1, 0, 1, 0]);
        wav.extend_from_slice(&22050u32.to_le_bytes());
        wav.extend_from_slice(&44100u32.to_le_bytes());
        wav.extend_from_slice(&[2, 0, 16, 0]);
        wav.extend_from_slice(b"data\xff\xff\xff\x7f");
        wav.extend_from_slice(&pcm);
        let a = parse_wav(&wav).unwrap();
        assert_eq!((a.sample_rate, a.samples.len()), (22050, 100));
        assert!(parse_wav(b"not a wav").is_none());
    }
}

#[cfg(test)]
mod resampling {
    use super::*;
    use crate::test_signals::{rms, sine};

    /// Inside the band a tone passes whole and keeps its place; above the
    /// new Nyquist frequency it is filtered out instead of aliasing (linear
    /// interpolation folds a 10 kHz tone resampled to 16 kHz back to 6 kHz
    /// at about half its level).
    #[test]
    fn tones_pass_in_band_and_are_filtered_above_it() {
        let low = resample(&sine(1000.0, 48_000, 1.0), 48_000, 16_000);
        assert_eq!(low.len(), 16_000);
        let middle = 2000..14_000;
        // The same tone, lagging by at most half an output sample (the
        // filter's delay is removed to the whole sample).
        let err = |lag: f32| {
            middle
                .clone()
                .map(|i| {
                    let t = (i as f32 - lag) / 16_000.0;
                    (low[i] - (std::f32::consts::TAU * 1000.0 * t).sin() * 0.5).abs()
                })
                .fold(0.0, f32::max)
        };
        let best = (-50..=50)
            .map(|k| err(k as f32 / 100.0))
            .fold(f32::MAX, f32::min);
        assert!(best < 0.005, "1 kHz tone changed by {best}");
        let high = sine(10_000.0, 48_000, 1.0);
        let ours = resample(&high, 48_000, 16_000);
        let linear = interpolate(&high, 48_000, 16_000, 16_000);
        assert!(
            rms(&ours[middle.clone()]) < 0.005,
            "{}",
            rms(&ours[middle.clone()])
        );
        assert!(
            rms(&linear[middle.clone()]) > 0.1,
            "{}",
            rms(&linear[middle])
        );
    }

    #[test]
    fn lengths_follow_the_ratio() {
        for (from, to, n) in [
            (22_050, 24_000, 12_345),
            (24_000, 16_000, 100),
            (16_000, 48_000, 1),
        ] {
            let out = resample(&vec![0.25; n], from, to);
            assert_eq!(out.len(), n * to as usize / from as usize, "{from}->{to}");
        }
        assert_eq!(resample(&[0.5, 0.25], 16_000, 16_000), vec![0.5, 0.25]);
    }
}
