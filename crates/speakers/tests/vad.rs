//! Both voice-activity detectors on espeak-ng speech with pauses, over a
//! noise floor; Silero on the model `scripts/models.sh` installs (a missing
//! model fails).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use mediagen_media::audio::{parse_wav, resample};
use mediagen_speakers::vad::{regions, Energy, RegionOptions, Silero, Vad};
use mediagen_speakers::RATE;

fn models_dir() -> PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")))
}

/// `text` spoken by espeak-ng at 16 kHz, silence trimmed from both ends.
fn say(text: &str) -> Vec<f32> {
    let out = Command::new("espeak-ng")
        .args(["-v", "en-us", "--stdout", text])
        .output()
        .expect("espeak-ng");
    let mut audio = parse_wav(&out.stdout).expect("a wav");
    audio.trim_silence(-45.0, 0.0);
    resample(&audio.samples, audio.sample_rate, RATE as u32)
}

/// Low noise (about -60 dBFS), deterministic.
fn noise(seconds: f64, seed: &mut u32) -> Vec<f32> {
    (0..(seconds * RATE as f64) as usize)
        .map(|_| {
            *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (*seed as f32 / u32::MAX as f32 - 0.5) * 0.003
        })
        .collect()
}

/// Silence, a phrase, a long pause, a phrase, silence; and where the
/// phrases are (seconds).
fn clip() -> (Vec<f32>, Vec<(f64, f64)>) {
    let mut seed = 7;
    let mut audio = noise(1.0, &mut seed);
    let mut spans = Vec::new();
    for (k, text) in ["Hello there, how are you?", "The weather is fine today."]
        .iter()
        .enumerate()
    {
        let speech = say(text);
        let at = audio.len();
        spans.push((
            at as f64 / RATE as f64,
            (at + speech.len()) as f64 / RATE as f64,
        ));
        let floor = noise(speech.len() as f64 / RATE as f64, &mut seed);
        audio.extend(speech.iter().zip(&floor).map(|(s, n)| s + n));
        audio.extend(noise(if k == 0 { 1.5 } else { 1.0 }, &mut seed));
    }
    (audio, spans)
}

fn check(vad: &dyn Vad) {
    let (audio, spans) = clip();
    vad.probabilities(&audio[..RATE]).unwrap(); // loads the model
    let started = Instant::now();
    let p = vad.probabilities(&audio).unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!(p.len(), audio.len() / 512);
    // Pauses under 300 ms (the comma) are closed, as between phrases.
    let opts = RegionOptions {
        min_silence: RATE * 3 / 10,
        ..RegionOptions::default()
    };
    let found = regions(&p, audio.len(), opts);
    let secs: Vec<(f64, f64)> = found
        .iter()
        .map(|r| (r.start as f64 / RATE as f64, r.end as f64 / RATE as f64))
        .collect();
    eprintln!(
        "{}: {secs:?} for phrases {spans:?}; {:.1} ms per second of audio",
        vad.name(),
        took * 1000.0 / (audio.len() as f64 / RATE as f64)
    );
    assert_eq!(found.len(), 2, "{}: {secs:?} for {spans:?}", vad.name());
    for ((s, e), (ws, we)) in secs.iter().zip(&spans) {
        assert!(
            (s - ws).abs() < 0.2 && (e - we).abs() < 0.3,
            "{}: {secs:?} for {spans:?}",
            vad.name()
        );
    }
}

#[test]
fn silero_finds_the_two_phrases() {
    let silero = Silero::load(&models_dir(), 1).expect("run scripts/models.sh");
    check(&silero);
    // Noise alone is not speech.
    let p = silero.probabilities(&noise(3.0, &mut 11)).unwrap();
    assert!(regions(&p, 3 * RATE, RegionOptions::default()).is_empty());
}

#[test]
fn energy_finds_the_two_phrases() {
    check(&Energy);
}
