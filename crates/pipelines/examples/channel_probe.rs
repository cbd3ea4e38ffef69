//! The recording's channel, measured (issue 49; docs/voice.md): how much
//! of a voice's likeness to a reader's held-out utterances the reader's
//! room (reverberation) and background (their samples' quietest frames)
//! would add if a voice were given them. The three most alike English stock
//! voices each say the clone bench's ten sentences, joined as the bench
//! joins them, and are heard dry and through each channel.
//!
//! ```text
//! channel_probe MODELS SPEAKER_DIR...
//! ```
mod common;
use common::{reader, BENCH_SENTENCES};
use std::path::{Path, PathBuf};

use mediagen_core::voice::STYLED_ENGINE;
use mediagen_generate::sound::dsp::rms;
use mediagen_media::audio::resample;
use mediagen_speakers::encoder::Embedding;
use mediagen_speech::clone::join;
use mediagen_speech::stt::SttCatalog;
use mediagen_speech::tts::TtsCatalog;

const RATE: f32 = 16_000.0;
/// 20-ms frames at 16 kHz.
const FRAME: usize = 320;

/// A feedback comb (`y[i] = x[i] + g·y[i - delay]`) or, with `all_pass`,
/// Schroeder's all-pass, over `x` in place.
fn filter(x: &mut [f32], delay: usize, g: f32, all_pass: bool) {
    let input = x.to_vec();
    for i in delay..x.len() {
        x[i] = if all_pass {
            -g * input[i] + input[i - delay] + g * x[i - delay]
        } else {
            input[i] + g * x[i - delay]
        };
    }
}

/// Schroeder's reverberator: four combs in parallel, then two all-passes;
/// `rt60` seconds to fall by 60 dB, mixed at `wet` (level matched).
fn reverb(x: &[f32], rt60: f32, wet: f32) -> Vec<f32> {
    let mut padded = x.to_vec();
    padded.resize(x.len() + (rt60 * RATE) as usize, 0.0);
    let combs = [0.0297f32, 0.0371, 0.0411, 0.0437];
    let mut tail = vec![0.0f32; padded.len()];
    for d in combs {
        let mut y = padded.clone();
        filter(
            &mut y,
            (d * RATE) as usize,
            10f32.powf(-3.0 * d / rt60),
            false,
        );
        tail.iter_mut().zip(&y).for_each(|(t, v)| *t += v);
    }
    for d in [0.005f32, 0.0017] {
        filter(&mut tail, (d * RATE) as usize, 0.7, true);
    }
    let gain = rms(x) / rms(&tail).max(1e-9);
    padded
        .iter()
        .zip(&tail)
        .map(|(dry, t)| (1.0 - wet) * dry + wet * gain * t)
        .collect()
}

/// Levels of 20-ms frames, sorted.
fn frame_levels(audio: &[f32]) -> Vec<f32> {
    let mut levels: Vec<f32> = audio.chunks_exact(FRAME).map(rms).collect();
    levels.sort_by(f32::total_cmp);
    levels
}

/// The loudest tenth's level.
fn loud(levels: &[f32]) -> f32 {
    rms(&levels[levels.len() * 9 / 10..])
}

/// The samples' quietest tenth of frames, joined; and its level against
/// the loudest tenth's.
fn background(samples: &[Vec<f32>]) -> (Vec<f32>, f32) {
    let mut frames: Vec<(f32, &[f32])> = samples
        .iter()
        .flat_map(|s| s.chunks_exact(FRAME))
        .map(|f| (rms(f), f))
        .collect();
    frames.sort_by(|a, b| a.0.total_cmp(&b.0));
    let quiet: Vec<f32> = frames[..frames.len() / 10]
        .iter()
        .flat_map(|f| f.1.iter().copied())
        .collect();
    let levels: Vec<f32> = frames.iter().map(|f| f.0).collect();
    let ratio = rms(&quiet) / loud(&levels);
    (quiet, ratio)
}

/// `noise` looped under `x` at `ratio` of its loudest tenth, times `gain`.
fn add_noise(x: &[f32], noise: &[f32], ratio: f32, gain: f32) -> Vec<f32> {
    let scale = gain * ratio * loud(&frame_levels(x)) / rms(noise).max(1e-9);
    x.iter()
        .zip(noise.iter().cycle())
        .map(|(v, n)| v + scale * n)
        .collect()
}

type Channel = Box<dyn Fn(&[f32], &[f32], f32) -> Vec<f32>>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [models, dirs @ ..] = args.as_slice() else {
        panic!("usage: channel_probe MODELS SPEAKER_DIR...");
    };
    let models = PathBuf::from(models);
    let tts = TtsCatalog::discover(&models, 2);
    let stt = SttCatalog::discover(&models, 2, 1);
    let encoder = stt.encoder().expect("speaker encoder");
    let embed = |audio: &[f32]| encoder.embed_at(audio, 16_000).expect("embedding");
    // Each voice's ten sentences, joined as the bench joins them.
    let voices: Vec<(String, Vec<f32>)> = tts
        .voices()
        .iter()
        .filter(|v| v.engine == STYLED_ENGINE && v.language.starts_with("en"))
        .map(|v| {
            let spoken = BENCH_SENTENCES
                .iter()
                .map(|s| {
                    let a = tts.speak(&v.id, s, 1.0, |_, _, _| true).expect("speech");
                    resample(&a.samples, a.sample_rate, 16_000)
                })
                .collect::<Vec<_>>();
            (v.key.clone(), join(&spoken))
        })
        .collect();
    let variants: Vec<(&str, Channel)> = vec![
        ("dry", Box::new(|x, _, _| x.to_vec())),
        ("reverb 0.15 s", Box::new(|x, _, _| reverb(x, 0.15, 0.3))),
        ("reverb 0.3 s", Box::new(|x, _, _| reverb(x, 0.3, 0.3))),
        (
            "reverb 0.3 s, half wet",
            Box::new(|x, _, _| reverb(x, 0.3, 0.5)),
        ),
        ("reverb 0.5 s", Box::new(|x, _, _| reverb(x, 0.5, 0.3))),
        ("background", Box::new(|x, n, r| add_noise(x, n, r, 1.0))),
        (
            "background -6 dB",
            Box::new(|x, n, r| add_noise(x, n, r, 0.5)),
        ),
        (
            "reverb 0.3 s and background",
            Box::new(|x, n, r| add_noise(&reverb(x, 0.3, 0.3), n, r, 1.0)),
        ),
    ];
    print!("reader\tvoice");
    for (name, _) in &variants {
        print!("\t{name}");
    }
    println!();
    for dir in dirs {
        let (samples, held, _) = reader(Path::new(dir), 16_000);
        let each: Vec<Embedding> = held.iter().map(|h| embed(h)).collect();
        let target = Embedding::mean(&each).expect("held");
        let (noise, ratio) = background(&samples);
        let name = Path::new(dir)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let mut scored: Vec<(f32, usize)> = voices
            .iter()
            .enumerate()
            .map(|(i, (_, joined))| (embed(joined).similarity(&target), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, i) in scored.iter().take(3) {
            let (key, joined) = &voices[i];
            print!("{name}\t{key}");
            for (_, f) in &variants {
                let heard = embed(&f(joined, &noise, ratio)).similarity(&target);
                print!("\t{heard:.3}");
            }
            println!();
        }
        eprintln!("{name}: background ratio {ratio:.4}");
    }
}
