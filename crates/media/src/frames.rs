//! How much audio the start of an encoded stream holds: the complete
//! frames (pages, blocks, samples) within a prefix of the bytes, read from
//! the format's own headers. A stream its client closed is billed on this
//! (docs/billing.md): whatever the format, bitrate or sample rate, the
//! client pays for the audio it was sent, never for bytes at a nominal rate.

use crate::AudioFormat;

/// Seconds of audio in the complete frames of `bytes`, the start of a
/// stream of `format` (16-bit mono at `rate` for WAV and raw PCM).
pub fn seconds_in(format: AudioFormat, bytes: &[u8], rate: u32) -> f64 {
    match format {
        AudioFormat::Pcm => pcm_seconds(bytes.len(), rate),
        AudioFormat::Wav => wav_data(bytes).map_or(0.0, |at| pcm_seconds(bytes.len() - at, rate)),
        AudioFormat::Mp3 => mp3(bytes),
        AudioFormat::Ogg => ogg_opus(bytes),
        AudioFormat::Flac => flac(bytes),
        AudioFormat::Aac => adts(bytes),
    }
}

fn pcm_seconds(len: usize, rate: u32) -> f64 {
    (len / 2) as f64 / f64::from(rate.max(1))
}

/// Where a RIFF/WAVE stream's samples start (after its `data` chunk's
/// header), once that header is in `bytes`.
fn wav_data(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return None;
    }
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().ok()?) as usize;
        if id == b"data" {
            return Some(at + 8);
        }
        at = at.checked_add(8 + size + (size & 1))?;
    }
    None
}

/// MPEG audio Layer III: frames from their headers (an ID3v2 tag and a
/// Xing/Info frame, which hold no sound, are skipped).
fn mp3(b: &[u8]) -> f64 {
    const V1: [usize; 15] = [
        0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ];
    const V2: [usize; 15] = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
    let mut i = 0;
    if b.len() >= 10 && &b[..3] == b"ID3" {
        let size = b[6..10]
            .iter()
            .fold(0usize, |n, &x| (n << 7) | usize::from(x & 0x7f));
        i = 10 + size;
    }
    let mut seconds = 0.0;
    let mut first = true;
    while i + 4 <= b.len() {
        let h = u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (version, layer) = ((h >> 19) & 3, (h >> 17) & 3);
        let (bitrate, rate_index, padding) = ((h >> 12) & 15, (h >> 10) & 3, (h >> 9) & 1);
        if h >> 21 != 0x7ff
            || version == 1
            || layer != 1
            || bitrate == 0
            || bitrate == 15
            || rate_index == 3
        {
            i += 1;
            continue;
        }
        let base = [44_100, 48_000, 32_000][rate_index as usize];
        let (rate, samples, coefficient, kbps) = match version {
            3 => (base, 1152, 144, V1[bitrate as usize]),
            2 => (base / 2, 576, 72, V2[bitrate as usize]),
            _ => (base / 4, 576, 72, V2[bitrate as usize]),
        };
        let len = coefficient * kbps * 1000 / rate + padding as usize;
        if i + len > b.len() {
            break;
        }
        let frame = &b[i..i + len];
        let tag = first && frame.windows(4).any(|w| w == b"Xing" || w == b"Info");
        if !tag {
            seconds += samples as f64 / rate as f64;
        }
        first = false;
        i += len;
    }
    seconds
}

/// Ogg Opus: the granule position (48 kHz samples) of the last complete
/// page, less the stream's pre-skip.
fn ogg_opus(b: &[u8]) -> f64 {
    let (mut i, mut pre_skip, mut granule) = (0, 0i64, 0i64);
    while i + 27 <= b.len() && &b[i..i + 4] == b"OggS" {
        let position = i64::from_le_bytes(b[i + 6..i + 14].try_into().unwrap_or([0; 8]));
        let segments = usize::from(b[i + 26]);
        let Some(table) = b.get(i + 27..i + 27 + segments) else {
            break;
        };
        let body: usize = table.iter().map(|&s| usize::from(s)).sum();
        let end = i + 27 + segments + body;
        let Some(data) = b.get(i + 27 + segments..end) else {
            break;
        };
        if data.len() >= 12 && &data[..8] == b"OpusHead" {
            pre_skip = i64::from(u16::from_le_bytes([data[10], data[11]]));
        }
        // -1: no packet ends on this page.
        if position >= 0 {
            granule = granule.max(position);
        }
        i = end;
    }
    (granule - pre_skip).max(0) as f64 / 48_000.0
}

/// FLAC: the blocks of every frame followed by another frame's start (the
/// last one found may be cut). Frame starts are found by their sync code
/// and checked by their header's CRC-8.
fn flac(b: &[u8]) -> f64 {
    if b.len() < 4 || &b[..4] != b"fLaC" {
        return 0.0;
    }
    let (mut i, mut rate) = (4, 0u32);
    loop {
        let Some(header) = b.get(i..i + 4) else {
            return 0.0;
        };
        let len =
            (usize::from(header[1]) << 16) | (usize::from(header[2]) << 8) | usize::from(header[3]);
        if header[0] & 0x7f == 0 {
            let Some(info) = b.get(i + 4..i + 4 + 18) else {
                return 0.0;
            };
            rate = (u32::from(info[10]) << 12)
                | (u32::from(info[11]) << 4)
                | (u32::from(info[12]) >> 4);
        }
        i += 4 + len;
        if header[0] & 0x80 != 0 {
            break;
        }
    }
    if rate == 0 {
        return 0.0;
    }
    let mut blocks = Vec::new();
    while i + 2 <= b.len() {
        match flac_frame_block(&b[i..]) {
            Some(block) => {
                blocks.push(block);
                i += 2;
            }
            None => i += 1,
        }
    }
    blocks.pop();
    blocks.iter().sum::<u32>() as f64 / f64::from(rate)
}

/// The block size of a FLAC frame starting at `b[0]`, if a valid frame
/// header (sync code, fields, CRC-8) is there.
fn flac_frame_block(b: &[u8]) -> Option<u32> {
    if b.len() < 6 || b[0] != 0xff || b[1] & 0xfe != 0xf8 {
        return None;
    }
    let (size_code, rate_code) = (b[2] >> 4, b[2] & 15);
    if size_code == 0 || rate_code == 15 || b[3] & 1 != 0 || (b[3] >> 4) > 10 {
        return None;
    }
    // The frame or sample number, UTF-8 coded (1 to 7 bytes).
    let lead = b[4].leading_ones() as usize;
    let number = match lead {
        0 => 1,
        2..=7 => lead,
        _ => return None,
    };
    let mut at = 4 + number;
    let block = match size_code {
        1 => 192,
        2..=5 => 576 << (size_code - 2),
        6 => {
            at += 1;
            u32::from(*b.get(at - 1)?) + 1
        }
        7 => {
            at += 2;
            u32::from(u16::from_be_bytes([*b.get(at - 2)?, *b.get(at - 1)?])) + 1
        }
        _ => 256 << (size_code - 8),
    };
    at += match rate_code {
        12 => 1,
        13 | 14 => 2,
        _ => 0,
    };
    let crc = b.get(..at)?.iter().fold(0u8, |mut crc, &byte| {
        crc ^= byte;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
        crc
    });
    (*b.get(at)? == crc).then_some(block)
}

/// AAC in ADTS frames: 1024 samples per raw block.
fn adts(b: &[u8]) -> f64 {
    const RATES: [u32; 13] = [
        96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025,
        8_000, 7_350,
    ];
    let (mut i, mut seconds) = (0, 0.0);
    while i + 7 <= b.len() {
        if b[i] != 0xff || b[i + 1] & 0xf6 != 0xf0 {
            i += 1;
            continue;
        }
        let Some(&rate) = RATES.get(usize::from((b[i + 2] >> 2) & 15)) else {
            i += 1;
            continue;
        };
        let len = (usize::from(b[i + 3] & 3) << 11)
            | (usize::from(b[i + 4]) << 3)
            | usize::from(b[i + 5] >> 5);
        if len < 7 || i + len > b.len() {
            break;
        }
        seconds += f64::from(1024 * (u32::from(b[i + 6] & 3) + 1)) / f64::from(rate);
        i += len;
    }
    seconds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::encode;
    use crate::Audio;

    /// Each format's count of a whole encoding is the audio encoded (within
    /// a frame), and a cut stream counts only its complete frames.
    #[test]
    fn encoded_streams_count_their_audio() {
        // 3 s: a tone, silence, a tone (silence compresses to little).
        let rate = 24_000;
        let samples: Vec<f32> = (0..3 * rate)
            .map(|n| {
                let t = n as f32 / rate as f32;
                if (1.0..2.0).contains(&t) {
                    0.0
                } else {
                    0.3 * (t * 440.0 * std::f32::consts::TAU).sin()
                }
            })
            .collect();
        let audio = Audio::new(samples, rate as u32);
        for (format, out_rate) in [
            (AudioFormat::Mp3, 24_000),
            (AudioFormat::Mp3, 8_000),
            (AudioFormat::Ogg, 24_000),
            (AudioFormat::Flac, 24_000),
            (AudioFormat::Flac, 8_000),
            (AudioFormat::Aac, 24_000),
            (AudioFormat::Wav, 16_000),
            (AudioFormat::Pcm, 22_050),
        ] {
            let bytes = encode(&audio, format, out_rate).unwrap();
            let whole = seconds_in(format, &bytes, out_rate);
            assert!(
                (whole - 3.0).abs() < 0.25,
                "{format:?} at {out_rate}: {whole} s"
            );
            let half = seconds_in(format, &bytes[..bytes.len() / 2], out_rate);
            assert!(half < whole && half >= 0.0, "{format:?}: {half} of {whole}");
            assert_eq!(seconds_in(format, &[], out_rate), 0.0);
        }
    }
}
