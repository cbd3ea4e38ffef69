//! Cutting ranges out of a video: frame-accurate (re-encoded), smart (whole
//! GOPs copied, the edges re-encoded) and fast (copied from keyframes).

use std::path::Path;
use std::time::Duration;

use super::keyframes::{closed_end, key_times, Packet};
use super::probe::VideoInfo;
use crate::media::{ffmpeg, secs, MediaError};
use crate::process::run;

pub use mediagen_core::format::{Container, Range};

/// How a trim was made.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trimmed {
    /// The ranges as cut (fast mode snaps starts to keyframes).
    pub ranges: Vec<Range>,
    /// `reencode` or `stream_copy`.
    pub method: &'static str,
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
    info.open(&mut cmd, input)
        .args(["-filter_complex", &graph, "-map", "[v]"]);
    if audio {
        cmd.args(["-map", "[a]"]);
    }
    // The graph yields exactly the frames wanted: no duplicates or drops.
    cmd.args(["-fps_mode", "passthrough"])
        .args(container.encoders())
        .args(["-b:a", &container.audio_bitrate(info.audio_channels)])
        .args(["-f", container.muxer()])
        .arg(out);
    run(cmd, b"", time_limit(info.duration))?;
    Ok(Trimmed {
        ranges: applied,
        method: "reencode",
    })
}

/// Why a smart cut cannot be used for this input, if it cannot.
pub fn smart_cut_refusal(info: &VideoInfo, container: Container) -> Option<String> {
    if container == Container::Webm {
        return Some("webm output needs VP9: the whole range is re-encoded".into());
    }
    if info.video_codec != "h264" || info.pix_fmt != "yuv420p" {
        return Some(format!(
            "only H.264 4:2:0 video is cut without re-encoding (this is {} {})",
            info.video_codec, info.pix_fmt
        ));
    }
    if !info.constant_rate {
        return Some("the frame rate varies: the whole range is re-encoded".into());
    }
    None
}

/// One piece of the joined video.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// Frames `[from, to)` re-encoded, decoding from keyframe `key`.
    Encode { key: i64, from: i64, to: i64 },
    /// Frames `[from, to)` copied: whole GOPs starting at keyframe `from`.
    Copy { from: i64, to: i64 },
}

/// Splits frame ranges into re-encoded heads and tails and copied middles:
/// a range's frames before its first keyframe and from its last keyframe on
/// are re-encoded, the whole GOPs between are copied.
fn plan_pieces(ranges: &[(i64, i64)], keys: &[i64]) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for &(a, b) in ranges {
        let before = keys.iter().copied().rfind(|&k| k <= a).unwrap_or(0);
        let first = keys.iter().copied().find(|&k| k >= a && k < b);
        let last = keys.iter().copied().rfind(|&k| k >= a && k <= b);
        match (first, last) {
            (Some(k1), Some(k2)) if k1 < k2 => {
                if a < k1 {
                    pieces.push(Piece::Encode {
                        key: before,
                        from: a,
                        to: k1,
                    });
                }
                pieces.push(Piece::Copy { from: k1, to: k2 });
                if k2 < b {
                    pieces.push(Piece::Encode {
                        key: k2,
                        from: k2,
                        to: b,
                    });
                }
            }
            _ => pieces.push(Piece::Encode {
                key: before,
                from: a,
                to: b,
            }),
        }
    }
    pieces
}

/// Frame-exact cuts that re-encode only what they must (a "smart cut"):
/// from each cut to the next keyframe, and from the last keyframe before an
/// end to that end; the GOPs between are copied untouched. Video pieces are
/// written as MPEG-TS (parameter sets in band, so re-encoded and copied
/// pieces decode as one stream) and joined by ffmpeg's concat demuxer with
/// exact durations; the sound is cut and encoded in one pass beside them.
/// Returns the seconds re-encoded as well.
pub fn trim_smart(
    input: &Path,
    info: &VideoInfo,
    packets: &[Packet],
    ranges: &[Range],
    container: Container,
    scratch: &Path,
    out: &Path,
) -> Result<(Trimmed, f64), MediaError> {
    let fps = info.fps;
    let frame = |t: f64| (t * fps).round() as i64;
    let keys: Vec<i64> = key_times(packets).into_iter().map(frame).collect();
    let frames: Vec<(i64, i64)> = ranges
        .iter()
        .map(|r| (frame(r.start), frame(r.end).max(frame(r.start) + 1)))
        .collect();
    let pieces = plan_pieces(&frames, &keys);
    let at = |f: i64| secs(f as f64 / fps);
    let audio = info.audio_codec.is_some();
    // Each range's sound decoded from a seek to its start (PCM, so the
    // pieces join sample-exactly), then encoded once. (Copying AAC packets
    // instead would drift by up to a frame of priming per cut.)
    let sound = scratch.join("audio.m4a");
    // The sound and the picture are cut side by side (ffmpeg's AAC encoder is
    // single-threaded).
    let cut_sound = || -> Result<(), MediaError> {
        if !audio {
            return Ok(());
        }
        let mut sounds = String::from("ffconcat version 1.0\n");
        for (i, &(a, b)) in frames.iter().enumerate() {
            let name = format!("sound{i}.wav");
            let mut cmd = ffmpeg();
            cmd.args(["-ss", &at(a)]);
            info.open(&mut cmd, input)
                .args([
                    "-t",
                    &at(b - a),
                    "-map",
                    "0:a:0",
                    "-c:a",
                    "pcm_s16le",
                    "-f",
                    "wav",
                ])
                .arg(scratch.join(&name));
            run(cmd, b"", time_limit((b - a) as f64 / fps))?;
            sounds.push_str(&format!("file {name}\n"));
        }
        std::fs::write(scratch.join("sounds.ffconcat"), sounds)?;
        let mut cmd = ffmpeg();
        cmd.args(["-f", "concat", "-safe", "1", "-i"])
            .arg(scratch.join("sounds.ffconcat"))
            // ffmpeg's fast AAC search: twice the speed of the default.
            .args([
                "-c:a",
                "aac",
                "-aac_coder",
                "fast",
                "-b:a",
                &container.audio_bitrate(info.audio_channels),
                "-f",
                "mp4",
            ])
            .arg(&sound);
        run(cmd, b"", time_limit(info.duration))?;
        Ok(())
    };
    let (list, encoded) = std::thread::scope(|scope| {
        let sound_job = scope.spawn(crate::process::in_this_scope(cut_sound));
        let picture = (|| -> Result<(String, i64), MediaError> {
            let mut list = String::from("ffconcat version 1.0\n");
            let mut encoded = 0;
            for (i, piece) in pieces.iter().enumerate() {
                let name = format!("piece{i}.ts");
                let mut cmd = ffmpeg();
                let (from, to) = match *piece {
                    Piece::Copy { from, to } => {
                        cmd.args(["-ss", &seek(from, fps)]);
                        info.open(&mut cmd, input)
                            .args(["-map", "0:v:0", "-frames:v", &(to - from).to_string()])
                            .args(["-c:v", "copy", "-f", "mpegts"]);
                        (from, to)
                    }
                    Piece::Encode { key, from, to } => {
                        encoded += to - from;
                        let graph = format!(
                            "trim=start_frame={}:end_frame={},setpts=PTS-STARTPTS",
                            from - key,
                            to - key
                        );
                        cmd.args(["-noaccurate_seek", "-ss", &seek(key, fps)]);
                        info.open(&mut cmd, input)
                            .args(["-map", "0:v:0", "-vf", &graph, "-fps_mode", "passthrough"])
                            .args(["-c:v", "libx264", "-preset", "superfast", "-crf", "16"])
                            .args(["-pix_fmt", "yuv420p", "-f", "mpegts"]);
                        (from, to)
                    }
                };
                cmd.arg(scratch.join(&name));
                run(cmd, b"", time_limit((to - from) as f64 / fps))?;
                list.push_str(&format!(
                    "file {name}\nduration {}\n",
                    secs((to - from) as f64 / fps)
                ));
            }
            Ok((list, encoded))
        })();
        let sound = sound_job
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the sound thread panicked").into()));
        sound.and(picture)
    })?;
    std::fs::write(scratch.join("pieces.ffconcat"), list)?;
    let mut cmd = ffmpeg();
    cmd.args(["-f", "concat", "-safe", "1", "-i"])
        .arg(scratch.join("pieces.ffconcat"));
    if audio {
        cmd.arg("-i").arg(&sound);
    }
    cmd.args(["-map", "0:v:0"]);
    if audio {
        cmd.args(["-map", "1:a:0"]);
    }
    cmd.args([
        "-c",
        "copy",
        "-r",
        &format!("{fps}"),
        "-f",
        container.muxer(),
    ])
    .arg(out);
    run(cmd, b"", time_limit(info.duration))?;
    Ok((
        Trimmed {
            ranges: applied(&frames, fps),
            method: "smart_cut",
        },
        encoded as f64 / fps,
    ))
}

/// Per range of a fast cut: the keyframe time it starts at (as ffprobe
/// printed it, to the microsecond, so the seek lands exactly on it), its
/// first frame and its end frame (see [`trim_fast`]).
pub fn fast_spans(info: &VideoInfo, packets: &[Packet], ranges: &[Range]) -> Vec<(f64, i64, i64)> {
    let fps = info.fps;
    let frame = |t: f64| (t * fps).round() as i64;
    let keys = key_times(packets);
    let total = frame(info.duration);
    ranges
        .iter()
        .map(|r| {
            let (a, b) = (frame(r.start), frame(r.end));
            let from = keys
                .iter()
                .copied()
                .rfind(|&k| frame(k) <= a)
                .unwrap_or(0.0);
            let last_key = keys
                .iter()
                .copied()
                .rfind(|&k| frame(k) < b)
                .map_or(frame(from), frame)
                .max(frame(from));
            let end = match closed_end(packets, last_key, b, fps) {
                Some((end, _)) => end,
                None => keys
                    .iter()
                    .copied()
                    .map(frame)
                    .find(|&k| k >= b)
                    .unwrap_or(total),
            };
            (from, frame(from), end.max(frame(from) + 1))
        })
        .collect()
}

/// What a cut reads beyond its ranges because of where the keyframes are,
/// seconds per range: a fast cut copies from the keyframe at or before a
/// range's start to where its decoding order closes (often the next
/// keyframe), so the whole span less the range; an accurate (or smart)
/// cut decodes from the keyframe at or before the start, so that lead.
pub fn keyframe_overrun(
    info: &VideoInfo,
    packets: &[Packet],
    ranges: &[Range],
    fast: bool,
) -> Vec<f64> {
    if fast {
        return fast_spans(info, packets, ranges)
            .iter()
            .zip(ranges)
            .map(|(&(_, first, end), r)| {
                ((end - first) as f64 / info.fps - (r.end - r.start)).max(0.0)
            })
            .collect();
    }
    let keys = key_times(packets);
    ranges
        .iter()
        .map(|r| {
            let key = keys
                .iter()
                .copied()
                .rfind(|&k| k <= r.start + 1e-6)
                .unwrap_or(0.0);
            (r.start - key).max(0.0)
        })
        .collect()
}

/// Cuts without re-encoding anything: each range's start moves back to the
/// keyframe at or before it, its end on to the first frame where the
/// decoding order closes ([`closed_end`]: within a few frames for B-frame
/// streams; the next keyframe or the end of the media otherwise); picture and sound packets of each
/// range are copied in one pass into an mp4 piece, as `ffmpeg -c copy`
/// would, and the pieces joined with exact durations. The result gives the times used. The sound of each piece
/// starts within one audio packet of its picture.
pub fn trim_fast(
    input: &Path,
    info: &VideoInfo,
    packets: &[Packet],
    ranges: &[Range],
    container: Container,
    scratch: &Path,
    out: &Path,
) -> Result<Trimmed, MediaError> {
    let fps = info.fps;
    let spans = fast_spans(info, packets, ranges);
    // One ffmpeg copies every piece: an input per range, seeked a
    // microsecond past its keyframe (past the rounding of its printed time,
    // well inside its first tick), and an output per range.
    let mut cmd = ffmpeg();
    for &(from, _, _) in &spans {
        cmd.args(["-ss", &secs(from + 1e-6)]);
        info.open(&mut cmd, input);
    }
    let mut list = String::from("ffconcat version 1.0\n");
    let mut seconds_total = 0.0;
    for (i, &(_, first, end)) in spans.iter().enumerate() {
        let name = format!("piece{i}.mp4");
        let count = end - first;
        let seconds = count as f64 / fps;
        seconds_total += seconds;
        cmd.args(["-map", &format!("{i}:v:0"), "-map", &format!("{i}:a:0?")])
            .args(["-t", &secs(seconds)]);
        if i + 1 < spans.len() {
            // Counting packets (the copied prefix holds exactly the frames
            // of the piece) ends the piece's sound with its last decoded
            // picture, about where the next piece's AAC pre-roll (the
            // packets before its cut that the decoder needs) takes over.
            cmd.args(["-frames:v", &count.to_string()]);
        } else {
            // The last piece's sound runs to its end; pictures due after it
            // are dropped by time.
            let drop = format!("noise=drop=gte(pts*tb\\,{})", secs(seconds - 0.5 / fps));
            cmd.args(["-bsf:v", &drop]);
        }
        cmd.args(["-c", "copy", "-f", "mp4"])
            .arg(scratch.join(&name));
        list.push_str(&format!("file {name}\nduration {}\n", secs(seconds)));
    }
    run(cmd, b"", time_limit(seconds_total))?;
    std::fs::write(scratch.join("pieces.ffconcat"), list)?;
    let mut cmd = ffmpeg();
    cmd.args(["-f", "concat", "-safe", "1", "-i"])
        .arg(scratch.join("pieces.ffconcat"))
        // The pieces' own timestamps (each starts at its keyframe, the
        // sound at the same instant through the mp4 edit list): letting
        // ffmpeg shift them would move the picture against the sound by
        // the B-frame delay.
        .args(["-copyts", "-map", "0:v:0", "-map", "0:a:0?", "-c", "copy"])
        .args(["-r", &format!("{fps}"), "-f", container.muxer()])
        .arg(out);
    run(cmd, b"", time_limit(info.duration))?;
    let frames: Vec<(i64, i64)> = spans.iter().map(|&(_, a, b)| (a, b)).collect();
    Ok(Trimmed {
        ranges: applied(&frames, fps),
        method: "stream_copy",
    })
}

/// Seeking a quarter frame past a keyframe lands on it.
fn seek(frame: i64, fps: f64) -> String {
    secs((frame as f64 + 0.25) / fps)
}

fn applied(frames: &[(i64, i64)], fps: f64) -> Vec<Range> {
    frames
        .iter()
        .map(|&(a, b)| Range {
            start: a as f64 / fps,
            end: b as f64 / fps,
        })
        .collect()
}

pub(super) fn time_limit(duration: f64) -> Duration {
    Duration::from_secs_f64(120.0 + duration * 4.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_cuts_copy_whole_gops_only() {
        let keys = [0, 50, 100, 150, 200];
        assert_eq!(
            plan_pieces(&[(31, 160)], &keys),
            vec![
                Piece::Encode {
                    key: 0,
                    from: 31,
                    to: 50
                },
                Piece::Copy { from: 50, to: 150 },
                Piece::Encode {
                    key: 150,
                    from: 150,
                    to: 160
                },
            ]
        );
        // On keyframes at both ends: copied whole.
        assert_eq!(
            plan_pieces(&[(50, 150)], &keys),
            vec![Piece::Copy { from: 50, to: 150 }]
        );
        // No two keyframes inside: re-encoded whole.
        assert_eq!(
            plan_pieces(&[(60, 120)], &keys),
            vec![Piece::Encode {
                key: 50,
                from: 60,
                to: 120
            }]
        );
    }

    #[test]
    fn containers_know_their_codecs() {
        assert!(Container::Mp4.accepts("h264") && !Container::Webm.accepts("h264"));
        assert_eq!(Container::parse("mkv"), Some(Container::Mkv));
        assert_eq!(Container::parse("avi"), None);
    }
}
