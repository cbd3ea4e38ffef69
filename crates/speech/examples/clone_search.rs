//! Neural clone search on real speakers, the engine alone (issue 49): for
//! each speaker, a Kokoro style table is searched for from one set of their
//! utterances and judged on another, beside the best stock voice.
//!
//! ```text
//! clone_search MODELS LIKE BUDGET_S SPEAKER_DIR...
//! ```
//! `LIKE` is the stock voice whose language the clone speaks (its
//! phonemes); each `SPEAKER_DIR` holds the speaker's utterances as audio
//! files: the first ones up to 45 s are the samples, the rest held out.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mediagen_media::audio::resample;
use mediagen_speakers::encoder::{partial_starts, raised, Embedding, SpeakerEncoder, PARTIAL};
use mediagen_speech::clone::sentences::sentences as clone_sentences;
use mediagen_speech::clone::{hear_stock, search, Options, Progress, StockVoice, Studio};
use mediagen_speech::tts::kokoro::{KokoroEngine, SAMPLE_RATE};
use mediagen_speech::tts::TextToSpeech as _;

struct Engines {
    kokoro: KokoroEngine,
    encoder: SpeakerEncoder,
    like: String,
}

impl Studio for Engines {
    fn speak(&self, styles: &[f32], sentence: &str) -> Result<Vec<f32>, String> {
        let audio = self
            .kokoro
            .synthesize_styles(styles, &self.like, sentence, 1.0)
            .map_err(|e| e.to_string())?;
        Ok(resample(&audio.samples, SAMPLE_RATE, 16_000))
    }

    fn embed(&self, audio: &[f32]) -> Result<Embedding, String> {
        self.encoder
            .embed(audio)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "silence".to_owned())
    }
}

const MELS: usize = 40;

/// A stock voice's embeddings on the search's and the judge's sentences.
type Hearings = (Vec<Vec<f32>>, Vec<Vec<f32>>);

/// Mean mel energy per band over the louder frames of `audio`.
fn colour(encoder: &SpeakerEncoder, audio: &[f32]) -> Vec<f64> {
    let audio = raised(audio).expect("audio");
    let frames = encoder.frames(&audio);
    let energy: Vec<f32> = frames.chunks_exact(MELS).map(|f| f.iter().sum()).collect();
    let mut sorted = energy.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let cut = sorted[sorted.len() / 2];
    let mut sum = vec![0.0f64; MELS];
    let mut n = 0.0;
    for (f, e) in frames.chunks_exact(MELS).zip(&energy) {
        if *e >= cut {
            for (s, x) in sum.iter_mut().zip(f) {
                *s += f64::from(*x).max(1e-10).ln();
            }
            n += 1.0;
        }
    }
    sum.iter().map(|s| s / n).collect()
}

/// The embedding of `audio` with each mel band's energy multiplied by `gain`.
fn embed_coloured(encoder: &SpeakerEncoder, audio: &[f32], gain: &[f32]) -> Embedding {
    let audio = raised(audio).expect("audio");
    let (starts, padded) = partial_starts(audio.len());
    let mut audio = audio;
    audio.resize(padded.max(audio.len()), 0.0);
    let mut frames = encoder.frames(&audio);
    for f in frames.chunks_exact_mut(MELS) {
        for (x, g) in f.iter_mut().zip(gain) {
            *x *= g;
        }
    }
    Embedding::mean(
        &encoder
            .partials(&frames, &starts, PARTIAL)
            .expect("partials"),
    )
    .expect("some")
}

fn decode(path: &Path) -> Vec<f32> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "f32le", "-ac", "1", "-ar", "16000", "pipe:1"])
        .output()
        .expect("ffmpeg");
    out.stdout
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The embeddings of `styles` speaking the judging sentences.
fn judged(engines: &Engines, styles: &[f32]) -> Vec<Embedding> {
    clone_sentences("en")
        .2
        .iter()
        .map(|s| {
            engines
                .embed(&engines.speak(styles, s).expect("speech"))
                .expect("embedding")
        })
        .collect()
}

/// Mean likeness of embeddings to `target`.
fn likeness(heard: &[Embedding], target: &Embedding) -> f32 {
    heard.iter().map(|e| e.similarity(target)).sum::<f32>() / heard.len() as f32
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [models, like, budget, dirs @ ..] = args.as_slice() else {
        eprintln!("usage: clone_search MODELS LIKE BUDGET_S SPEAKER_DIR...");
        std::process::exit(2);
    };
    let models = PathBuf::from(models);
    let engines = Engines {
        kokoro: KokoroEngine::load(&models, 2).expect("kokoro"),
        encoder: SpeakerEncoder::load(&models, 1).expect("encoder"),
        like: like.clone(),
    };
    let prefix = &like[..1];
    let sentences: Vec<String> = clone_sentences("en")
        .1
        .iter()
        .map(|s| s.to_string())
        .collect();
    let started = Instant::now();
    // What the stock voices sound like does not depend on the speaker:
    // kept in a cache file between runs (CLONE_CACHE).
    let cache_path = std::env::var("CLONE_CACHE").ok();
    let cached: std::collections::HashMap<String, Hearings> = cache_path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut stock = Vec::new();
    let mut stock_judged = Vec::new();
    for v in engines.kokoro.voices() {
        if !(v.key.starts_with(prefix) || (prefix == "a" && v.key.starts_with('b'))) {
            continue;
        }
        let styles = engines.kokoro.styles(&v.key).expect("stock").to_vec();
        let embeddings = |rows: &[Vec<f32>]| {
            rows.iter()
                .map(|r| Embedding(r.clone()))
                .collect::<Vec<_>>()
        };
        match cached.get(&v.key) {
            Some((heard, judged_)) => {
                stock.push(StockVoice {
                    key: v.key.clone(),
                    styles,
                    heard: embeddings(heard),
                });
                stock_judged.push(embeddings(judged_));
            }
            None => {
                stock_judged.push(judged(&engines, &styles));
                stock.push(
                    hear_stock(&engines, &v.key, styles, &sentences).expect("stock voice heard"),
                );
            }
        }
    }
    if let Some(p) = &cache_path {
        let rows = |e: &[Embedding]| e.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        let out: std::collections::HashMap<&str, Hearings> = stock
            .iter()
            .zip(&stock_judged)
            .map(|(v, j)| (v.key.as_str(), (rows(&v.heard), rows(j))))
            .collect();
        std::fs::write(p, serde_json::to_vec(&out).expect("json")).expect("cache written");
    }
    eprintln!(
        "{} stock voices heard in {:.0} s",
        stock.len(),
        started.elapsed().as_secs_f64()
    );
    println!("speaker\tsamples_s\theld_s\tstock\tstock_held\tbest_stock_held\tclone_search\tclone_held\theard\tseconds");
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("speaker dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        let (mut samples, mut held) = (Vec::new(), Vec::new());
        let mut seconds = 0.0;
        for f in files {
            let pcm = decode(&f);
            let len = pcm.len() as f64 / 16_000.0;
            if seconds + len <= 45.0 && held.is_empty() {
                seconds += len;
                samples.push(pcm);
            } else {
                held.push(pcm);
            }
        }
        let embed_all = |set: &[Vec<f32>]| {
            let each: Vec<Embedding> = set
                .iter()
                .map(|p| engines.embed(p).expect("embedding"))
                .collect();
            Embedding::mean(&each).expect("some audio")
        };
        let (target, held_target) = (embed_all(&samples), embed_all(&held));
        // How alike the speaker's own held-out utterances are to the samples.
        let own: Vec<Embedding> = held
            .iter()
            .map(|p| engines.embed(p).expect("embedding"))
            .collect();
        eprintln!(
            "own held-out utterances against the samples: {:.3}",
            likeness(&own, &target)
        );
        let held_s: f64 = held.iter().map(|p| p.len() as f64 / 16_000.0).sum();
        // A recording's colour: how the samples' mean spectrum differs from
        // the best stock voice's, as a gain per mel band.
        {
            let key = &stock
                .iter()
                .zip(&stock_judged)
                .max_by(|a, b| {
                    likeness(&a.0.heard, &target).total_cmp(&likeness(&b.0.heard, &target))
                })
                .expect("stock")
                .0
                .key;
            let styles = engines.kokoro.styles(key).expect("stock");
            let all: Vec<f32> = samples.concat();
            let theirs = colour(&engines.encoder, &all);
            let spoken: Vec<Vec<f32>> = clone_sentences("en")
                .2
                .iter()
                .map(|s| engines.speak(styles, s).expect("speech"))
                .collect();
            let ours = colour(&engines.encoder, &spoken.concat());
            let mean: f64 = theirs.iter().zip(&ours).map(|(a, b)| a - b).sum::<f64>() / MELS as f64;
            let gain: Vec<f32> = theirs
                .iter()
                .zip(&ours)
                .map(|(a, b)| ((a - b - mean).clamp(-3.0, 3.0)).exp() as f32)
                .collect();
            let plain = likeness(
                &spoken
                    .iter()
                    .map(|a| engines.embed(a).expect("e"))
                    .collect::<Vec<_>>(),
                &held_target,
            );
            let coloured = likeness(
                &spoken
                    .iter()
                    .map(|a| embed_coloured(&engines.encoder, a, &gain))
                    .collect::<Vec<_>>(),
                &held_target,
            );
            eprintln!(
                "{key}: held-out likeness plain {plain:.3}, coloured {coloured:.3}; gains dB {:?}",
                gain.iter()
                    .map(|g| (10.0 * g.log10()).round())
                    .collect::<Vec<_>>()
            );
        }
        let started = Instant::now();
        let options = Options {
            sentences: sentences.clone(),
            budget: Duration::from_secs_f64(budget.parse().expect("budget")),
            margin: 0.1,
            seed: 7,
        };
        let progress = Progress {
            report: &|_| {},
            cancelled: &|| false,
        };
        let found = search(&engines, &stock, &target, &options, &progress).expect("search");
        let took = started.elapsed().as_secs_f64();
        let chosen = stock
            .iter()
            .position(|v| v.key == found.best_stock.0)
            .expect("stock");
        let stock_held = likeness(&stock_judged[chosen], &held_target);
        let best_stock_held = stock_judged
            .iter()
            .map(|h| likeness(h, &held_target))
            .fold(f32::NEG_INFINITY, f32::max);
        let clone_held = likeness(&judged(&engines, &found.styles), &held_target);
        println!(
            "{}\t{seconds:.0}\t{held_s:.0}\t{}\t{stock_held:.3}\t{best_stock_held:.3}\t{:.3}\t{clone_held:.3}\t{:?}\t{took:.0}",
            Path::new(dir).file_name().and_then(|n| n.to_str()).unwrap_or("?"),
            found.best_stock.0,
            found.likeness,
            found.heard,
        );
        eprintln!(
            "trace: {:?}",
            found
                .trace
                .iter()
                .map(|x| (x * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
    }
}
