//! Times the neural diffusion pipeline on the tiny random-weight models:
//! `cargo run --release --example diffusion_bench -- MODELS [SIZE] [STEPS] [SECONDS]`
//! (MODELS: the models directory holding `onnxruntime/`; `THREADS`, default 2:
//! ONNX Runtime's threads per model).

use std::path::Path;
use std::time::Instant;

use mediagen_generate::diffusion::{tiny, DiffusionModels, Generate, Medium};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let models = Path::new(args.get(1).map_or("models", String::as_str))
        .canonicalize()
        .expect("models dir");
    let size: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(512);
    let steps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20);
    let seconds: f32 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let dir = tempfile::tempdir().expect("temp dir");
    tiny::write_all(dir.path()).expect("tiny models");
    std::os::unix::fs::symlink(models.join("onnxruntime"), dir.path().join("onnxruntime"))
        .expect("link");
    let all = DiffusionModels::new(
        dir.path(),
        std::env::var("THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(2),
    );
    let req = Generate {
        prompt: "a red cat wearing a hat on the beach at sunset",
        negative_prompt: None,
        steps: Some(steps),
        guidance_scale: Some(7.5),
        seed: 1,
    };
    let t = Instant::now();
    let image = all.get(Medium::Image, "tiny-sd").expect("image model");
    println!("tiny-sd loaded in {:.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let (_, timings) = image
        .image(&req, size, size, &mut |_, _| true)
        .expect("image");
    println!(
        "image {size}x{size}, {steps} steps with guidance: {:.3} s; text {:.1} ms, per step {:.2} ms ({} evaluations), decode {:.1} ms",
        t.elapsed().as_secs_f64(),
        timings.text_encoder,
        timings.per_step,
        timings.evaluations_per_step,
        timings.decode
    );
    let sound = all
        .get(Medium::Sound, "tiny-audioldm")
        .expect("sound model");
    let t = Instant::now();
    let samples = (seconds * sound.sample_rate().unwrap_or(16_000) as f32) as usize;
    let (_, timings) = sound.sound(&req, samples, &mut |_, _| true).expect("sound");
    let took = t.elapsed().as_secs_f64();
    println!(
        "sound {seconds} s, {steps} steps with guidance: {took:.3} s ({:.0}x real time); per step {:.2} ms, decode + vocoder {:.1} ms",
        f64::from(seconds) / took,
        timings.per_step,
        timings.decode
    );
}
