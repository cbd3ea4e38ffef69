//! Both voice-activity detectors against the truth on the same audio:
//! `vad_compare CLEAN.wav NOISY.wav` (the same speech, the second with a
//! bed or noise mixed in). The truth is which frames of the clean speech
//! are over -50 dBFS (speech synthesized over digital silence); each
//! detector hears the noisy file and decides with Silero's rule. In the
//! truth and in both answers, gaps under 224 ms (between words) count as
//! speech. Prints, per detector, the frames it agrees on, the speech it
//! finds (recall) and the non-speech it calls speech (false alarms).

use std::time::Instant;

use mediagen_media::audio::{parse_wav, resample};
use mediagen_speakers::vad::energy::levels;
use mediagen_speakers::vad::{speech, Energy, Silero, Vad};
use mediagen_speakers::RATE;

fn read(path: &str) -> Vec<f32> {
    let wav = parse_wav(&std::fs::read(path).expect("readable")).expect("a WAV file");
    resample(&wav.samples, wav.sample_rate, RATE as u32)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, clean, noisy] = &args[..] else {
        eprintln!("usage: vad_compare CLEAN.wav NOISY.wav");
        std::process::exit(2);
    };
    let (clean, noisy) = (read(clean), read(noisy));
    let models = std::path::PathBuf::from(
        std::env::var("MEDIAGEN_MODELS_DIR").unwrap_or_else(|_| "models".into()),
    );
    let truth = closed(levels(&clean).iter().map(|&l| l > -50.0).collect());
    let silero = Silero::load(&models, 1).expect("run scripts/models.sh");
    silero.probabilities(&noisy[..RATE]).expect("loads");
    for vad in [&silero as &dyn Vad, &Energy] {
        let started = Instant::now();
        let p = vad.probabilities(&noisy).expect("runs");
        let took = started.elapsed().as_secs_f64();
        let said = closed(speech(&p));
        let n = said.len().min(truth.len());
        let agree = (0..n).filter(|&i| said[i] == truth[i]).count();
        let speech_frames = (0..n).filter(|&i| truth[i]).count().max(1);
        let found = (0..n).filter(|&i| truth[i] && said[i]).count();
        let silent = (n - speech_frames).max(1);
        let false_alarms = (0..n).filter(|&i| !truth[i] && said[i]).count();
        println!(
            "{}: agreement={:.1}% recall={:.1}% false_alarms={:.1}% ms_per_audio_second={:.2}",
            vad.name(),
            100.0 * agree as f64 / n as f64,
            100.0 * found as f64 / speech_frames as f64,
            100.0 * false_alarms as f64 / silent as f64,
            took * 1000.0 / (noisy.len() as f64 / RATE as f64)
        );
    }
}

/// `frames` with runs of silence shorter than 7 frames (224 ms) between
/// speech counted as speech.
fn closed(mut frames: Vec<bool>) -> Vec<bool> {
    let mut i = 0;
    while i < frames.len() {
        if frames[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < frames.len() && !frames[i] {
            i += 1;
        }
        if start > 0 && i < frames.len() && i - start < 7 {
            frames[start..i].iter_mut().for_each(|f| *f = true);
        }
    }
    frames
}
