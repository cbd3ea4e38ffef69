//! The neural diffusion pipeline end to end on tiny random-weight models
//! written by the test (ONNX Runtime from `scripts/models.sh`, which `make
//! test`'s setup runs; its absence fails these tests).

use std::path::PathBuf;

use mediagen_generate::diffusion::{tiny, DiffusionModels, Generate, Medium};

fn models_dir() -> PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")))
}

/// A models directory holding the tiny models and a link to the runtime.
fn tiny_models() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_all(dir.path()).unwrap();
    std::os::unix::fs::symlink(
        models_dir().join("onnxruntime"),
        dir.path().join("onnxruntime"),
    )
    .unwrap();
    dir
}

fn generate(prompt: &str, seed: u64) -> Generate<'_> {
    Generate {
        prompt,
        negative_prompt: None,
        steps: Some(3),
        guidance_scale: None,
        seed,
    }
}

#[test]
fn tiny_image_model_runs_the_whole_pipeline() {
    let dir = tiny_models();
    let models = DiffusionModels::new(dir.path(), 1);
    assert_eq!(models.found(Medium::Image).len(), 1);
    let model = models.get(Medium::Image, "tiny-sd").expect("loads");
    let mut steps_seen = Vec::new();
    let (img, timings) = model
        .image(
            &generate("a red cat on the beach", 7),
            96,
            64,
            &mut |i, n| {
                steps_seen.push((i, n));
                true
            },
        )
        .expect("generates");
    assert_eq!(
        (img.width, img.height, img.rgb.len()),
        (96, 64, 96 * 64 * 3)
    );
    assert_eq!(steps_seen, vec![(1, 3), (2, 3), (3, 3)]);
    // Guidance from mediagen.json (3.0): two evaluations a step.
    assert_eq!((timings.steps, timings.evaluations_per_step), (3, 2));
    assert!(timings.per_step > 0.0);
    // Not a flat picture.
    let distinct: std::collections::BTreeSet<&[u8]> = img.rgb.chunks(3).collect();
    assert!(distinct.len() > 100, "{} colours", distinct.len());

    // Seeded: the same seed gives the same pixels; another seed, another
    // prompt or a negative prompt change them.
    let again = |g: &Generate| model.image(g, 96, 64, &mut |_, _| true).unwrap().0.rgb;
    assert_eq!(again(&generate("a red cat on the beach", 7)), img.rgb);
    assert_ne!(again(&generate("a red cat on the beach", 8)), img.rgb);
    assert_ne!(again(&generate("a blue dog", 7)), img.rgb);
    let mut negative = generate("a red cat on the beach", 7);
    negative.negative_prompt = Some("blue");
    assert_ne!(again(&negative), img.rgb);

    // Cancelling stops the loop.
    let stopped = model.image(&generate("a cat", 1), 64, 64, &mut |i, _| i < 2);
    assert!(stopped.is_err());
    // Sizes off the VAE's grid are refused.
    assert!(model
        .image(&generate("a cat", 1), 60, 64, &mut |_, _| true)
        .is_err());
}

#[test]
fn tiny_sound_model_makes_exact_lengths_at_the_vocoder_rate() {
    let dir = tiny_models();
    let models = DiffusionModels::new(dir.path(), 1);
    let model = models.get(Medium::Sound, "tiny-audioldm").expect("loads");
    assert_eq!(model.sample_rate(), Some(16_000));
    let (audio, timings) = model
        .sound(&generate("heavy rain", 3), 20_000, &mut |_, _| true)
        .expect("generates");
    assert_eq!(audio.sample_rate, 16_000);
    assert_eq!(audio.samples.len(), 20_000);
    assert_eq!(timings.steps, 3);
    let rms = (audio.samples.iter().map(|s| s * s).sum::<f32>() / 20_000.0).sqrt();
    assert!(rms > 0.01, "rms {rms}");
    let again = model
        .sound(&generate("heavy rain", 3), 20_000, &mut |_, _| true)
        .unwrap()
        .0;
    assert_eq!(again.samples, audio.samples);
    let other = model
        .sound(&generate("soft wind", 3), 20_000, &mut |_, _| true)
        .unwrap()
        .0;
    assert_ne!(other.samples, audio.samples);
    // An image model is not a sound model, and unknown names list what exists.
    let err = models.get(Medium::Sound, "nope").err().unwrap().to_string();
    assert!(err.contains("tiny-audioldm"), "{err}");
}
