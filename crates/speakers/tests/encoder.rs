//! The speaker encoder against Resemblyzer's own output
//! (tests/data/ge2e_reference.json, made by ge2e_reference.py beside it),
//! on the models `scripts/models.sh` installs. A missing model fails.

use std::path::PathBuf;

use mediagen_speakers::encoder::{torch, SpeakerEncoder, MODEL};

fn models_dir() -> PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")))
}

/// The reference script's signal: harmonics of `f0` shaped by formants
/// `f1`, `f2`, at a syllable rate of 3 Hz, 3 s, peak 0.3.
fn signal(f0: f64, f1: f64, f2: f64) -> Vec<f32> {
    let rate = 16_000.0;
    let n = 48_000;
    let mut x = vec![0f64; n];
    let mut k = 1.0;
    while k * f0 < 7000.0 {
        let f = k * f0;
        let a = (-((f - f1) / 300.0f64).powi(2)).exp()
            + 0.6 * (-((f - f2) / 400.0f64).powi(2)).exp()
            + 0.1 / k;
        for (i, v) in x.iter_mut().enumerate() {
            *v += a * (std::f64::consts::TAU * f * i as f64 / rate).sin();
        }
        k += 1.0;
    }
    for (i, v) in x.iter_mut().enumerate() {
        *v *= 0.55 + 0.45 * (std::f64::consts::TAU * 3.0 * i as f64 / rate).sin();
    }
    let peak = x.iter().fold(0f64, |m, v| m.max(v.abs()));
    x.iter().map(|v| (0.3 * v / peak) as f32).collect()
}

#[test]
fn the_pytorch_file_reads_as_resemblyzers_state_dict() {
    let bytes = std::fs::read(models_dir().join(MODEL)).expect("run scripts/models.sh");
    let w = torch::state_dict(&bytes, "model_state").unwrap();
    assert_eq!(w["lstm.weight_ih_l0"].shape, [1024, 40]);
    assert_eq!(w["lstm.weight_hh_l2"].shape, [1024, 256]);
    assert_eq!(w["linear.weight"].shape, [256, 256]);
    assert_eq!(w["linear.bias"].data.len(), 256);
    assert!(w.contains_key("similarity_weight"));
    // Anything but a state dict is refused, not run.
    assert!(torch::state_dict(&bytes[..4000], "model_state").is_err());
    assert!(torch::state_dict(&bytes, "optimizer").is_err());
}

#[test]
fn embeddings_match_resemblyzers() {
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("data/ge2e_reference.json")).unwrap();
    let encoder = SpeakerEncoder::load(&models_dir(), 1).expect("run scripts/models.sh");
    let mut ours = Vec::new();
    for s in reference["signals"].as_array().unwrap() {
        let f = |k: &str| s[k].as_f64().unwrap();
        let audio = signal(f("f0"), f("f1"), f("f2"));
        let e = encoder.embed(&audio).unwrap().expect("not silent");
        let want: Vec<f32> = s["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let worst =
            e.0.iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
        let cosine: f32 = e.0.iter().zip(&want).map(|(a, b)| a * b).sum();
        assert!(
            cosine > 0.9999 && worst < 2e-3,
            "f0 {}: cosine {cosine}, worst {worst}",
            f("f0")
        );
        ours.push(e);
    }
    // Different "voices" are told apart, each is itself.
    assert!((ours[0].similarity(&ours[0]) - 1.0).abs() < 1e-5);
    assert!(ours[0].similarity(&ours[1]) < 0.95);
}
