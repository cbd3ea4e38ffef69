//! The packet index of a video: where its keyframes are, and where a copied
//! stretch ends so that every frame in it decodes.

use std::path::Path;

use super::probe::{ffprobe, parse_info, VideoInfo};
use crate::media::{secs, MediaError};

/// A video packet as the index lists it, in decoding order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Packet {
    /// Presentation time, seconds.
    pub pts: f64,
    /// Decoding time, seconds.
    pub dts: f64,
    pub key: bool,
}

/// All video packets from ffprobe's packet listing (`pts_time,dts_time,
/// flags`), in decoding order, each once.
fn read_packets(path: &Path, timeout: f64) -> Result<Vec<Packet>, MediaError> {
    let csv = ffprobe(
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            "packet=pts_time,dts_time,flags",
            "-of",
            "csv=p=0",
        ],
        path,
        timeout,
    )?;
    Ok(parse_packets(&csv))
}

fn parse_packets(csv: &str) -> Vec<Packet> {
    let mut packets: Vec<Packet> = csv
        .lines()
        .filter_map(|l| {
            let mut f = l.split(',');
            let pts = f.next()?.parse().ok()?;
            let dts = f.next()?.parse().unwrap_or(pts);
            let key = f.next()?.contains('K');
            Some(Packet { pts, dts, key })
        })
        .collect();
    sort_packets(&mut packets);
    packets
}

/// Decoding order, each packet once (the listed windows may overlap).
fn sort_packets(packets: &mut Vec<Packet>) {
    packets.sort_by(|a, b| a.dts.total_cmp(&b.dts));
    packets.dedup_by(|a, b| a.dts == b.dts);
}

/// How far past each point [`inspect_near`] reads the packet index.
const KEY_WINDOW: f64 = 12.0;

/// The video facts of a file (`None` without a picture) and its video
/// packets around the given points, in one ffprobe run: for each point,
/// from the keyframe at or before it to [`KEY_WINDOW`] seconds after it
/// (`-read_intervals`: a seek and a few hundred packets each, not the whole
/// index). Falls back to the whole index when a point has no keyframe after
/// it within the window and before the end (very long GOPs).
pub fn inspect_near(
    path: &Path,
    points: &[f64],
) -> Result<Option<(VideoInfo, Vec<Packet>)>, MediaError> {
    let intervals = points
        .iter()
        .map(|p| format!("{}%+{KEY_WINDOW}", secs(*p)))
        .collect::<Vec<_>>()
        .join(",");
    let json = ffprobe(
        &[
            "-show_streams",
            "-show_format",
            "-read_intervals",
            &intervals,
            "-show_entries",
            "packet=stream_index,pts_time,dts_time,flags",
            "-of",
            "json",
        ],
        path,
        60.0,
    )?;
    let Some(info) = parse_info(&json) else {
        return Ok(None);
    };
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    let time = |p: &serde_json::Value, k: &str| p[k].as_str().and_then(|t| t.parse::<f64>().ok());
    let mut packets: Vec<Packet> = v["packets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["stream_index"].as_u64() == Some(info.video_index))
        .filter_map(|p| {
            let pts = time(p, "pts_time")?;
            Some(Packet {
                pts,
                dts: time(p, "dts_time").unwrap_or(pts),
                key: p["flags"].as_str().is_some_and(|f| f.contains('K')),
            })
        })
        .collect();
    sort_packets(&mut packets);
    let covered = points
        .iter()
        .all(|&p| p + KEY_WINDOW >= info.duration || packets.iter().any(|k| k.key && k.pts >= p));
    if !covered {
        packets = read_packets(path, 60.0 + info.duration / 10.0)?;
    }
    Ok(Some((info, packets)))
}

/// The keyframe times among `packets`, sorted.
pub fn key_times(packets: &[Packet]) -> Vec<f64> {
    let mut keys: Vec<f64> = packets.iter().filter(|p| p.key).map(|p| p.pts).collect();
    keys.sort_by(f64::total_cmp);
    keys.dedup();
    keys
}

/// Where a stream copy can end near frame `end`: the first frame index
/// `e >= end` such that the packets decoded from the keyframe at `key`
/// (a frame index) up to some point are exactly the frames `key..e` (no
/// later picture decoded before them, so the prefix is complete and
/// decodable whatever the B-frame order). Returns `e` and the number of
/// packets from `key`. `None` when no such point is found in the packets
/// listed (a gap, an open GOP, or the window's end): then the copy runs on
/// to the next keyframe.
pub fn closed_end(packets: &[Packet], key: i64, end: i64, fps: f64) -> Option<(i64, usize)> {
    let frame = |t: f64| (t * fps).round() as i64;
    let start = packets.iter().position(|p| p.key && frame(p.pts) == key)?;
    let run = &packets[start..];
    // Deeper than any B-frame pyramid.
    const LOOKAHEAD: usize = 16;
    let mut last = i64::MIN;
    for n in 0..run.len() {
        if n > 0 && (run[n].dts - run[n - 1].dts) * fps > 2.5 {
            return None;
        }
        last = last.max(frame(run[n].pts));
        let complete = last - key + 1 == n as i64 + 1;
        let ahead = &run[n + 1..(n + 1 + LOOKAHEAD).min(run.len())];
        if last + 1 >= end && complete && ahead.iter().all(|p| frame(p.pts) > last) {
            return Some((last + 1, n + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// I P B b b P B b b ... (pts order 0 3 1 2 ...): a copied prefix is
    /// complete only after each B-frame group.
    #[test]
    fn copies_end_where_decoding_order_closes() {
        let fps = 25.0;
        let mut packets = Vec::new();
        let order = [0, 4, 2, 1, 3, 8, 6, 5, 7, 12, 10, 9, 11];
        for (d, &p) in order.iter().enumerate() {
            packets.push(Packet {
                pts: (p + 50) as f64 / fps,
                dts: (d as f64 - 1.0 + 50.0) / fps,
                key: p == 0,
            });
        }
        // Frame 52 is wanted: the first closed prefix covering it is 50..=54.
        assert_eq!(closed_end(&packets, 50, 52, fps), Some((55, 5)));
        assert_eq!(closed_end(&packets, 50, 55, fps), Some((55, 5)));
        assert_eq!(closed_end(&packets, 50, 56, fps), Some((59, 9)));
        // No keyframe there, or a gap in the listing.
        assert_eq!(closed_end(&packets, 51, 52, fps), None);
        let mut gap = packets.clone();
        gap.drain(3..6);
        assert_eq!(closed_end(&gap, 50, 56, fps), None);
    }
}
