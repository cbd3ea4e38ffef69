//! Spectral clustering of speaker embeddings, in the form 3D-Speaker and
//! SpeechBrain use for diarization: the cosine affinity of every two
//! embeddings, each row pruned to its nearest neighbours, the unnormalised
//! Laplacian's smallest eigenvectors as coordinates, the number of speakers
//! where its eigenvalues jump most (or as asked), k-means there; then
//! clusters of too few members join the nearest larger one, and clusters
//! whose centroids are nearly the same voice are merged.

use nalgebra::{DMatrix, SymmetricEigen};

use crate::encoder::normalised as unit;
use crate::encoder::Embedding;

/// How to cluster.
#[derive(Debug, Clone, Copy)]
pub struct Spectral {
    /// Exactly this many clusters, when known.
    pub speakers: Option<usize>,
    /// The eigengap is looked for between these (inclusive).
    pub min_speakers: usize,
    pub max_speakers: usize,
    /// The share of a row's affinities kept (at least [`MIN_NEIGHBOURS`]).
    pub keep: f64,
    /// A cluster with fewer members than this joins its nearest.
    pub min_members: usize,
    /// Clusters whose centroids are at least this alike (cosine) merge.
    pub merge_above: f32,
}

/// Affinities a row keeps at the least.
pub const MIN_NEIGHBOURS: usize = 6;

impl Default for Spectral {
    fn default() -> Self {
        Self {
            speakers: None,
            min_speakers: 1,
            max_speakers: 15,
            keep: 0.012,
            min_members: 3,
            merge_above: 0.8,
        }
    }
}

/// The cluster of each of `x` (unit vectors), numbered from 0.
pub fn cluster(x: &[Embedding], opts: &Spectral) -> Vec<usize> {
    let n = x.len();
    if n <= 1 {
        return vec![0; n];
    }
    let mut a = DMatrix::<f64>::zeros(n, n);
    for i in 0..n {
        for j in 0..n {
            a[(i, j)] = x[i].similarity(&x[j]) as f64;
        }
    }
    // Each row keeps only its largest affinities.
    let keep = ((opts.keep * n as f64).ceil() as usize)
        .max(MIN_NEIGHBOURS)
        .min(n);
    let mut pruned = DMatrix::<f64>::zeros(n, n);
    for i in 0..n {
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&p, &q| a[(i, q)].total_cmp(&a[(i, p)]));
        for &j in &order[..keep] {
            pruned[(i, j)] = a[(i, j)];
        }
    }
    let mut m = (&pruned + pruned.transpose()) * 0.5;
    for i in 0..n {
        m[(i, i)] = 0.0;
    }
    let mut laplacian = -m.clone();
    for i in 0..n {
        laplacian[(i, i)] = m.row(i).iter().map(|v| v.abs()).sum::<f64>();
    }
    let eig = SymmetricEigen::new(laplacian);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&p, &q| eig.eigenvalues[p].total_cmp(&eig.eigenvalues[q]));
    let low = opts.min_speakers.clamp(1, n);
    let high = opts.max_speakers.clamp(low, n);
    let k = match opts.speakers {
        Some(k) => k.clamp(1, n),
        None => {
            // The largest gap between successive eigenvalues from the
            // `low`-th: `k` clusters where it follows the k-th.
            let lambda = |i: usize| eig.eigenvalues[order[i]];
            (low..high.min(n - 1) + 1)
                .max_by(|&p, &q| {
                    (lambda(p) - lambda(p - 1)).total_cmp(&(lambda(q) - lambda(q - 1)))
                })
                .unwrap_or(low)
        }
    };
    let points: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            order[..k]
                .iter()
                .map(|&c| eig.eigenvectors[(i, c)])
                .collect()
        })
        .collect();
    let mut labels = kmeans(&points, k);
    if opts.speakers.is_none() {
        join_small(x, &mut labels, opts.min_members, low);
        merge_alike(x, &mut labels, opts.merge_above, low);
    }
    renumber(&mut labels);
    labels
}

/// Lloyd's k-means from farthest-point seeds (deterministic).
fn kmeans(points: &[Vec<f64>], k: usize) -> Vec<usize> {
    let d2 = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>();
    let dim = points[0].len();
    let mean: Vec<f64> = (0..dim)
        .map(|c| points.iter().map(|p| p[c]).sum::<f64>() / points.len() as f64)
        .collect();
    let first = (0..points.len())
        .max_by(|&a, &b| d2(&points[a], &mean).total_cmp(&d2(&points[b], &mean)))
        .unwrap_or(0);
    let mut centres = vec![points[first].clone()];
    while centres.len() < k {
        let next = (0..points.len())
            .max_by(|&a, &b| {
                let near = |p: usize| {
                    centres
                        .iter()
                        .map(|c| d2(&points[p], c))
                        .fold(f64::INFINITY, f64::min)
                };
                near(a).total_cmp(&near(b))
            })
            .unwrap_or(0);
        centres.push(points[next].clone());
    }
    let mut labels = vec![usize::MAX; points.len()];
    for _ in 0..100 {
        let mut changed = false;
        for (p, l) in points.iter().zip(labels.iter_mut()) {
            let best = (0..k)
                .min_by(|&a, &b| d2(p, &centres[a]).total_cmp(&d2(p, &centres[b])))
                .unwrap_or(0);
            changed |= *l != best;
            *l = best;
        }
        if !changed {
            break;
        }
        for (c, centre) in centres.iter_mut().enumerate() {
            let members: Vec<&Vec<f64>> = points
                .iter()
                .zip(&labels)
                .filter(|(_, &l)| l == c)
                .map(|(p, _)| p)
                .collect();
            if members.is_empty() {
                continue;
            }
            for (d, v) in centre.iter_mut().enumerate() {
                *v = members.iter().map(|m| m[d]).sum::<f64>() / members.len() as f64;
            }
        }
    }
    labels
}

/// The normalised mean of the members of each label (`None`: no member).
fn centroids(x: &[Embedding], labels: &[usize]) -> Vec<Option<Embedding>> {
    let k = labels.iter().max().map_or(0, |m| m + 1);
    let mut sums = vec![vec![0f32; x.first().map_or(0, |e| e.0.len())]; k];
    let mut counts = vec![0usize; k];
    for (e, &l) in x.iter().zip(labels) {
        counts[l] += 1;
        for (s, v) in sums[l].iter_mut().zip(&e.0) {
            *s += v;
        }
    }
    sums.into_iter()
        .zip(counts)
        .map(|(s, c)| (c > 0).then(|| unit(s)))
        .collect()
}

/// Members of clusters under `min` join the nearest cluster of at least
/// `min`, the `low` largest kept whatever their size.
fn join_small(x: &[Embedding], labels: &mut [usize], min: usize, low: usize) {
    let k = labels.iter().max().map_or(0, |m| m + 1);
    let size = |c: usize| labels.iter().filter(|&&l| l == c).count();
    let mut by_size: Vec<usize> = (0..k).filter(|&c| size(c) > 0).collect();
    by_size.sort_by_key(|&c| std::cmp::Reverse(size(c)));
    let major: Vec<usize> = by_size
        .iter()
        .enumerate()
        .filter(|&(i, &c)| i < low || size(c) >= min)
        .map(|(_, &c)| c)
        .collect();
    let centres = centroids(x, labels);
    for (e, l) in x.iter().zip(labels.iter_mut()) {
        if !major.contains(l) {
            *l = *major
                .iter()
                .max_by(|&&a, &&b| {
                    let sim = |c: usize| centres[c].as_ref().map_or(-1.0, |m| e.similarity(m));
                    sim(a).total_cmp(&sim(b))
                })
                .expect("a major cluster");
        }
    }
}

/// The two clusters whose centroids are most alike merge while at least
/// `above` alike and more than `low` remain.
fn merge_alike(x: &[Embedding], labels: &mut [usize], above: f32, low: usize) {
    loop {
        let centres = centroids(x, labels);
        let live: Vec<usize> = (0..centres.len())
            .filter(|&c| centres[c].is_some())
            .collect();
        if live.len() <= low {
            return;
        }
        let mut best = (f32::NEG_INFINITY, 0, 0);
        for (i, &a) in live.iter().enumerate() {
            for &b in &live[i + 1..] {
                let s = centres[a]
                    .as_ref()
                    .zip(centres[b].as_ref())
                    .map_or(-1.0, |(p, q)| p.similarity(q));
                if s > best.0 {
                    best = (s, a, b);
                }
            }
        }
        if best.0 < above {
            return;
        }
        for l in labels.iter_mut() {
            if *l == best.2 {
                *l = best.1;
            }
        }
    }
}

/// Labels as 0, 1, … in order of first appearance.
fn renumber(labels: &mut [usize]) {
    let mut seen: Vec<usize> = Vec::new();
    for l in labels.iter_mut() {
        let i = seen.iter().position(|s| s == l).unwrap_or_else(|| {
            seen.push(*l);
            seen.len() - 1
        });
        *l = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three voices of noisy embeddings come apart as three clusters, a
    /// count asked for is kept, and one voice stays one.
    #[test]
    fn spectral_clustering_finds_the_voices() {
        let voice = |k: usize, v: usize| {
            let mut e = vec![0.0f32; 16];
            e[v] = 1.0;
            e[(k * 7 + 3) % 16] += 0.3;
            e[(k * 5 + 1) % 16] += 0.2;
            unit(e)
        };
        let x: Vec<Embedding> = (0..60).map(|k| voice(k, k % 3)).collect();
        let labels = cluster(&x, &Spectral::default());
        for k in 0..60 {
            assert_eq!(labels[k], labels[k % 3], "{labels:?}");
        }
        assert_ne!(labels[0], labels[1]);
        assert_ne!(labels[1], labels[2]);
        assert_ne!(labels[0], labels[2]);
        let two = Spectral {
            speakers: Some(2),
            ..Spectral::default()
        };
        assert_eq!(cluster(&x, &two).iter().max(), Some(&1));
        let one: Vec<Embedding> = (0..30).map(|k| voice(k, 4)).collect();
        assert!(cluster(&one, &Spectral::default()).iter().all(|&l| l == 0));
    }
}
