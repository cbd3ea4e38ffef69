//! Peak memory of voice conversion on a long recording, whole in memory
//! against window by window from a file:
//!
//! ```sh
//! cargo build --release --example convert_memory -p mediagen-engines
//! /usr/bin/time -f '%M KB %e s' target/release/examples/convert_memory whole 600
//! /usr/bin/time -f '%M KB %e s' target/release/examples/convert_memory file 600
//! ```
//!
//! The recording is a voiced buzz with pauses (speech-like for the
//! vocoder); the target voice is measured on a higher buzz.

use mediagen_media::pcm::PcmFile;
use mediagen_speech::voice::{analyse, VoiceConverter, WorldConverter, RATE};

fn buzz(f0: f64, formant: f64, seconds: f64) -> Vec<f32> {
    let n = (seconds * f64::from(RATE)) as usize;
    (0..n)
        .map(|i| {
            let t = i as f64 / f64::from(RATE);
            // Two seconds of sound, half a second of pause.
            if t % 2.5 > 2.0 {
                return 0.0;
            }
            let f = f0 * (1.0 + 0.08 * (t * 2.0).sin());
            let mut s = 0.0;
            for h in 1..30 {
                let hz = f * h as f64;
                let gain = 1.0 / (1.0 + ((hz - formant) / 300.0).powi(2));
                s += gain * (std::f64::consts::TAU * hz * t).sin();
            }
            (0.1 * s) as f32
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("file");
    let seconds: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(600.0);
    let target = analyse(&[buzz(200.0, 800.0, 5.0)]).expect("a target");
    let dir = tempfile::tempdir().expect("scratch");
    // The input is written to a file first either way (as a decode would).
    let mut input = PcmFile::create(&dir.path().join("in.f32"), RATE).expect("file");
    let step = 60.0f64;
    let mut done = 0.0;
    while done < seconds {
        input
            .append(&buzz(110.0, 600.0, step.min(seconds - done)))
            .expect("write");
        done += step;
    }
    let started = std::time::Instant::now();
    let (before, after, samples) = match mode {
        "whole" => {
            let x = input.read_at(0, input.len()).expect("read");
            let c = WorldConverter.convert(&x, &target);
            (c.pitch_before, c.pitch_after, c.samples.len())
        }
        _ => {
            let mut out = PcmFile::create(&dir.path().join("out.f32"), RATE).expect("file");
            let (b, a) = WorldConverter
                .convert_file(&input, &target, &mut out, &|| false)
                .expect("convert");
            (b, a, out.len())
        }
    };
    println!(
        "{mode}: {seconds} s in {:.1} s, pitch {before:.1} -> {after:.1} Hz, {samples} samples",
        started.elapsed().as_secs_f64()
    );
}
