//! Diarization of real conversations, in the shape pyannote 3.x uses:
//!
//! 1. **Local speakers**: pyannote's segmentation network scores 10-s
//!    windows every [`STEP_FRAMES`] frames (1 s); each frame of a
//!    window is nobody, one of three local speakers, or two of them at
//!    once (its most likely powerset class).
//! 2. **Embeddings**: each local speaker of a window heard for at least
//!    [`MIN_EMBED`] gets a CAM++ embedding of the fbank frames where it
//!    speaks alone (all its frames when too few are clean).
//! 3. **Clustering**: the embeddings (at most [`MAX_CLUSTERED`], evenly
//!    chosen) are clustered bottom-up, centroid linkage on cosine distance,
//!    until no two clusters are nearer than the threshold, or to the
//!    speaker count asked (`speakers`, or within `min`/`max`); clusters
//!    with too little speech join their nearest. Then every local speaker
//!    takes the global speaker whose centroid it is nearest, two local
//!    speakers of one window never the same one.
//! 4. **Reconstruction**: every frame of the file takes, among the global
//!    speakers, as many as the windows covering it hear on average
//!    (rounded), those the windows hear most: overlapped speech keeps its
//!    two speakers.
//!
//! Work is done window batch by window batch (memory holds a batch's audio,
//! the frames' labels and one embedding per local speaker: a few MB an
//! hour), and `go` is asked before each batch (cancel).

use std::ops::Range;

use std::path::Path;

use crate::campplus::{fbank, Campplus, BANDS};
use crate::diarize::{Diarization, DiarizeError, Samples, Turn};
use crate::encoder::{Embedding, SpeakerEncoder};
use crate::segmentation::{Segmenter, CLASSES, WINDOW};
use crate::RATE;

/// The two networks the diarizer runs.
pub struct Networks {
    pub segmenter: Segmenter,
    pub embedder: Campplus,
}

impl Networks {
    /// Both, if their checkpoints and the ONNX Runtime are installed (each
    /// read and built on first use).
    pub fn load(models_dir: &Path, threads: usize) -> Result<Self, String> {
        Ok(Self {
            segmenter: Segmenter::load(models_dir, threads)?,
            embedder: Campplus::load(models_dir, threads)?,
        })
    }
}

/// Most seconds of a speaker's own speech (overlap left out) their GE2E
/// voice is measured on.
const GE2E_SECONDS: usize = 30;

/// `d`'s voices as GE2E hears them (the encoder clones and dubbing voices
/// are judged by): each speaker's embedding from up to 30 s of their turns
/// where nobody else speaks (all their turns when those are silent).
pub fn ge2e_voices(
    d: &Diarization,
    encoder: &SpeakerEncoder,
    audio: &dyn Samples,
) -> Result<Vec<Embedding>, DiarizeError> {
    let mut out = Vec::with_capacity(d.voices.len());
    for speaker in 0..d.voices.len() {
        let mut heard = Vec::new();
        for alone in [true, false] {
            heard.clear();
            let mut turns = d.turns.iter().filter(|t| t.speaker == speaker);
            // Until the speaker's turns run out or 30 s are heard.
            while let Some(t) = turns.next().filter(|_| heard.len() < GE2E_SECONDS * RATE) {
                let parts = if alone {
                    d.alone(t)
                } else {
                    vec![t.range.clone()]
                };
                for r in parts {
                    let room = (GE2E_SECONDS * RATE).saturating_sub(heard.len());
                    if room == 0 {
                        break;
                    }
                    let piece = audio
                        .read(r.start, r.len().min(room))
                        .map_err(DiarizeError::Read)?;
                    heard.extend(piece);
                }
            }
            if heard.len() >= RATE / 2 {
                break;
            }
        }
        let voice = encoder
            .embed(&heard)?
            .unwrap_or_else(|| Embedding(vec![0.0; crate::encoder::graph::WIDTH]));
        out.push(voice);
    }
    Ok(out)
}

/// Samples between the network's frames (16.875 ms) and in each.
const FRAME_STEP: usize = 270;
const FRAME_SPAN: usize = 991;
/// Frames of a window.
const FRAMES: usize = 1 + (WINDOW - FRAME_SPAN) / FRAME_STEP;
/// Windows start every this many frames (1 s, pyannote's step).
/// bench/diarize_real.sh, 16 recordings: 1 s → weighted DER 39.6 %,
/// speaker count right on 9; 1.5 s → 38.7 %, 7, in 61 % of the time (not
/// kept yet: fewer counts right, timed once); 2 s → 40.8 %, 5.
pub const STEP_FRAMES: usize = 59;
/// Windows scored at once.
const BATCH: usize = 8;
/// Local speakers per window.
const LOCAL: usize = 3;
/// A local speaker heard less than this in a window (frames, 0.5 s) is not
/// clustered (too little to tell a voice by), only given the nearest voice.
const MIN_EMBED: usize = 30;
/// One heard less than this (frames, 0.17 s) is not embedded at all.
const MIN_HEARD: usize = 10;
/// Clean frames (alone) wanted for an embedding; else all of its frames.
const MIN_CLEAN: usize = 30;
/// Most fbank frames (10 ms) an embedding reads: a local speaker heard
/// longer is embedded from the frames nearest the window's middle, where
/// the segmentation sees both sides (bench/diarize_real.sh, 16 recordings:
/// 5 s → weighted DER 39.6 %, count right on 9, 20 % less time than the
/// whole window's 40.2 % and 7; 3 s → 39.8 % and 7; 2 s → 45.5 % and 5).
const MAX_EMBEDDED: usize = 500;
/// Most embeddings clustered; the rest are assigned to the clusters.
const MAX_CLUSTERED: usize = 600;
/// A cluster with less speech than this (s) joins its nearest.
const MIN_CLUSTER_SECONDS: f64 = 3.0;
/// Cosine similarity under which two clusters are different speakers
/// (bench/diarize_real.sh, weighted DER over the sample and the AMI
/// excerpts: 0.6 → 42.0 %, 0.7 → 40.1 %, 0.8 → 43.1 % at a 2.5-s step).
pub const THRESHOLD: f32 = 0.7;
/// Turns of one speaker closer than this (frames, 0.1 s) are joined.
const MAX_GAP: usize = 6;

/// The powerset: which local speakers each class holds.
const POWERSET: [&[usize]; CLASSES] = [&[], &[0], &[1], &[2], &[0, 1], &[0, 2], &[1, 2]];

/// How to diarize.
#[derive(Debug, Clone, Copy)]
pub struct SlidingOptions {
    /// Exactly this many speakers, when the caller knows.
    pub speakers: Option<usize>,
    /// At least and at most this many.
    pub min_speakers: Option<usize>,
    pub max_speakers: Option<usize>,
    pub threshold: f32,
}

impl Default for SlidingOptions {
    fn default() -> Self {
        Self {
            speakers: None,
            min_speakers: None,
            max_speakers: None,
            threshold: THRESHOLD,
        }
    }
}

/// One window's frames: for each frame, which local speakers speak
/// (bit `s` for local speaker `s`).
struct Window {
    start: usize,
    active: Vec<u8>,
}

/// One local speaker's embedding.
struct Local {
    window: usize,
    speaker: usize,
    embedding: Embedding,
    frames: usize,
    /// Heard long enough to be clustered.
    clustered: bool,
}

/// The windows' first frames (in the network's frame grid) for `total`
/// samples: every [`STEP_FRAMES`], the last one ending at the end.
fn window_starts(total: usize) -> Vec<usize> {
    let frames = total / FRAME_STEP;
    let last = frames.saturating_sub(FRAMES);
    let mut starts: Vec<usize> = (0..=last).step_by(STEP_FRAMES).collect();
    if starts.last().is_some_and(|&s| s < last) {
        starts.push(last);
    }
    starts
}

impl Networks {
    /// Who speaks when in `audio`; `go(done)` is asked before each batch
    /// of windows with the share done so far, and stops the work when
    /// false (as the job's cancel does).
    pub fn diarize(
        &self,
        audio: &dyn Samples,
        opts: SlidingOptions,
        go: &mut dyn FnMut(f64) -> bool,
    ) -> Result<Diarization, DiarizeError> {
        let (segmenter, embedder) = (&self.segmenter, &self.embedder);
        let total = audio.total();
        let starts = window_starts(total);
        let mut windows = Vec::with_capacity(starts.len());
        let mut locals = Vec::new();
        for (b, batch) in starts.chunks(BATCH).enumerate() {
            if mediagen_media::process::cancelled_here()
                || !go((b * BATCH) as f64 / starts.len() as f64)
            {
                return Err(DiarizeError::Cancelled);
            }
            let mut samples = Vec::with_capacity(batch.len());
            for &f in batch {
                let mut s = audio
                    .read(f * FRAME_STEP, WINDOW)
                    .map_err(DiarizeError::Read)?;
                s.resize(WINDOW, 0.0);
                samples.push(s);
            }
            let views: Vec<&[f32]> = samples.iter().map(Vec::as_slice).collect();
            let scores = segmenter.scores(&views).map_err(DiarizeError::Model)?;
            for ((&f, s), window_audio) in batch.iter().zip(scores).zip(&samples) {
                let active: Vec<u8> = s
                    .chunks_exact(CLASSES)
                    .take(FRAMES)
                    .map(|row| {
                        let class = (0..CLASSES)
                            .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                            .unwrap_or(0);
                        POWERSET[class].iter().fold(0u8, |m, &k| m | 1 << k)
                    })
                    .collect();
                let index = windows.len();
                locals.extend(embed_locals(embedder, window_audio, &active, index)?);
                windows.push(Window { start: f, active });
            }
        }
        if !go(1.0) {
            return Err(DiarizeError::Cancelled);
        }
        if locals.is_empty() {
            return Ok(Diarization::default());
        }
        let (assignment, voices) = cluster(&locals, windows.len(), opts);
        Ok(reconstruct(&windows, &assignment, voices, total))
    }
}

/// The embeddings of a window's local speakers heard long enough.
fn embed_locals(
    embedder: &Campplus,
    audio: &[f32],
    active: &[u8],
    window: usize,
) -> Result<Vec<Local>, DiarizeError> {
    let mel = fbank::log_mel(audio);
    let mel_frames = mel.len() / BANDS;
    // The network's frame nearest each fbank frame's middle.
    let frame_of = |m: usize| {
        let middle = m * fbank::SHIFT + fbank::FRAME / 2;
        (middle.saturating_sub(FRAME_SPAN / 2) / FRAME_STEP).min(FRAMES - 1)
    };
    let mut out = Vec::new();
    for s in 0..LOCAL {
        let bit = 1u8 << s;
        let heard = active.iter().filter(|&&a| a & bit != 0).count();
        if heard < MIN_HEARD {
            continue;
        }
        let clean = active.iter().filter(|&&a| a == bit).count();
        let wanted = |a: u8| {
            if clean >= MIN_CLEAN {
                a == bit
            } else {
                a & bit != 0
            }
        };
        let mut chosen: Vec<usize> = (0..mel_frames)
            .filter(|&m| wanted(active[frame_of(m)]))
            .collect();
        if chosen.len() > MAX_EMBEDDED {
            let middle = mel_frames / 2;
            chosen.sort_by_key(|&m| m.abs_diff(middle));
            chosen.truncate(MAX_EMBEDDED);
            chosen.sort_unstable();
        }
        let mut feats = Vec::new();
        for m in chosen {
            feats.extend_from_slice(&mel[m * BANDS..(m + 1) * BANDS]);
        }
        if feats.len() < 2 * BANDS {
            continue;
        }
        fbank::subtract_mean(&mut feats);
        let e = embedder
            .embed_features(&feats)
            .map_err(DiarizeError::Model)?;
        out.push(Local {
            window,
            speaker: s,
            embedding: normalised(e),
            frames: heard,
            clustered: heard >= MIN_EMBED,
        });
    }
    Ok(out)
}

fn normalised(mut v: Vec<f32>) -> Embedding {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    for x in &mut v {
        *x /= norm;
    }
    Embedding(v)
}

/// The global speaker of each window's local speakers
/// (`[window][local]`, `None`: not a speaker), and each speaker's voice.
fn cluster(
    locals: &[Local],
    windows: usize,
    opts: SlidingOptions,
) -> (Vec<[Option<usize>; LOCAL]>, Vec<Embedding>) {
    // Those heard long enough, evenly chosen when too many (or all, when
    // none is).
    let mut long: Vec<usize> = (0..locals.len()).filter(|&i| locals[i].clustered).collect();
    if long.is_empty() {
        long = (0..locals.len()).collect();
    }
    let n = long.len();
    let chosen: Vec<usize> = if n > MAX_CLUSTERED {
        (0..MAX_CLUSTERED)
            .map(|k| long[k * n / MAX_CLUSTERED])
            .collect()
    } else {
        long
    };
    let mut clusters: Vec<Cluster> = chosen
        .iter()
        .map(|&i| Cluster {
            sum: locals[i].embedding.0.clone(),
            frames: locals[i].frames,
        })
        .collect();
    let (low, high) = match opts.speakers {
        Some(k) => (k.max(1), k.max(1)),
        None => (
            opts.min_speakers.unwrap_or(1).max(1),
            opts.max_speakers.unwrap_or(usize::MAX).max(1),
        ),
    };
    // First by likeness, never below the fewest asked for.
    merge(&mut clusters, |best, count| {
        count > low && best >= opts.threshold
    });
    // Clusters with too little speech join their nearest, while more than
    // `low` remain.
    let min_frames = (MIN_CLUSTER_SECONDS * RATE as f64 / FRAME_STEP as f64) as usize;
    loop {
        if clusters.len() <= low {
            break;
        }
        let Some(small) = (0..clusters.len())
            .filter(|&c| clusters[c].frames < min_frames)
            .min_by_key(|&c| clusters[c].frames)
        else {
            break;
        };
        let near = (0..clusters.len())
            .filter(|&c| c != small)
            .max_by(|&a, &b| {
                clusters[small]
                    .similarity(&clusters[a])
                    .total_cmp(&clusters[small].similarity(&clusters[b]))
            })
            .expect("another cluster");
        let gone = clusters.swap_remove(small);
        let near = if near == clusters.len() { small } else { near };
        clusters[near].absorb(&gone);
    }
    // Then, past the most allowed, the nearest are merged (after the small
    // ones went: forcing the count first would leave an outlier as a
    // speaker, then fold it away).
    merge(&mut clusters, |_, count| count > high);
    let voices: Vec<Embedding> = clusters.iter().map(Cluster::centroid).collect();
    // Every local speaker to its nearest voice, one voice per window's
    // local speakers (the best of the permutations).
    let mut out = vec![[None; LOCAL]; windows];
    let mut i = 0;
    while i < locals.len() {
        let j = locals[i..]
            .iter()
            .position(|l| l.window != locals[i].window)
            .map_or(locals.len(), |p| i + p);
        let group = &locals[i..j];
        for (local, speaker) in group.iter().zip(assign(group, &voices)) {
            out[local.window][local.speaker] = Some(speaker);
        }
        i = j;
    }
    (out, voices)
}

/// The voices of `group` (one window's local speakers): distinct, with the
/// greatest summed similarity.
fn assign(group: &[Local], voices: &[Embedding]) -> Vec<usize> {
    let sim: Vec<Vec<f32>> = group
        .iter()
        .map(|l| voices.iter().map(|v| l.embedding.similarity(v)).collect())
        .collect();
    let k = voices.len();
    let mut best = (f32::NEG_INFINITY, Vec::new());
    let mut pick = vec![0usize; group.len()];
    // At most three local speakers: every choice is tried.
    fn walk(
        at: usize,
        pick: &mut Vec<usize>,
        sim: &[Vec<f32>],
        k: usize,
        best: &mut (f32, Vec<usize>),
    ) {
        if at == pick.len() {
            // Distinct where there are enough voices.
            let distinct = (0..pick.len()).all(|a| (0..a).all(|b| pick[a] != pick[b]));
            if distinct || k < pick.len() {
                let score = pick.iter().enumerate().map(|(i, &v)| sim[i][v]).sum();
                if score > best.0 {
                    *best = (score, pick.clone());
                }
            }
            return;
        }
        for v in 0..k {
            pick[at] = v;
            walk(at + 1, pick, sim, k, best);
        }
    }
    walk(0, &mut pick, &sim, k, &mut best);
    best.1
}

struct Cluster {
    sum: Vec<f32>,
    frames: usize,
}

impl Cluster {
    fn centroid(&self) -> Embedding {
        normalised(self.sum.clone())
    }

    fn similarity(&self, other: &Cluster) -> f32 {
        self.centroid().similarity(&other.centroid())
    }

    fn absorb(&mut self, other: &Cluster) {
        for (a, b) in self.sum.iter_mut().zip(&other.sum) {
            *a += b;
        }
        self.frames += other.frames;
    }
}

/// Merges the two most alike clusters while `more(best similarity,
/// clusters)` says so (centroid linkage: a merged cluster's centroid is
/// the mean of all its members).
fn merge(clusters: &mut Vec<Cluster>, more: impl Fn(f32, usize) -> bool) {
    let n = clusters.len();
    if n < 2 {
        return;
    }
    let centroids: Vec<Embedding> = clusters.iter().map(Cluster::centroid).collect();
    let mut alive = vec![true; n];
    // The similarities of every two clusters (at most 600² of them), kept
    // up to date: a merge recomputes one row, and a cluster's most alike
    // other is found from its row, not from the embeddings.
    let mut sim = vec![f32::NEG_INFINITY; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let s = centroids[i].similarity(&centroids[j]);
            sim[i * n + j] = s;
            sim[j * n + i] = s;
        }
    }
    let nearest = |i: usize, sim: &[f32], alive: &[bool]| -> (usize, f32) {
        (0..n)
            .filter(|&j| j != i && alive[j])
            .map(|j| (j, sim[i * n + j]))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((i, f32::NEG_INFINITY))
    };
    let mut near: Vec<(usize, f32)> = (0..n).map(|i| nearest(i, &sim, &alive)).collect();
    let mut count = n;
    while count > 1 {
        let (a, &(b, best)) = near
            .iter()
            .enumerate()
            .filter(|(i, _)| alive[*i])
            .max_by(|x, y| x.1 .1.total_cmp(&y.1 .1))
            .expect("a live cluster");
        if !more(best, count) {
            break;
        }
        let taken = std::mem::replace(
            &mut clusters[b],
            Cluster {
                sum: Vec::new(),
                frames: 0,
            },
        );
        clusters[a].absorb(&taken);
        alive[b] = false;
        count -= 1;
        let merged = clusters[a].centroid();
        for j in (0..n).filter(|&j| j != a && alive[j]) {
            let s = merged.similarity(&clusters[j].centroid());
            sim[a * n + j] = s;
            sim[j * n + a] = s;
        }
        for i in (0..n).filter(|&i| alive[i]) {
            if i == a || near[i].0 == a || near[i].0 == b {
                near[i] = nearest(i, &sim, &alive);
            } else if sim[i * n + a] > near[i].1 {
                near[i] = (a, sim[i * n + a]);
            }
        }
    }
    let mut k = 0;
    clusters.retain(|_| {
        k += 1;
        alive[k - 1]
    });
}

/// Every frame's speakers from the windows', as turns in samples.
fn reconstruct(
    windows: &[Window],
    assignment: &[[Option<usize>; LOCAL]],
    voices: Vec<Embedding>,
    total: usize,
) -> Diarization {
    let frames = total.div_ceil(FRAME_STEP).max(1);
    let speakers = voices.len();
    // Per frame: windows covering it, summed speaker counts, and per
    // speaker how many windows hear them.
    let mut covered = vec![0u16; frames];
    let mut count = vec![0u16; frames];
    let mut heard = vec![0u16; frames * speakers];
    for (w, window) in windows.iter().enumerate() {
        for (k, &a) in window.active.iter().enumerate() {
            let f = window.start + k;
            if f >= frames {
                break;
            }
            covered[f] += 1;
            count[f] += a.count_ones() as u16;
            for (s, speaker) in assignment[w].iter().enumerate() {
                if let Some(g) = speaker.filter(|_| a & (1 << s) != 0) {
                    heard[f * speakers + g] += 1;
                }
            }
        }
    }
    let mut on = vec![vec![false; frames]; speakers];
    for f in 0..frames {
        if covered[f] == 0 {
            continue;
        }
        let n = (count[f] as f32 / covered[f] as f32).round() as usize;
        let row = &heard[f * speakers..(f + 1) * speakers];
        let mut order: Vec<usize> = (0..speakers).filter(|&g| row[g] > 0).collect();
        order.sort_by_key(|&g| std::cmp::Reverse(row[g]));
        for &g in order.iter().take(n) {
            on[g][f] = true;
        }
    }
    let mut turns = Vec::new();
    for (g, frames_on) in on.iter().enumerate() {
        for r in runs(frames_on) {
            let from = r.start * FRAME_STEP + FRAME_SPAN / 2 - FRAME_STEP / 2;
            let to = (r.end * FRAME_STEP + FRAME_SPAN / 2 - FRAME_STEP / 2).min(total);
            if from < to {
                turns.push(Turn {
                    speaker: g,
                    range: from..to,
                });
            }
        }
    }
    // Speakers numbered by their first turn; those never heard dropped.
    turns.sort_by_key(|t| (t.range.start, t.speaker));
    let mut order: Vec<usize> = Vec::new();
    for t in &turns {
        if !order.contains(&t.speaker) {
            order.push(t.speaker);
        }
    }
    for t in &mut turns {
        t.speaker = order.iter().position(|&s| s == t.speaker).expect("seen");
    }
    let voices = order.iter().map(|&s| voices[s].clone()).collect();
    Diarization { turns, voices }
}

/// The runs of `true` in `on`, gaps of up to [`MAX_GAP`] bridged.
fn runs(on: &[bool]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut f = 0;
    while f < on.len() {
        if !on[f] {
            f += 1;
            continue;
        }
        let start = f;
        while f < on.len() && on[f] {
            f += 1;
        }
        match out.last_mut() {
            Some(last) if start - last.end <= MAX_GAP => last.end = f,
            _ => out.push(start..f),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 600 near-identical voices (one speaker all hour long, the worst
    /// case: every merge changes the cluster all others are nearest)
    /// merge into one in bounded time; two apart stay two.
    #[test]
    fn clustering_is_bounded_and_keeps_voices_apart() {
        let voice = |k: usize, base: usize| {
            let mut v = vec![0.0f32; 192];
            v[base] = 1.0;
            v[(k * 7 + 3) % 192] += 0.05;
            v[(k * 13 + 5) % 192] += 0.05;
            normalised(v)
        };
        let locals: Vec<Local> = (0..3 * MAX_CLUSTERED)
            .map(|k| Local {
                window: k / 2,
                speaker: k % 2,
                embedding: voice(k, if k % 2 == 0 { 0 } else { 1 }),
                frames: 100,
                clustered: true,
            })
            .collect();
        let started = std::time::Instant::now();
        let (assignment, voices) =
            cluster(&locals, 3 * MAX_CLUSTERED / 2, SlidingOptions::default());
        let took = started.elapsed();
        eprintln!("{} local speakers clustered in {took:?}", locals.len());
        assert_eq!(voices.len(), 2);
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        // (112 ms in a debug build.) Each window's two local speakers are
        // the two voices.
        assert!(assignment.iter().all(|w| w[0].is_some() && w[0] != w[1]));
        let one = SlidingOptions {
            max_speakers: Some(1),
            ..SlidingOptions::default()
        };
        assert_eq!(cluster(&locals, 3 * MAX_CLUSTERED / 2, one).1.len(), 1);
    }
}
