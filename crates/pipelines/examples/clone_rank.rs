//! How well a clone search's objective ranks style tables the way the clone
//! bench does (issue 49; `bench/clone.sh rank` runs it): every English
//! stock voice and some seeded blends of two of them each say the search's
//! sentences, the judging's and the bench's; for each reader, each
//! objective's ranking of the tables is compared with the bench's (the ten
//! bench sentences joined, against the reader's held-out utterances) by
//! Spearman's rank correlation, and the table it would pick is named with
//! its bench likeness.
//!
//! ```text
//! clone_rank MODELS BLENDS SPEAKER_DIR...
//! ```
//! The objectives: the search's three sentences against the searched part
//! of the samples, and the judging's three against the held-out part, each
//! as the mean likeness of every sentence's own embedding (`each`) and as
//! the likeness of the sentences joined into one utterance (`joined`).
mod common;
use common::{reader, BENCH_SENTENCES};
use std::path::{Path, PathBuf};

use mediagen_core::voice::STYLED_ENGINE;
use mediagen_media::audio::resample;
use mediagen_pipelines::voice_clone::neural::split;
use mediagen_speakers::encoder::Embedding;
use mediagen_speech::clone::join;
use mediagen_speech::clone::sentences::sentences;
use mediagen_speech::stt::SttCatalog;
use mediagen_speech::tts::{Style, TtsCatalog};
use mediagen_speech::voice::RATE;
use rand::{Rng, SeedableRng};

/// A table's speech of one set of sentences: each sentence's embedding,
/// and the sentences' joined.
struct Heard {
    each: Vec<Embedding>,
    joined: Embedding,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [models, blends, dirs @ ..] = args.as_slice() else {
        eprintln!("usage: clone_rank MODELS BLENDS SPEAKER_DIR...");
        std::process::exit(2);
    };
    let blends: usize = blends.parse().expect("blends");
    let models = PathBuf::from(models);
    let tts = TtsCatalog::discover(&models, 2);
    let stt = SttCatalog::discover(&models, 2, 1);
    let encoder = stt.encoder().expect("speaker encoder");
    let embed = |audio: &[f32]| encoder.embed_at(audio, 16_000).expect("embedding");
    let (_, search, judge) = sentences("en");
    let stock: Vec<_> = tts
        .voices()
        .iter()
        .filter(|v| v.engine == STYLED_ENGINE && v.language.starts_with("en"))
        .collect();
    let like = stock.first().expect("English Kokoro voices").id.clone();
    let mut tables: Vec<(String, Vec<f32>)> = stock
        .iter()
        .map(|v| {
            (
                v.key.clone(),
                tts.style_table(&v.id).expect("a style table"),
            )
        })
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let n = tables.len();
    for _ in 0..blends {
        let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
        let w: f32 = rng.gen_range(0.2..0.8);
        let mixed = tables[a]
            .1
            .iter()
            .zip(&tables[b].1)
            .map(|(x, y)| w * x + (1.0 - w) * y)
            .collect();
        tables.push((format!("{}*{w:.2}+{}", tables[a].0, tables[b].0), mixed));
    }
    let sets: [&[&str]; 3] = [&search, &judge, &BENCH_SENTENCES];
    // [table][set]
    let heard: Vec<Vec<Heard>> = tables
        .iter()
        .map(|(name, table)| {
            eprintln!("hearing {name}");
            sets.iter()
                .map(|set| {
                    let spoken: Vec<Vec<f32>> = set
                        .iter()
                        .map(|s| {
                            let audio = tts
                                .speak_styled(
                                    &like,
                                    Some(Style::plain(table)),
                                    s,
                                    1.0,
                                    |_, _, _| true,
                                )
                                .expect("speech");
                            resample(&audio.samples, audio.sample_rate, 16_000)
                        })
                        .collect();
                    Heard {
                        each: spoken.iter().map(|a| embed(a)).collect(),
                        joined: embed(&join(&spoken)),
                    }
                })
                .collect()
        })
        .collect();
    println!("speaker\tobjective\tspearman\tpick\tpick_bench\tbench_top\tbench_top_voice");
    for dir in dirs {
        let (samples, held, _) = reader(Path::new(dir), RATE);
        let mean = |set: &[Vec<f32>]| {
            let each: Vec<Embedding> = set
                .iter()
                .map(|s| encoder.embed_at(s, RATE).expect("embedding"))
                .collect();
            Embedding::mean(&each).expect("audio")
        };
        let (searched, job_held) = split(&samples);
        let targets = [mean(&searched), mean(&job_held)];
        let bench_target = mean(&held);
        let bench: Vec<f32> = heard
            .iter()
            .map(|h| h[2].joined.similarity(&bench_target))
            .collect();
        let top = argmax(&bench);
        let name = Path::new(dir)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?");
        for (set, label) in ["search", "judge"].iter().enumerate() {
            let target = &targets[set];
            let each: Vec<f32> = heard
                .iter()
                .map(|h| {
                    let e = &h[set].each;
                    e.iter().map(|x| x.similarity(target)).sum::<f32>() / e.len() as f32
                })
                .collect();
            let joined: Vec<f32> = heard
                .iter()
                .map(|h| h[set].joined.similarity(target))
                .collect();
            for (how, scores) in [("each", each), ("joined", joined)] {
                let pick = argmax(&scores);
                println!(
                    "{name}\t{label}_{how}\t{:.3}\t{}\t{:.3}\t{:.3}\t{}",
                    spearman(&scores, &bench),
                    tables[pick].0,
                    bench[pick],
                    bench[top],
                    tables[top].0
                );
            }
        }
    }
}

fn argmax(x: &[f32]) -> usize {
    (0..x.len())
        .max_by(|&a, &b| x[a].total_cmp(&x[b]))
        .expect("tables")
}

/// Spearman's rank correlation (no ties among these scores).
fn spearman(a: &[f32], b: &[f32]) -> f32 {
    let ranks = |x: &[f32]| {
        let mut order: Vec<usize> = (0..x.len()).collect();
        order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
        let mut r = vec![0.0f32; x.len()];
        for (k, &i) in order.iter().enumerate() {
            r[i] = k as f32;
        }
        r
    };
    let (a, b) = (ranks(a), ranks(b));
    let n = a.len() as f32;
    let mean = (n - 1.0) / 2.0;
    let (mut s, mut sa, mut sb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(&b) {
        s += (x - mean) * (y - mean);
        sa += (x - mean) * (x - mean);
        sb += (y - mean) * (y - mean);
    }
    s / (sa * sb).sqrt()
}
