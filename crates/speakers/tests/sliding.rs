//! Diarization over sliding windows (segmentation-3.0 and CAM++) on a real
//! recording against its reference turns: the pyannote.audio wheel's 30-s
//! telephone conversation and its RTTM (two speakers, one overlap). A
//! missing model fails.

mod common;
use common::{models_dir, sample};

use std::collections::BTreeSet;

use mediagen_speakers::diarize::{Diarization, DiarizeError};
use mediagen_speakers::sliding::{Networks, SlidingOptions};
use mediagen_speakers::RATE;

/// Who speaks in each 10-ms frame of the reference.
fn reference(frames: usize) -> Vec<BTreeSet<String>> {
    let rttm = std::fs::read_to_string(models_dir().join("diarize/sample.rttm")).unwrap();
    let mut out = vec![BTreeSet::new(); frames];
    for line in rttm.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (start, dur): (f64, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        let (a, b) = (
            (start * 100.0).round() as usize,
            ((start + dur) * 100.0).round() as usize,
        );
        for set in &mut out[a.min(frames)..b.min(frames)] {
            set.insert(f[7].to_owned());
        }
    }
    out
}

fn ours(d: &Diarization, frames: usize) -> Vec<BTreeSet<String>> {
    let mut out = vec![BTreeSet::new(); frames];
    for t in &d.turns {
        let (a, b) = (t.range.start * 100 / RATE, t.range.end * 100 / RATE);
        for set in &mut out[a.min(frames)..b.min(frames)] {
            set.insert(format!("ours{}", t.speaker));
        }
    }
    out
}

/// Frame-level DER (no collar) under the best mapping of two speakers.
fn der(reference: &[BTreeSet<String>], hyp: &[BTreeSet<String>]) -> f64 {
    let names: Vec<String> = reference
        .iter()
        .flatten()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names.len(), 2);
    let mut best = f64::MAX;
    for flip in [false, true] {
        let map = |h: &str| match (h, flip) {
            ("ours0", false) | ("ours1", true) => names[0].clone(),
            ("ours1", false) | ("ours0", true) => names[1].clone(),
            (other, _) => other.to_owned(),
        };
        let (mut total, mut error) = (0usize, 0usize);
        for (r, h) in reference.iter().zip(hyp) {
            let mapped: BTreeSet<String> = h.iter().map(|s| map(s)).collect();
            total += r.len();
            let hit = r.intersection(&mapped).count();
            error += r.len().max(mapped.len()) - hit;
        }
        best = best.min(error as f64 / total as f64);
    }
    best
}

#[test]
fn a_real_conversation_is_diarized_with_its_overlap() {
    let models = models_dir();
    let networks = Networks::load(&models, 2).unwrap();
    let audio = sample();
    let frames = audio.len() * 100 / RATE;
    let mut asked = Vec::new();
    let d = networks
        .diarize(&audio.as_slice(), SlidingOptions::default(), &mut |done| {
            asked.push(done);
            true
        })
        .unwrap();
    assert_eq!(d.voices.len(), 2, "{:?}", d.turns);
    let error = der(&reference(frames), &ours(&d, frames));
    eprintln!("DER {:.1} %", 100.0 * error);
    assert!(error < 0.10, "DER {error}");
    // Some speech is heard as two speakers at once.
    let both = ours(&d, frames).iter().filter(|s| s.len() == 2).count();
    eprintln!("{both} frames of two speakers");
    assert!(both > 0);
    // Asked before each batch and at the end.
    assert!(
        asked.len() >= 3 && asked.windows(2).all(|w| w[0] <= w[1]),
        "{asked:?}"
    );
    assert_eq!(asked.last(), Some(&1.0));

    // The counts asked for bound the speakers: one when one is asked for
    // or the most allowed, two when two are the least allowed even with a
    // threshold that would merge every voice, at most three for three (a
    // cluster no frame is given to has no speech).
    let run = |opts: SlidingOptions| {
        networks
            .diarize(&audio.as_slice(), opts, &mut |_| true)
            .unwrap()
            .voices
            .len()
    };
    let base = SlidingOptions::default();
    assert_eq!(
        run(SlidingOptions {
            speakers: Some(1),
            ..base
        }),
        1
    );
    assert_eq!(
        run(SlidingOptions {
            max_speakers: Some(1),
            ..base
        }),
        1
    );
    let merging = SlidingOptions {
        threshold: -1.0,
        ..base
    };
    assert_eq!(
        run(SlidingOptions {
            min_speakers: Some(2),
            ..merging
        }),
        2
    );
    assert!(
        run(SlidingOptions {
            speakers: Some(3),
            ..base
        }) <= 3
    );

    // A stop before the second batch ends the work.
    let mut calls = 0;
    let stopped = networks.diarize(&audio.as_slice(), SlidingOptions::default(), &mut |_| {
        calls += 1;
        calls < 2
    });
    assert!(matches!(stopped, Err(DiarizeError::Cancelled)));
    assert_eq!(calls, 2);
}
