//! Neural clones of real speakers, the worker's own steps without the HTTP
//! around them (issue 49; `bench/clone.sh` runs it): for each speaker the
//! `voice.clone` job's neural step makes a clone from one set of their
//! utterances, and the bench judges it on another set the job never saw,
//! beside the best stock voice and the WORLD clone, and checks by ear (the
//! recogniser) that the clone says what it is given.
//!
//! ```text
//! clone_bench MODELS QUALITY_SECONDS SPEAKER_DIR...
//! clone_bench MODELS stock SPEAKER_DIR...
//! ```
//! Each `SPEAKER_DIR` holds one speaker's utterances as audio files, in
//! order: the first ones up to 45 s are the samples the clone is made
//! from, the rest are held out for the bench. Beside the stock voice the
//! job found most alike, every English stock voice is heard on the bench
//! itself and the most alike named (`top_stock`: the stricter baseline);
//! `stock` in place of the seconds prints that alone, without cloning.
mod common;
use common::{reader, BENCH_SENTENCES, SPANISH_SENTENCES as SPANISH};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mediagen_core::voice::{styled_speaker, STYLED_ENGINE};
use mediagen_media::audio::resample;
use mediagen_pipelines::tts::{speak_converted, speak_neural};
use mediagen_pipelines::voice_clone::neural::{Maker, StockCache};
use mediagen_speakers::encoder::Embedding;
use mediagen_speech::clone::join;
use mediagen_speech::stt::wer::spoken_word_error_rate;
use mediagen_speech::stt::{transcribe, SttCatalog, SttOptions};
use mediagen_speech::tts::TtsCatalog;
use mediagen_speech::voice::{analyse, RATE};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [models, seconds, dirs @ ..] = args.as_slice() else {
        eprintln!("usage: clone_bench MODELS (QUALITY_SECONDS | stock) SPEAKER_DIR...");
        std::process::exit(2);
    };
    // The job's own log (the search's course) on stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let models = PathBuf::from(models);
    let stock_only = seconds == "stock";
    let seconds: f64 = if stock_only {
        0.0
    } else {
        seconds.parse().expect("seconds")
    };
    let tts = TtsCatalog::discover(&models, 2);
    let stt = SttCatalog::discover(&models, 2, 1);
    let encoder = stt.encoder().expect("speaker encoder");
    let model = stt.model(None).expect("a recogniser");
    let stock = StockCache::default();
    let embed = |audio: &[f32], rate: u32| encoder.embed_at(audio, rate).expect("embedding");
    // The sentences' speech at `rate` joined as the job joins its own
    // (`mediagen_speech::clone::join`), embedded as one utterance.
    let joined = |spoken: &[Vec<f32>], rate: u32| {
        let at_16k: Vec<Vec<f32>> = spoken.iter().map(|a| resample(a, rate, 16_000)).collect();
        embed(&join(&at_16k), 16_000)
    };
    // Every English Kokoro voice (the job's stock voices) on the bench's
    // sentences: the same for every speaker.
    let every_stock: Vec<(String, Embedding)> = tts
        .voices()
        .iter()
        .filter(|v| v.engine == STYLED_ENGINE && v.language.starts_with("en"))
        .map(|v| {
            let spoken: Vec<Vec<f32>> = BENCH_SENTENCES
                .iter()
                .map(|s| {
                    tts.speak(&v.id, s, 1.0, |_, _, _| true)
                        .expect("stock speech")
                        .samples
                })
                .collect();
            let rate = v.sample_rate;
            (v.key.clone(), joined(&spoken, rate))
        })
        .collect();
    if stock_only {
        println!("speaker\ttop_stock\ttop_voice");
    } else {
        println!(
        "speaker\tsamples_s\tbench_s\tgender\tjob_s\tjob_held_out\tclone\tbest_stock\tstock_voice\ttop_stock\ttop_voice\tworld\tcoloured\tpitch\tformant\tclone_wer\tstock_wer\tclone_es_wer\tstock_es_wer"
    );
    }
    for dir in dirs {
        let (samples, held, total) = reader(Path::new(dir), RATE);
        let held_s: f64 = held.iter().map(|p| p.len() as f64 / f64::from(RATE)).sum();
        let name = Path::new(dir)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?");
        // Judged on the held-out utterances, on ten sentences none heard.
        let each: Vec<Embedding> = held.iter().map(|h| embed(h, RATE)).collect();
        let target = Embedding::mean(&each).expect("held-out audio");
        let (top_voice, top_stock) = every_stock
            .iter()
            .map(|(key, e)| (key.as_str(), e.similarity(&target)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("stock voices");
        if stock_only {
            println!("{name}\t{top_stock:.3}\t{top_voice}");
            continue;
        }
        let profile = analyse(&samples).expect("a profile");
        let world_base = tts.closest(&profile, "en").map(|v| v.id.clone());
        let started = Instant::now();
        let maker = Maker {
            tts: &tts,
            stt: &stt,
            stock: &stock,
            report: &|_| {},
            cancelled: &|| false,
        };
        let deadline = started + Duration::from_secs_f64(seconds);
        let voice = maker
            .make(
                &samples,
                &profile,
                "en",
                world_base.as_deref(),
                None,
                deadline,
            )
            .expect("the clone job")
            .expect("a neural clone");
        let took = started.elapsed().as_secs_f64();

        // Likeness: the ten sentences' speech joined, embedded as one
        // utterance (as each held-out utterance is), against the held-out
        // utterances' mean; WER: each sentence as recognised.
        let hear_in = |speak: &dyn Fn(&str) -> Vec<f32>,
                       rate: u32,
                       sentences: &[&str],
                       language: &str|
         -> (f32, f64) {
            let (mut spoken, mut errors) = (Vec::new(), 0.0);
            for s in sentences {
                let audio = speak(s);
                let options = SttOptions {
                    language: Some(language.into()),
                    translate: false,
                    prompt: None,
                    words: false,
                    decoding: mediagen_speech::stt::Decoding::Full,
                };
                let pcm = resample(&audio, rate, 16_000);
                let text = transcribe(model.as_ref(), stt.gate(), stt.vad(), &pcm, &options)
                    .expect("transcript")
                    .text;
                let wer = spoken_word_error_rate(language, s, &text);
                if wer > 0.0 {
                    // What was misheard, to tell a voice's slips from the
                    // recogniser's.
                    eprintln!(
                        "misheard ({language}, {:.0} %): {s:?} as {text:?}",
                        wer * 100.0
                    );
                }
                errors += wer;
                spoken.push(audio);
            }
            (
                joined(&spoken, rate).similarity(&target),
                errors / sentences.len() as f64,
            )
        };
        let hear = |speak: &dyn Fn(&str) -> Vec<f32>, rate: u32| {
            hear_in(speak, rate, &BENCH_SENTENCES, "en")
        };
        let base = voice.base_voice_id.clone();
        let kokoro_rate = tts.voice(&base).map_or(24_000, |v| v.sample_rate);
        // The clone saying `s` with catalog voice `speaker`'s phonemes.
        let clone_says = |speaker: &str, s: &str| {
            let spoken = speak_neural(&tts, speaker, voice.styled(), s, None, 1.0, |_, _, _| true);
            spoken.expect("clone speech").samples
        };
        let (clone, clone_wer) = hear(&|s| clone_says(&base, s), kokoro_rate);
        // Spanish: the clone's table with a Spanish voice's phonemes, and
        // that Spanish voice itself.
        let spanish = styled_speaker(tts.voices(), &profile.gender, "es")
            .expect("a Spanish Kokoro voice")
            .id
            .clone();
        let (_, clone_es_wer) = hear_in(&|s| clone_says(&spanish, s), kokoro_rate, &SPANISH, "es");
        let (_, stock_es_wer) = hear_in(
            &|s| {
                tts.speak(&spanish, s, 1.0, |_, _, _| true)
                    .expect("stock speech")
                    .samples
            },
            kokoro_rate,
            &SPANISH,
            "es",
        );
        let stock_id = voice.held_out.best_stock_voice_id.clone();
        let (best_stock, stock_wer) = hear(
            &|s| {
                tts.speak(&stock_id, s, 1.0, |_, _, _| true)
                    .expect("stock speech")
                    .samples
            },
            kokoro_rate,
        );
        let world = match &world_base {
            Some(w) => {
                hear(
                    &|s| {
                        speak_converted(&tts, w, &profile, s, 1.0, |_, _, _| true)
                            .expect("world speech")
                            .samples
                    },
                    RATE,
                )
                .0
            }
            None => f32::NAN,
        };
        println!(
            "{name}\t{total:.0}\t{held_s:.0}\t{}\t{took:.0}\t{:.3}\t{clone:.3}\t{best_stock:.3}\t{}\t{top_stock:.3}\t{top_voice}\t{world:.3}\t{}\t{:.2}\t{:.2}\t{:.1}\t{:.1}\t{:.1}\t{:.1}",
            profile.gender,
            voice.held_out.clone,
            tts.voice(&stock_id).map_or(stock_id.as_str(), |v| v.key.as_str()),
            voice.held_out.coloured,
            voice.pitch,
            voice.formant,
            clone_wer * 100.0,
            stock_wer * 100.0,
            clone_es_wer * 100.0,
            stock_es_wer * 100.0,
        );
    }
}
