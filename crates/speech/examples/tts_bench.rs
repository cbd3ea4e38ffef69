//! Times our text-to-speech engines on a file of sentences, one synthesis
//! per sentence, after one warm-up: `tts_bench MODELS_DIR SENTENCES ENGINE
//! VOICE_KEY`. Prints seconds of compute, seconds of audio and the RTF.

use std::time::Instant;

use mediagen_speech::tts::TtsCatalog;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, models, sentences, engine, key] = &args[..] else {
        eprintln!("usage: tts_bench MODELS_DIR SENTENCES_FILE ENGINE VOICE_KEY");
        std::process::exit(2);
    };
    let threads = std::env::var("THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let catalog = TtsCatalog::discover(std::path::Path::new(models), threads);
    let voice = catalog
        .voices()
        .iter()
        .find(|v| v.engine == engine && v.key == *key)
        .unwrap_or_else(|| panic!("no {engine} voice {key}"));
    let text = std::fs::read_to_string(sentences).expect("sentences file");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    catalog
        .speak(&voice.id, lines[0], 1.0, |_, _, _| true)
        .expect("warm-up");
    let start = Instant::now();
    let mut audio = 0.0;
    for line in &lines {
        audio += catalog
            .speak(&voice.id, line, 1.0, |_, _, _| true)
            .expect("synthesis")
            .duration();
    }
    let compute = start.elapsed().as_secs_f64();
    println!(
        "compute_s={compute:.3} audio_s={audio:.3} rtf={:.4}",
        compute / audio
    );
}
