//! A line spoken faster, two ways, heard by the recogniser: the voice told
//! to speak at the tempo (the engine's own speed), and its speech at its
//! own pace sped up afterwards by WSOLA (`mediagen_media::stretch`), as a
//! dub fitted a line longer than its slot before (up to `maxSpeedup`, 1.3 by
//! default; docs/dubbing.md). Both are trimmed of silence first, as a dub
//! trims its lines.
//!
//! Usage: pace_bench MODELS [TEMPO ...]   (default 1.15 1.3 1.5)
//! Prints, per voice and tempo, the mean WER of each way over ten English
//! or Spanish sentences (`common`), and the engine's length at that tempo
//! over its natural length (1/tempo would be exact).

mod common;

use std::path::PathBuf;

use common::{BENCH_SENTENCES, SPANISH_SENTENCES};
use mediagen_media::audio::{resample, Audio};
use mediagen_media::stretch::stretch;
use mediagen_speech::stt::wer::spoken_word_error_rate;
use mediagen_speech::stt::{transcribe, SttCatalog, SttOptions};
use mediagen_speech::tts::TtsCatalog;

/// The voices raced: Kokoro's English and Spanish, a woman and a man each.
const VOICES: [(&str, &str); 4] = [
    ("af_heart", "en"),
    ("am_adam", "en"),
    ("ef_dora", "es"),
    ("em_alex", "es"),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((models, tempos)) = args.split_first() else {
        eprintln!("usage: pace_bench MODELS [TEMPO ...]");
        std::process::exit(2);
    };
    let tempos: Vec<f64> = if tempos.is_empty() {
        vec![1.15, 1.3, 1.5]
    } else {
        tempos.iter().map(|t| t.parse().expect("tempo")).collect()
    };
    let models = PathBuf::from(models);
    let tts = TtsCatalog::discover(&models, 2);
    let stt = SttCatalog::discover(&models, 2, 1);
    let model = stt.model(None).expect("a recogniser");
    let wer = |audio: &Audio, language: &str, said: &str| {
        let options = SttOptions {
            language: Some(language.into()),
            translate: false,
            prompt: None,
            words: false,
            decoding: mediagen_speech::stt::Decoding::Full,
        };
        let pcm = resample(&audio.samples, audio.sample_rate, 16_000);
        let heard = transcribe(model.as_ref(), stt.gate(), stt.vad(), &pcm, &options)
            .expect("transcript")
            .text;
        spoken_word_error_rate(language, said, &heard)
    };
    println!("voice\ttempo\tspoken_wer\tstretched_wer\tnatural_wer\tspoken_length");
    for (key, language) in VOICES {
        let Some(voice) = tts.voices().iter().find(|v| v.key == key) else {
            eprintln!("{key}: not installed");
            continue;
        };
        let sentences = if language == "es" {
            SPANISH_SENTENCES
        } else {
            BENCH_SENTENCES
        };
        let speak = |s: &str, speed: f64| {
            let mut audio = tts
                .speak(&voice.id, s, speed as f32, |_, _, _| true)
                .expect("speech");
            audio.trim_silence(-45.0, 0.02);
            audio
        };
        let natural: Vec<Audio> = sentences.iter().map(|s| speak(s, 1.0)).collect();
        let natural_wer = sentences
            .iter()
            .zip(&natural)
            .map(|(s, a)| wer(a, language, s))
            .sum::<f64>()
            / sentences.len() as f64;
        for &tempo in &tempos {
            let (mut spoken_wer, mut stretched_wer, mut length) = (0.0, 0.0, 0.0);
            for (s, own) in sentences.iter().zip(&natural) {
                let spoken = speak(s, tempo);
                length += spoken.samples.len() as f64 / own.samples.len() as f64;
                spoken_wer += wer(&spoken, language, s);
                let want = (own.samples.len() as f64 / tempo).round() as usize;
                let stretched = Audio::new(
                    stretch(&own.samples, own.sample_rate, want),
                    own.sample_rate,
                );
                stretched_wer += wer(&stretched, language, s);
            }
            let n = sentences.len() as f64;
            println!(
                "{key}\t{tempo}\t{:.1}\t{:.1}\t{:.1}\t{:.3}",
                spoken_wer / n * 100.0,
                stretched_wer / n * 100.0,
                natural_wer * 100.0,
                length / n
            );
        }
    }
}
