//! Diarization: who speaks when.
//!
//! Speech regions come from the voice-activity detector. Inside them,
//! windows of 1 s every quarter second are embedded by the speaker encoder
//! (shorter than its 1.6-s training windows, so fewer of them hold two
//! voices where speakers take turns without a pause). Each region is cut
//! into pieces of at most 1.5 s, a piece's voice being
//! the mean of its windows; the pieces are clustered bottom-up (average
//! linkage on cosine similarity, weighted by length) until no two clusters
//! are closer than the threshold, or until `speakers` clusters remain when
//! the caller knows how many there are. A cluster with under 2 s of speech
//! in all joins its nearest (a voice heard that briefly is not told apart
//! reliably). Then every window takes the speaker whose voice it is
//! nearest, every tenth of a second of speech the speaker of the window
//! centred nearest it, and stretches under 0.3 s join their neighbours, so
//! speakers who take turns without a pause are still cut apart.
//! Overlapping speech is given to one speaker.

use std::ops::Range;

use crate::encoder::{raised, Embedding, EncoderError, SpeakerEncoder, HOP};
use crate::vad::{self, RegionOptions, Vad, VadError, FRAME};
use crate::RATE;

/// Mel frames per window (1 s). Window, step, piece and threshold were
/// tuned together on our test conversations (docs/voice.md): 1-s windows
/// every 0.25 s, 1.5-s pieces and a threshold from 0.71 to 0.74 kept every
/// one under 3 % error; longer windows or pieces merged speakers who take
/// turns without a pause.
const WINDOW: usize = 100;
/// Windows start every this many mel frames (0.25 s).
const STEP: usize = 25;
/// Labels are decided every this many samples (0.1 s).
const TICK: usize = RATE / 10;
/// Stretches shorter than this (ticks) join a neighbour.
const MIN_TURN: usize = 3;
/// Audio given to the detector at once (60 s).
const BLOCK: usize = FRAME * 1875;
/// Longest piece clustered (1.5 s).
const PIECE: usize = RATE * 3 / 2;
/// Less speech than this (2 s) is not a speaker of its own.
const MIN_SPEAKER: usize = 2 * RATE;
/// Similarity under which two clusters are different speakers (the middle
/// of the range that worked, see [`WINDOW`]).
pub const THRESHOLD: f32 = 0.72;
/// More pieces than this (15 minutes of speech) are first joined with
/// their neighbours in time, where those are close (a chain of one voice)
/// and then, while still too many, in runs of equal length, so that
/// clustering (cubic in the groups) stays bounded on a two-hour file. The
/// final labels still come window by window.
const MAX_PIECES: usize = 600;

/// 16 kHz mono audio read piece by piece.
pub trait Samples {
    /// Samples in all.
    fn total(&self) -> usize;
    /// Up to `max` samples from `at`.
    fn read(&self, at: usize, max: usize) -> Result<Vec<f32>, String>;
}

impl Samples for &[f32] {
    fn total(&self) -> usize {
        <[f32]>::len(self)
    }

    fn read(&self, at: usize, max: usize) -> Result<Vec<f32>, String> {
        let at = at.min(<[f32]>::len(self));
        Ok(self[at..(at + max).min(<[f32]>::len(self))].to_vec())
    }
}

impl Samples for mediagen_media::pcm::PcmFile {
    fn total(&self) -> usize {
        mediagen_media::pcm::PcmFile::len(self)
    }

    fn read(&self, at: usize, max: usize) -> Result<Vec<f32>, String> {
        self.read_at(at, max).map_err(|e| e.to_string())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DiarizeError {
    #[error(transparent)]
    Vad(#[from] VadError),
    #[error(transparent)]
    Encoder(#[from] EncoderError),
    #[error("reading audio: {0}")]
    Read(String),
    #[error("{0}")]
    Model(String),
    #[error("cancelled")]
    Cancelled,
}

/// A stretch of one speaker's speech, in samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub speaker: usize,
    pub range: Range<usize>,
}

/// Who speaks when, and each speaker's voice.
#[derive(Debug, Clone, Default)]
pub struct Diarization {
    /// In time order; speakers are numbered by their first turn.
    pub turns: Vec<Turn>,
    /// Each speaker's embedding (the mean of their windows).
    pub voices: Vec<Embedding>,
}

impl Diarization {
    /// The speaker at sample `at`: the turn holding it, else the nearest.
    pub fn speaker_at(&self, at: usize) -> Option<usize> {
        self.turns
            .iter()
            .min_by_key(|t| {
                if t.range.contains(&at) {
                    0
                } else {
                    t.range.start.abs_diff(at).min(t.range.end.abs_diff(at))
                }
            })
            .map(|t| t.speaker)
    }

    /// The speaker who speaks most within `range` (samples), else the one
    /// nearest its middle.
    pub fn speaker_of(&self, range: Range<usize>) -> Option<usize> {
        let mut time = vec![0usize; self.voices.len()];
        for t in &self.turns {
            let overlap = t
                .range
                .end
                .min(range.end)
                .saturating_sub(t.range.start.max(range.start));
            time[t.speaker] += overlap;
        }
        match time.iter().enumerate().max_by_key(|&(_, &n)| n) {
            Some((s, &n)) if n > 0 => Some(s),
            _ => self.speaker_at((range.start + range.end) / 2),
        }
    }

    /// The parts of `turn` where no other speaker's turn overlaps it.
    pub fn alone(&self, turn: &Turn) -> Vec<Range<usize>> {
        let mut parts = vec![turn.range.clone()];
        for other in self.turns.iter().filter(|o| o.speaker != turn.speaker) {
            parts = parts
                .into_iter()
                .flat_map(|p| {
                    let cut = other.range.start.max(p.start)..other.range.end.min(p.end);
                    if cut.is_empty() {
                        vec![p]
                    } else {
                        vec![p.start..cut.start, cut.end..p.end]
                    }
                })
                .filter(|p| !p.is_empty())
                .collect();
        }
        parts
    }

    /// The stretches where two or more speakers speak at once, with who
    /// (in order), in time order; stretches shorter than `min` samples
    /// left out.
    pub fn overlaps(&self, min: usize) -> Vec<(Range<usize>, Vec<usize>)> {
        let mut edges: Vec<(usize, bool, usize)> = Vec::with_capacity(2 * self.turns.len());
        for t in &self.turns {
            edges.push((t.range.start, true, t.speaker));
            edges.push((t.range.end, false, t.speaker));
        }
        // Ends before starts at one instant: touching turns do not overlap.
        edges.sort_by_key(|&(at, start, _)| (at, start));
        let mut speaking = vec![0usize; self.voices.len()];
        let mut out: Vec<(Range<usize>, Vec<usize>)> = Vec::new();
        let mut from = 0;
        for (at, start, who) in edges {
            let now: Vec<usize> = (0..speaking.len()).filter(|&s| speaking[s] > 0).collect();
            if now.len() >= 2 && at > from {
                match out.last_mut() {
                    Some((r, w)) if r.end == from && *w == now => r.end = at,
                    _ => out.push((from..at, now)),
                }
            }
            if who < speaking.len() {
                if start {
                    speaking[who] += 1;
                } else {
                    speaking[who] = speaking[who].saturating_sub(1);
                }
            }
            from = at;
        }
        out.retain(|(r, _)| r.len() >= min);
        out
    }

    /// Samples each speaker speaks.
    pub fn speaking(&self) -> Vec<usize> {
        let mut out = vec![0; self.voices.len()];
        for t in &self.turns {
            out[t.speaker] += t.range.len();
        }
        out
    }
}

struct Window {
    /// Samples the window covers (clipped to its region).
    span: Range<usize>,
    embedding: Embedding,
}

/// How to diarize.
#[derive(Debug, Clone, Copy)]
pub struct DiarizeOptions {
    /// How many speakers there are, when the caller knows.
    pub speakers: Option<usize>,
    /// Clusters less alike than this are different speakers.
    pub threshold: f32,
}

impl Default for DiarizeOptions {
    fn default() -> Self {
        Self {
            speakers: None,
            threshold: THRESHOLD,
        }
    }
}

/// Who speaks when in `audio`.
pub fn diarize(
    vad: &dyn Vad,
    encoder: &SpeakerEncoder,
    audio: &dyn Samples,
    opts: DiarizeOptions,
) -> Result<Diarization, DiarizeError> {
    let total = audio.total();
    let mut probabilities = Vec::with_capacity(total / FRAME + 1);
    let mut at = 0;
    while at < total {
        let piece = audio
            .read(at, BLOCK.min(total - at))
            .map_err(DiarizeError::Read)?;
        if piece.is_empty() {
            break;
        }
        probabilities.extend(vad.probabilities(&piece)?);
        at += piece.len();
    }
    let regions = vad::regions(&probabilities, total, RegionOptions::default());
    let mut windows = Vec::new();
    for region in &regions {
        let samples = audio
            .read(region.start, region.len())
            .map_err(DiarizeError::Read)?;
        let Some(mut samples) = raised(&samples) else {
            continue;
        };
        // A region shorter than a window is repeated to fill one: padding
        // it with silence would leave the encoder's last state mostly
        // silence's.
        if samples.len() < WINDOW * HOP {
            samples = samples.iter().cycle().take(WINDOW * HOP).copied().collect();
        }
        let frames = encoder.frames(&samples);
        let count = frames.len() / crate::encoder::MELS;
        let last = count.saturating_sub(WINDOW);
        let mut starts: Vec<usize> = (0..=last).step_by(STEP).collect();
        if starts.last().is_some_and(|&s| last - s > STEP / 2) {
            starts.push(last);
        }
        let embeddings = encoder.partials(&frames, &starts, WINDOW)?;
        for (s, embedding) in starts.iter().zip(embeddings) {
            let from = region.start + s * HOP;
            let to = (from + WINDOW * HOP).min(region.end);
            windows.push(Window {
                span: from..to,
                embedding,
            });
        }
    }
    if windows.is_empty() {
        return Ok(Diarization::default());
    }
    let pieces = pieces(&regions, &windows);
    let clusters = cluster(&pieces, opts);
    let voices = voices(&pieces, &clusters);
    Ok(label(&regions, &windows, voices))
}

/// A stretch of a region clustered as one: its samples and voice.
struct Piece {
    span: Range<usize>,
    embedding: Embedding,
}

/// Each region cut into equal pieces of at most 3 s, with the mean voice of
/// the windows centred in each (or of the window nearest it).
fn pieces(regions: &[Range<usize>], windows: &[Window]) -> Vec<Piece> {
    let mut out = Vec::new();
    for region in regions {
        let n = region.len().div_ceil(PIECE).max(1);
        for k in 0..n {
            let span =
                region.start + region.len() * k / n..region.start + region.len() * (k + 1) / n;
            // Windows are in time order (their centres too).
            let from = windows.partition_point(|w| centre(w) < span.start);
            let to = windows.partition_point(|w| centre(w) < span.end);
            let inside = windows[from..to].iter().map(|w| &w.embedding);
            let embedding = match Embedding::mean(inside) {
                Some(e) => e,
                None => {
                    // The window centred nearest the piece's middle.
                    let middle = (span.start + span.end) / 2;
                    let near = windows[from.saturating_sub(1)..(from + 1).min(windows.len())]
                        .iter()
                        .min_by_key(|w| centre(w).abs_diff(middle));
                    match near {
                        Some(w) => w.embedding.clone(),
                        None => continue,
                    }
                }
            };
            out.push(Piece { span, embedding });
        }
    }
    out
}

/// Bottom-up clustering of the pieces; each piece's cluster.
fn cluster(pieces: &[Piece], opts: DiarizeOptions) -> Vec<usize> {
    // Groups of pieces (chains of close neighbours when there are many).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let join = pieces.len() > MAX_PIECES
            && groups.last().is_some_and(|g| {
                let prev = &pieces[*g.last().unwrap_or(&0)];
                prev.embedding.similarity(&p.embedding) > 0.9
            });
        match groups.last_mut() {
            Some(g) if join => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    if groups.len() > MAX_PIECES {
        let run = groups.len().div_ceil(MAX_PIECES);
        groups = groups.chunks(run).map(|c| c.concat()).collect();
    }
    let n = groups.len();
    // Average linkage weighted by length. The similarity is a dot product,
    // so the weighted sum over every pair of two groups' pieces is the dot
    // product of their length-weighted sums of embeddings.
    let weight = |i: usize| pieces[i].span.len() as f32 / RATE as f32;
    let weighted: Vec<Embedding> = groups
        .iter()
        .map(|g| {
            let mut v = vec![0f32; pieces[g[0]].embedding.0.len()];
            for &i in g {
                let w = weight(i);
                v.iter_mut()
                    .zip(&pieces[i].embedding.0)
                    .for_each(|(a, b)| *a += w * b);
            }
            Embedding(v)
        })
        .collect();
    let mut sum = vec![0f32; n * n];
    for a in 0..n {
        for b in a + 1..n {
            let s = weighted[a].similarity(&weighted[b]);
            sum[a * n + b] = s;
            sum[b * n + a] = s;
        }
    }
    let mut size: Vec<f32> = groups
        .iter()
        .map(|g| g.iter().map(|&i| weight(i)).sum())
        .collect();
    let mut alive: Vec<bool> = vec![true; n];
    let mut members: Vec<Vec<usize>> = groups;
    let mut count = n;
    let want = opts.speakers.map(|s| s.max(1));
    let merge = |a: usize,
                 b: usize,
                 sum: &mut Vec<f32>,
                 size: &mut Vec<f32>,
                 alive: &mut Vec<bool>,
                 members: &mut Vec<Vec<usize>>| {
        for c in (0..n).filter(|&c| alive[c] && c != a && c != b) {
            let joined = sum[a * n + c] + sum[b * n + c];
            sum[a * n + c] = joined;
            sum[c * n + a] = joined;
        }
        size[a] += size[b];
        alive[b] = false;
        let moved = std::mem::take(&mut members[b]);
        members[a].extend(moved);
    };
    let closest = |of: Option<usize>, sum: &[f32], size: &[f32], alive: &[bool]| {
        let mut best: Option<(f32, usize, usize)> = None;
        for a in (0..n).filter(|&a| alive[a]) {
            for b in (a + 1..n).filter(|&b| alive[b]) {
                if of.is_some_and(|o| o != a && o != b) {
                    continue;
                }
                let avg = sum[a * n + b] / (size[a] * size[b]);
                if best.is_none_or(|(s, _, _)| avg > s) {
                    best = Some((avg, a, b));
                }
            }
        }
        best
    };
    while want.is_none_or(|w| count > w) {
        let Some((s, a, b)) = closest(None, &sum, &size, &alive) else {
            break;
        };
        if want.is_none() && s < opts.threshold {
            break;
        }
        merge(a, b, &mut sum, &mut size, &mut alive, &mut members);
        count -= 1;
    }
    // Clusters of too little speech join their nearest, smallest first.
    let min_speaker = MIN_SPEAKER as f32 / RATE as f32;
    while want.is_none() && count > 1 {
        let Some(small) = (0..n)
            .filter(|&k| alive[k] && size[k] < min_speaker)
            .min_by(|&a, &b| size[a].total_cmp(&size[b]))
        else {
            break;
        };
        let Some((_, a, b)) = closest(Some(small), &sum, &size, &alive) else {
            break;
        };
        let into = if a == small { b } else { a };
        merge(into, small, &mut sum, &mut size, &mut alive, &mut members);
        count -= 1;
    }
    let mut of = vec![0usize; pieces.len()];
    for (k, m) in members.iter().enumerate().filter(|(k, _)| alive[*k]) {
        for &piece in m {
            of[piece] = k;
        }
    }
    of
}

/// Each cluster's voice: the mean of its pieces, in cluster order.
fn voices(pieces: &[Piece], clusters: &[usize]) -> Vec<Embedding> {
    let mut ids: Vec<usize> = clusters.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids.iter()
        .filter_map(|&c| {
            Embedding::mean(
                pieces
                    .iter()
                    .zip(clusters)
                    .filter(|(_, &k)| k == c)
                    .map(|(p, _)| &p.embedding),
            )
        })
        .collect()
}

/// Turns from the speakers' `voices`: every window takes the nearest
/// voice, every tick of speech the speaker of the window centred nearest
/// it; short stretches join their neighbours; speakers are renumbered by
/// first appearance (and a voice no window is nearest is dropped).
fn label(regions: &[Range<usize>], windows: &[Window], voices: Vec<Embedding>) -> Diarization {
    let nearest: Vec<usize> = windows
        .iter()
        .map(|w| {
            (0..voices.len())
                .max_by(|&a, &b| {
                    w.embedding
                        .similarity(&voices[a])
                        .total_cmp(&w.embedding.similarity(&voices[b]))
                })
                .unwrap_or(0)
        })
        .collect();
    let mut turns: Vec<Turn> = Vec::new();
    let mut w = 0;
    for region in regions {
        let mut ticks: Vec<(Range<usize>, usize)> = Vec::new();
        let mut at = region.start;
        while at < region.end {
            let end = (at + TICK).min(region.end);
            let middle = (at + end) / 2;
            // Windows are in time order: move on while the next is nearer.
            while w + 1 < windows.len()
                && centre(&windows[w + 1]).abs_diff(middle) <= centre(&windows[w]).abs_diff(middle)
            {
                w += 1;
            }
            ticks.push((at..end, nearest[w]));
            at = end;
        }
        // Stretches shorter than MIN_TURN ticks join a neighbour, the
        // shortest first.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // first, len, speaker
        for (k, (_, s)) in ticks.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if r.2 == *s => r.1 += 1,
                _ => runs.push((k, 1, *s)),
            }
        }
        while let Some(short) = (0..runs.len())
            .filter(|&k| runs.len() > 1 && runs[k].1 < MIN_TURN)
            .min_by_key(|&k| runs[k].1)
        {
            let into = if short > 0 { short - 1 } else { 1 };
            let len = runs[short].1;
            runs[into].1 += len;
            if into > short {
                runs[into].0 = runs[short].0;
            }
            runs.remove(short);
            // Neighbours of one speaker join.
            let mut k = 0;
            while k + 1 < runs.len() {
                if runs[k].2 == runs[k + 1].2 {
                    runs[k].1 += runs[k + 1].1;
                    runs.remove(k + 1);
                } else {
                    k += 1;
                }
            }
        }
        for (first, len, speaker) in runs {
            let start = ticks[first].0.start;
            let end = ticks[first + len - 1].0.end;
            turns.push(Turn {
                speaker,
                range: start..end,
            });
        }
    }
    // Renumber by first appearance.
    let mut order: Vec<usize> = Vec::new();
    for t in &turns {
        if !order.contains(&t.speaker) {
            order.push(t.speaker);
        }
    }
    for t in &mut turns {
        t.speaker = order.iter().position(|&c| c == t.speaker).unwrap_or(0);
    }
    let voices = order.iter().map(|&c| voices[c].clone()).collect();
    Diarization { turns, voices }
}

fn centre(w: &Window) -> usize {
    (w.span.start + w.span.end) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapping turns: the stretches with two speakers, and a turn less
    /// the others'.
    #[test]
    fn overlaps_and_speech_alone() {
        let turn = |speaker, range| Turn { speaker, range };
        let d = Diarization {
            turns: vec![
                turn(0, 0..100),
                turn(1, 80..150),
                turn(0, 150..200),
                turn(1, 190..195),
            ],
            voices: vec![Embedding(vec![1.0]), Embedding(vec![0.0])],
        };
        assert_eq!(
            d.overlaps(1),
            vec![(80..100, vec![0, 1]), (190..195, vec![0, 1])]
        );
        assert_eq!(d.overlaps(10), vec![(80..100, vec![0, 1])]);
        assert_eq!(d.alone(&d.turns[0]), vec![0..80]);
        assert_eq!(d.alone(&d.turns[2]), vec![150..190, 195..200]);
    }

    /// Piece `k` in `voice` (0 or 1), with a part of its own that varies
    /// from piece to piece: pieces of one voice are 0.8 alike, so close
    /// neighbours are never chained, of two voices at most 0.2.
    fn piece(k: usize, voice: usize) -> Piece {
        let mut e = [0.0f32; 16];
        e[voice] = 2.0;
        e[2 + k % 10] = 1.0;
        let norm = 5f32.sqrt();
        Piece {
            span: k * PIECE..(k + 1) * PIECE,
            embedding: Embedding(e.iter().map(|x| x / norm).collect()),
        }
    }

    #[test]
    fn two_hours_of_turns_cluster_quickly_into_their_voices() {
        // 4800 pieces (two hours): turns of 40 pieces, voices 0 and 1.
        let pieces: Vec<Piece> = (0..4800).map(|k| piece(k, k / 40 % 2)).collect();
        let started = std::time::Instant::now();
        let of = cluster(&pieces, DiarizeOptions::default());
        let took = started.elapsed();
        assert!(took.as_secs() < 20, "{took:?}");
        for (k, &c) in of.iter().enumerate() {
            assert_eq!(c == of[0], k / 40 % 2 == 0, "piece {k}");
        }
    }

    #[test]
    fn a_known_count_is_obeyed() {
        let pieces: Vec<Piece> = (0..30).map(|k| piece(k, k % 3)).collect();
        let of = cluster(
            &pieces,
            DiarizeOptions {
                speakers: Some(2),
                ..DiarizeOptions::default()
            },
        );
        let mut distinct = of.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 2);
    }
}
