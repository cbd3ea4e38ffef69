//! Times our recogniser on one file the way the endpoint runs it (streamed
//! decode, voice-activity chunks): `stt_bench MODELS_DIR MODEL FILE`.
//! Prints the seconds taken, the audio's seconds, the RTF, what the last
//! run decoded ([`counts`]: windows, text tokens, fallbacks to sampling,
//! lead-ins, encodings and the seconds spent encoding and decoding, summed
//! over threads) and the text (each segment with its times when SEGMENTS
//! is set).

use std::time::Instant;

use mediagen_media::media::probe;
use mediagen_media::pcm;
use mediagen_speech::stt::{counts, transcribe_stream, DecodeCounts, SttCatalog, SttOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, models, model, file] = &args[..] else {
        eprintln!("usage: stt_bench MODELS_DIR MODEL FILE");
        std::process::exit(2);
    };
    let threads = std::env::var("THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let decodes = std::env::var("DECODES")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(threads);
    let mut catalog = SttCatalog::discover(std::path::Path::new(models), threads, decodes);
    // VAD=energy: frame energy instead of Silero (to compare the two).
    if std::env::var("VAD").is_ok_and(|v| v == "energy") {
        catalog = catalog.with_vad(std::sync::Arc::new(mediagen_speakers::vad::Energy));
    }
    let engine = catalog.model(Some(model)).expect("model installed");
    let path = std::path::Path::new(file);
    // RUNS=n transcribes n times in this process (the first run pays for
    // warming up); each run's time is printed.
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    for run in 1..=runs {
        let before = counts();
        let (secs, t) = once(engine.as_ref(), &catalog, path);
        if run < runs {
            println!("run {run}: seconds={secs:.2}");
            continue;
        }
        report(secs, &t, counts().since(before));
    }
}

fn once(
    engine: &dyn mediagen_speech::stt::SpeechToText,
    catalog: &SttCatalog,
    path: &std::path::Path,
) -> (f64, mediagen_speech::stt::Transcript) {
    let start = Instant::now();
    let probed = probe(path).expect("media");
    let scratch = std::env::temp_dir().join(format!("stt_bench_{}.pcm", std::process::id()));
    let pcm =
        pcm::decode(path, probed.demuxer, &scratch, 16_000, probed.duration).expect("decodes");
    let opts = SttOptions {
        language: std::env::var("LANGUAGE").ok(),
        ..SttOptions::default()
    };
    let t = transcribe_stream(
        engine,
        catalog.gate(),
        catalog.vad(),
        &opts,
        &pcm,
        &mut |_| true,
    )
    .expect("transcribed");
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&scratch);
    (secs, t)
}

fn report(secs: f64, t: &mediagen_speech::stt::Transcript, c: DecodeCounts) {
    if std::env::var_os("SEGMENTS").is_some() {
        for s in &t.segments {
            eprintln!("[{:7.2} {:7.2}] {}", s.start, s.end, s.text);
        }
    } else {
        eprintln!("{}", t.text);
    }
    println!(
        "seconds={secs:.2} audio={:.1} rtf={:.4} segments={} windows={} tokens={} fallbacks={} \
         lead_ins={} encodings={} encode_s={:.2} decode_s={:.2}",
        t.duration,
        secs / t.duration,
        t.segments.len(),
        c.windows,
        c.tokens,
        c.fallbacks,
        c.lead_ins,
        c.encodings,
        c.encode_micros as f64 / 1e6,
        c.decode_micros as f64 / 1e6,
    );
}
