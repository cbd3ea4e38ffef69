//! Who speaks when in a WAV file, and how alike the speakers' voices are:
//! `cargo run --release -p mediagen-speakers --example diarize -- file.wav [speakers]`
//! (models from MEDIAGEN_MODELS_DIR, default ./models; the segmentation
//! network and CAM++ as `diarize: true` runs them, or `ENGINE=ge2e`: voice
//! activity and GE2E; `THRESHOLD` the clustering's).

use std::time::Instant;

use mediagen_media::audio::{parse_wav, resample};
use mediagen_speakers::diarize::{diarize, DiarizeOptions};
use mediagen_speakers::encoder::SpeakerEncoder;
use mediagen_speakers::sliding::{Networks, SlidingOptions};
use mediagen_speakers::{vad, RATE};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: diarize file.wav [speakers]");
    let mut opts = DiarizeOptions {
        speakers: args.get(2).and_then(|s| s.parse().ok()),
        ..DiarizeOptions::default()
    };
    if let Some(t) = std::env::var("THRESHOLD").ok().and_then(|t| t.parse().ok()) {
        opts.threshold = t;
    }
    let models = std::path::PathBuf::from(
        std::env::var("MEDIAGEN_MODELS_DIR").unwrap_or_else(|_| "models".into()),
    );
    let wav = parse_wav(&std::fs::read(path).expect("readable")).expect("a WAV file");
    let audio = resample(&wav.samples, wav.sample_rate, RATE as u32);
    let vad = vad::discover(&models, 1);
    let (d, took) = if std::env::var("ENGINE").map_or(true, |e| e != "ge2e") {
        let networks = Networks::load(&models, 2).expect("run scripts/models.sh");
        networks.segmenter.warm().expect("segmentation loads");
        networks.embedder.warm().expect("CAM++ loads");
        let mut sopts = SlidingOptions {
            speakers: opts.speakers,
            ..SlidingOptions::default()
        };
        if let Some(t) = std::env::var("THRESHOLD").ok().and_then(|t| t.parse().ok()) {
            sopts.threshold = t;
        }
        let started = Instant::now();
        let d = networks
            .diarize(&audio.as_slice(), sopts, &mut |_| true)
            .expect("diarized");
        (d, started.elapsed().as_secs_f64())
    } else {
        let encoder = SpeakerEncoder::load(&models, 2).expect("run scripts/models.sh");
        encoder.warm().expect("encoder loads");
        let started = Instant::now();
        let d = diarize(vad.as_ref(), &encoder, &audio.as_slice(), opts).expect("diarized");
        (d, started.elapsed().as_secs_f64())
    };
    for t in &d.turns {
        let s = |x: usize| x as f64 / RATE as f64;
        println!(
            "{:8.2} {:8.2}  speaker_{}",
            s(t.range.start),
            s(t.range.end),
            t.speaker
        );
    }
    for (a, va) in d.voices.iter().enumerate() {
        let row: Vec<String> = d
            .voices
            .iter()
            .map(|vb| format!("{:.3}", va.similarity(vb)))
            .collect();
        println!("speaker_{a}: {}", row.join(" "));
    }
    println!(
        "vad={} seconds={took:.2} audio={:.1}",
        vad.name(),
        audio.len() as f64 / RATE as f64
    );
}
