//! Times the embedded sound engine alone (no HTTP, no encoding):
//! `cargo run --release --example sound_bench -- "prompt" [seconds]`.

use std::time::Instant;

use mediagen_generate::sound::{plan, render};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let prompt = args.get(1).map_or("heavy rain", String::as_str);
    let seconds: f32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30.0);
    let plan = plan(prompt).expect("a prompt the engine understands");
    let t = Instant::now();
    let audio = render(&plan, seconds, 1, false, 44_100);
    let took = t.elapsed().as_secs_f64();
    println!(
        "{prompt:?}: {} samples in {took:.3} s, {:.0}x real time",
        audio.samples.len(),
        f64::from(seconds) / took
    );
}
