//! Rendering a plan: frames decoded on demand by ffmpeg, crossfaded at each
//! jump and streamed to the encoder; drawn avatars' mouths follow speech.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::plan::{fade_weight, Dir, Plan, FADE, THUMB};
use crate::media::{ffmpeg, in_dir_of, open_input, secs, MediaError};
use crate::process::Piped;
use crate::video::{Container, VideoInfo};

/// A decoder of `count` frames from frame `first` on, at the clip's rate,
/// through `filter`, as raw frames on stdout; and with `copy`, the same
/// frames through a second filter into a file.
fn decoder(
    input: &Path,
    info: &VideoInfo,
    first: usize,
    count: usize,
    filter: &str,
    copy: Option<(&str, &Path)>,
) -> Command {
    let mut cmd = ffmpeg();
    if first > 0 {
        cmd.args(["-ss", &secs((first as f64 - 0.5) / info.fps)]);
    }
    in_dir_of(&mut cmd, input)
        .args(info.demuxer_args())
        .arg("-i")
        .arg(input);
    let output = |cmd: &mut Command, filter: &str| {
        cmd.args(["-map", "0:v:0", "-an", "-sn", "-dn"])
            .args(["-fps_mode", "cfr", "-r", &secs(info.fps)])
            .args(["-frames:v", &count.to_string(), "-vf", filter])
            .args(["-f", "rawvideo"]);
    };
    output(&mut cmd, filter);
    cmd.arg("pipe:1");
    if let Some((filter, path)) = copy {
        output(&mut cmd, filter);
        cmd.arg(path);
    }
    cmd
}

/// Bytes of one full frame (4:2:0 at the even size).
fn frame_size(info: &VideoInfo) -> usize {
    let (w, h) = even(info);
    (w * h + 2 * (w / 2) * (h / 2)) as usize
}

fn full_filter(info: &VideoInfo) -> String {
    let (w, h) = even(info);
    format!("crop={w}:{h}:0:0,format=yuv420p")
}

/// Clips whose decoded frames fit in this many bytes are decoded once into
/// a scratch file beside the thumbnails and read back by frame; longer
/// ones are decoded run by run.
pub const CACHE_LIMIT: f64 = 1024.0 * 1024.0 * 1024.0;

/// Calls `each` with every frame (`size` bytes) the decoder gives.
fn read_frames(
    cmd: Command,
    size: usize,
    timeout: Duration,
    mut each: impl FnMut(Vec<u8>) -> Result<(), MediaError>,
) -> Result<(), MediaError> {
    let mut tool = Piped::spawn(cmd, timeout)?;
    let mut out = tool.stdout.take().expect("piped stdout");
    loop {
        let mut frame = vec![0u8; size];
        match read_full(&mut out, &mut frame) {
            Ok(true) => each(frame)?,
            Ok(false) => break,
            Err(e) => return Err(tool.io_error(e).into()),
        }
    }
    drop(out);
    tool.finish()?;
    Ok(())
}

/// Fills `buf`; false at the end of the stream (a partial frame is dropped).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => return Ok(false),
            k => got += k,
        }
    }
    Ok(true)
}

fn decode_limit(info: &VideoInfo) -> Duration {
    Duration::from_secs_f64(60.0 + info.duration)
}

/// Grey thumbnails of every frame of the clip, at its nominal rate. With
/// `cache`, a clip whose frames fit in [`CACHE_LIMIT`] also has its full
/// frames written there by the same decode (for [`render`]).
pub fn thumbnails(
    input: &Path,
    info: &VideoInfo,
    cache: Option<&Path>,
) -> Result<Vec<Vec<u8>>, MediaError> {
    let filter = format!("scale={THUMB}:{THUMB}:flags=area,format=gray");
    let fits = info.duration * info.fps * frame_size(info) as f64 <= CACHE_LIMIT;
    let full = full_filter(info);
    let copy = cache.filter(|_| fits).map(|path| (full.as_str(), path));
    let cmd = decoder(input, info, 0, usize::MAX >> 8, &filter, copy);
    let mut thumbs = Vec::new();
    read_frames(cmd, THUMB * THUMB, decode_limit(info), |f| {
        thumbs.push(f);
        Ok(())
    })?;
    Ok(thumbs)
}

/// Where the output goes.
pub struct Output<'a> {
    pub container: Container,
    pub path: &'a Path,
    /// Sound to put under the picture (its first stream), cut to the
    /// picture's length, with the demuxer its probe found.
    pub audio: Option<(&'a Path, &'static str)>,
}

/// The even picture size (4:2:0 needs it) of a clip.
fn even(info: &VideoInfo) -> (u32, u32) {
    (info.width & !1, info.height & !1)
}

/// An encoder reading raw `pix_fmt` frames of `w`×`h` at `fps` on stdin,
/// `frames` of them, with the output's sound.
fn encoder(
    out: &Output,
    pix_fmt: &str,
    (w, h): (u32, u32),
    fps: f64,
    frames: usize,
) -> Result<Piped, MediaError> {
    let mut cmd = ffmpeg();
    cmd.args([
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-s",
        &format!("{w}x{h}"),
    ])
    .args(["-r", &secs(fps), "-i", "pipe:0"]);
    if let Some((audio, demuxer)) = out.audio {
        open_input(&mut cmd, audio, demuxer).args(["-map", "0:v:0", "-map", "1:a:0"]);
    }
    let seconds = frames as f64 / fps;
    cmd.args(out.container.encoders())
        .args(["-b:a", &out.container.audio_bitrate(2)])
        // The picture is exactly the frames written; the sound is cut to it.
        .args(["-t", &secs(seconds)])
        .args(["-movflags", "+faststart", "-f", out.container.muxer()])
        .arg(out.path);
    Ok(Piped::spawn(
        cmd,
        Duration::from_secs_f64(120.0 + 4.0 * seconds),
    )?)
}

/// Frames the backward runs decode at once.
const CHUNK: usize = 32;

/// Most bytes of frames a backward run holds at once.
const CHUNK_BYTES: usize = 64 * 1024 * 1024;

/// Renders `plan` over the clip (of `n` frames) into `out`, decoding the
/// frames each run needs as it goes. `cancelled` is polled between frames.
pub fn render(
    input: &Path,
    info: &VideoInfo,
    n: usize,
    plan: &Plan,
    cache: Option<&Path>,
    out: &Output,
    cancelled: &dyn Fn() -> bool,
) -> Result<(), MediaError> {
    let (w, h) = even(info);
    let size = frame_size(info);
    let filter = full_filter(info);
    let total = plan.frames();
    // The frames [`thumbnails`] decoded, when they are all there.
    let cached = match cache.map(std::fs::File::open) {
        Some(Ok(file)) if file.metadata()?.len() == (n * size) as u64 => {
            Some(std::cell::RefCell::new(file))
        }
        _ => None,
    };
    // Frames a backward run holds at once: CHUNK, fewer for big pictures
    // (a 4096×4096 frame is 25 MB), so memory stays within CHUNK_BYTES.
    let chunk = (CHUNK_BYTES / size.max(1)).clamp(1, CHUNK);
    let mut enc = encoder(out, "yuv420p", (w, h), info.fps, total)?;
    let mut sink = enc.stdin.take().expect("piped stdin");
    let mut write = |frame: &[u8]| -> Result<(), MediaError> {
        if cancelled() {
            return Err(std::io::Error::other("cancelled").into());
        }
        sink.write_all(frame).map_err(MediaError::from)
    };
    let decode =
        |first: usize, count: usize, each: &mut dyn FnMut(Vec<u8>) -> Result<(), MediaError>| {
            let Some(file) = &cached else {
                return read_frames(
                    decoder(input, info, first, count, &filter, None),
                    size,
                    decode_limit(info),
                    each,
                );
            };
            let mut file = file.borrow_mut();
            file.seek(std::io::SeekFrom::Start((first * size) as u64))?;
            for _ in first..(first + count).min(n) {
                let mut frame = vec![0u8; size];
                file.read_exact(&mut frame)?;
                each(frame)?;
            }
            Ok(())
        };
    // The frames after a jump's source, faded out over the next run.
    let mut tail: Vec<Vec<u8>> = Vec::new();
    let mut result = Ok(());
    for (ri, run) in plan.runs.iter().enumerate() {
        let step = (|| -> Result<(), MediaError> {
            match run.dir {
                Dir::Forward => {
                    let extra = plan
                        .runs
                        .get(ri + 1)
                        .and_then(|next| next.fade)
                        .map_or(0, |f| FADE.min(n - f));
                    let fading = std::mem::take(&mut tail);
                    let mut k = 0;
                    decode(run.from, run.len + extra, &mut |mut frame| {
                        if k >= run.len {
                            tail.push(frame);
                        } else {
                            if let Some(old) = fading.get(k) {
                                blend(&mut frame, old, fade_weight(k));
                            }
                            write(&frame)?;
                        }
                        k += 1;
                        Ok(())
                    })?;
                    // A clip shorter than its probe said: hold its last frame.
                    if k < run.len {
                        return Err(std::io::Error::other(format!(
                            "the clip ended {} frames early",
                            run.len - k
                        ))
                        .into());
                    }
                    Ok(())
                }
                Dir::Backward => {
                    let last = run.from + 1 - run.len;
                    let mut hi = run.from + 1;
                    while hi > last {
                        let lo = hi.saturating_sub(chunk).max(last);
                        let mut frames = Vec::with_capacity(hi - lo);
                        decode(lo, hi - lo, &mut |f| {
                            frames.push(f);
                            Ok(())
                        })?;
                        for f in frames.iter().rev() {
                            write(f)?;
                        }
                        hi = lo;
                    }
                    Ok(())
                }
                Dir::Hold => {
                    let mut held = None;
                    decode(run.from, 1, &mut |f| {
                        held = Some(f);
                        Ok(())
                    })?;
                    let held = held.ok_or_else(|| std::io::Error::other("no frame to hold"))?;
                    for _ in 0..run.len {
                        write(&held)?;
                    }
                    Ok(())
                }
            }
        })();
        if step.is_err() {
            result = step;
            break;
        }
    }
    drop(sink);
    let finished = enc.finish();
    result?;
    finished?;
    Ok(())
}

/// `frame` = w·frame + (1-w)·old, byte by byte (Y, U and V alike).
fn blend(frame: &mut [u8], old: &[u8], w: f32) {
    let a = (w * 256.0) as u32;
    for (x, &o) in frame.iter_mut().zip(old) {
        *x = ((*x as u32 * a + o as u32 * (256 - a) + 128) >> 8) as u8;
    }
}

/// Renders `frames` RGBA pictures (`w`×`h`) made by `picture(k)` at `fps`
/// into `out` (a talking presenter drawn frame by frame).
pub fn render_drawn(
    (w, h): (u32, u32),
    fps: f64,
    frames: usize,
    out: &Output,
    cancelled: &dyn Fn() -> bool,
    mut picture: impl FnMut(usize) -> Vec<u8>,
) -> Result<(), MediaError> {
    let mut enc = encoder(out, "rgba", (w, h), fps, frames)?;
    let mut sink = enc.stdin.take().expect("piped stdin");
    let mut result = Ok(());
    for k in 0..frames {
        if cancelled() {
            result = Err(std::io::Error::other("cancelled"));
            break;
        }
        if let Err(e) = sink.write_all(&picture(k)) {
            result = Err(e);
            break;
        }
    }
    drop(sink);
    let finished = enc.finish();
    if let Err(e) = result {
        return Err(match finished {
            Err(tool) => tool.into(),
            Ok(()) => e.into(),
        });
    }
    finished?;
    Ok(())
}

/// How open the mouth is in each of `frames` video frames (0 shut, 1 wide)
/// from 16 kHz mono speech: the loudness of each frame's window against the
/// speech's own range, opening fast and closing a little slower.
pub fn mouth_track(pcm: &[f32], fps: f64, frames: usize) -> Vec<f32> {
    let hop = 16_000.0 / fps;
    let db: Vec<f32> = (0..frames)
        .map(|k| {
            let a = (k as f64 * hop) as usize;
            let b = (((k + 1) as f64 * hop) as usize).min(pcm.len());
            if a >= b {
                return -100.0;
            }
            let power = pcm[a..b].iter().map(|s| s * s).sum::<f32>() / (b - a) as f32;
            10.0 * (power + 1e-10).log10()
        })
        .collect();
    let mut sorted = db.clone();
    sorted.sort_by(f32::total_cmp);
    let pick = |q: f32| {
        sorted
            .get(((sorted.len() as f32 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(-100.0)
    };
    let (floor, loud) = (pick(0.1).max(-60.0) + 6.0, pick(0.95));
    let range = (loud - floor).max(6.0);
    let mut open = 0.0f32;
    db.iter()
        .map(|&d| {
            let target = ((d - floor) / range).clamp(0.0, 1.0);
            open += (target - open) * if target > open { 0.7 } else { 0.45 };
            open
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mouths_follow_loudness() {
        let mut pcm = vec![0.0f32; 16_000];
        for (i, s) in pcm.iter_mut().enumerate().skip(8000) {
            *s = 0.3 * (i as f32 * 0.1).sin();
        }
        let m = mouth_track(&pcm, 25.0, 25);
        assert!(m[5] < 0.05 && m[20] > 0.5, "{m:?}");
    }
}
