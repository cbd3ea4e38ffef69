//! The real engines on the models that `scripts/models.sh` installs (run by
//! `make test`'s setup). Missing models fail these tests: they are never
//! skipped.

use std::path::PathBuf;
use std::time::Instant;

use mediagen_speech::tts::TtsCatalog;

fn models_dir() -> PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")))
}

#[test]
fn piper_and_espeak_speak() {
    let catalog = TtsCatalog::discover(&models_dir(), 2);
    for status in catalog.status() {
        assert!(
            status.available,
            "{} missing: {}",
            status.engine, status.detail
        );
    }
    let joe = catalog
        .voices()
        .iter()
        .find(|v| v.engine == "piper" && v.key == "en_US-joe-medium")
        .expect("joe voice");
    assert_eq!(
        (joe.language.as_str(), joe.gender.as_str(), joe.sample_rate),
        ("en-US", "male", 22050)
    );

    let text = "Hello world. The quick brown fox jumps over the lazy dog, twice!";
    let start = Instant::now();
    let mut sentences = 0;
    let audio = catalog
        .speak(&joe.id, text, 1.0, |_, n, a| {
            sentences = n;
            a.peak() > 0.1
        })
        .unwrap();
    let rtf = start.elapsed().as_secs_f64() / audio.duration();
    eprintln!("piper: {:.2} s of audio, RTF {rtf:.3}", audio.duration());
    assert_eq!(sentences, 2);
    assert!(
        (2.0..8.0).contains(&audio.duration()),
        "{}",
        audio.duration()
    );
    assert!(audio.peak() > 0.5);

    // The same text gives the same speech (VITS's sampling noise is
    // seeded: mediagen_onnx's SeededNormal), so a transcript of it does
    // not change from run to run.
    let again = catalog.speak(&joe.id, text, 1.0, |_, _, _| true).unwrap();
    assert!(
        again.samples == audio.samples,
        "the same text, other speech"
    );

    // Faster speech is shorter.
    let fast = catalog.speak(&joe.id, text, 1.5, |_, _, _| true).unwrap();
    assert!(
        fast.duration() < audio.duration() * 0.85,
        "{} vs {}",
        fast.duration(),
        audio.duration()
    );

    let german = catalog
        .voices()
        .iter()
        .find(|v| v.engine == "espeak" && v.language == "de")
        .expect("German espeak voice");
    let de = catalog
        .speak(
            &german.id,
            "Guten Tag, wie geht es Ihnen?",
            1.0,
            |_, _, _| true,
        )
        .unwrap();
    assert!((1.0..5.0).contains(&de.duration()), "{}", de.duration());
    assert!(
        catalog.voices().len() > 100,
        "espeak-ng brings about 130 languages"
    );
}

#[test]
fn kokoro_speaks_english_and_spanish() {
    let catalog = TtsCatalog::discover(&models_dir(), 2);
    let kokoro = catalog
        .status()
        .iter()
        .find(|s| s.engine == "kokoro")
        .expect("kokoro status");
    assert!(kokoro.available, "{}", kokoro.detail);
    assert!(kokoro.voices >= 40, "{} voices", kokoro.voices);
    for (key, text) in [
        ("af_heart", "The quick brown fox jumps over the lazy dog."),
        ("ef_dora", "Hola, ¿cómo estás? Son las 8:30."),
    ] {
        let voice = catalog.voices().iter().find(|v| v.key == key).unwrap();
        assert_eq!(
            (voice.engine, voice.quality, voice.sample_rate),
            ("kokoro", "high", 24_000)
        );
        let start = Instant::now();
        let audio = catalog.speak(&voice.id, text, 1.0, |_, _, _| true).unwrap();
        eprintln!(
            "{key}: {:.2} s of audio in {:?}",
            audio.duration(),
            start.elapsed()
        );
        assert!(
            (1.5..6.0).contains(&audio.duration()),
            "{key}: {}",
            audio.duration()
        );
        assert!(audio.peak() > 0.1);
    }
}

/// A cancel reaches into one long sentence: the engine's run stops in its
/// middle (ONNX Runtime's terminate flag), not at the sentence's end.
#[test]
fn a_cancel_stops_kokoro_inside_a_sentence() {
    use mediagen_media::process::Scope;
    use mediagen_speech::tts::TtsError;
    let catalog = TtsCatalog::discover(&models_dir(), 2);
    let voice = catalog
        .voices()
        .iter()
        .find(|v| v.key == "af_heart")
        .unwrap();
    let sentence = "The committee met again on Thursday morning to go over every \
        line of the budget, the schedule for the new building, the hiring plan \
        for the spring and the many letters that neighbours had sent about the \
        noise, the parking and the trees along the river path.";
    catalog
        .speak(&voice.id, "Warm up.", 1.0, |_, _, _| true)
        .unwrap();
    // The sentence takes seconds to speak (5.6 s under make test's load):
    // a cancel after 0.4 s lands in its one engine run.
    let scope = Scope::new();
    let cancel = {
        let scope = scope.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(400));
            scope.cancel();
            Instant::now()
        })
    };
    let _entered = scope.enter();
    let result = catalog.speak(&voice.id, sentence, 1.0, |_, _, _| true);
    let returned = Instant::now();
    let cancelled_at = cancel.join().unwrap();
    let after = returned.saturating_duration_since(cancelled_at);
    eprintln!("the sentence returned {after:?} after its cancel");
    assert!(matches!(result, Err(TtsError::Cancelled)), "{result:?}");
    assert!(after < std::time::Duration::from_millis(150), "{after:?}");
}

/// Magnitude spectrogram (1024-point frames every 256 samples).
fn spectrogram(x: &[f32]) -> Vec<f64> {
    let (n, hop) = (1024, 256);
    let fft = rustfft::FftPlanner::<f64>::new().plan_fft_forward(n);
    let mut out = Vec::new();
    let mut start = 0;
    while start + n <= x.len() {
        let mut frame: Vec<rustfft::num_complex::Complex<f64>> = (0..n)
            .map(|i| {
                let w = 0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos();
                rustfft::num_complex::Complex::new(f64::from(x[start + i]) * w, 0.0)
            })
            .collect();
        fft.process(&mut frame);
        out.extend(frame[..n / 2 + 1].iter().map(|c| c.norm()));
        start += hop;
    }
    out
}

/// How far `b`'s spectrogram is from `a`'s, relative to `a`'s (0: the same).
fn spectral_convergence(a: &[f32], b: &[f32]) -> f64 {
    let (a, b) = (spectrogram(a), spectrogram(b));
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    norm(&mut a.iter().zip(&b).map(|(x, y)| x - y)) / norm(&mut a.iter().copied())
}

/// Kokoro's graph as we run it (Snake activations and sines by our
/// operators) gives the audio the file as shipped gives. Not sample for
/// sample: the model quantizes its activations as it runs (the scale from
/// each tensor's range), so a difference of one float rounding anywhere
/// moves some values to the next step and the waveform drifts (a 10⁻⁶
/// change to one of its sines alone measured 19.7 dB SNR). Its
/// spectrogram stays the same: spectral convergence 0.07 measured, against
/// 0.35 with its STFT computed another way (the phases of its near-empty
/// bins, which are rounding noise, then differ).
#[test]
fn kokoro_rewritten_graph_matches_the_original() {
    use ort::value::Tensor;
    let models = models_dir();
    let model = models.join("kokoro/kokoro-v1.0.int8.onnx");
    let env = mediagen_onnx::environment(&models).expect("onnxruntime");
    let styles = std::fs::read(models.join("kokoro/voices/af_heart.bin")).expect("voice");
    // A phrase's worth of phoneme ids (Kokoro's vocabulary is 0..178).
    let ids: Vec<i64> = [0]
        .into_iter()
        .chain((0..60).map(|i| 16 + (i * 37) % 140))
        .chain([0])
        .collect();
    let row = ids.len() - 2;
    let style: Vec<f32> = styles[row * 1024..(row + 1) * 1024]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let run = |session: &mut ort::session::Session| -> Vec<f32> {
        let outputs = session
            .run(ort::inputs![
                "tokens" => Tensor::from_array((vec![1i64, ids.len() as i64], ids.clone())).unwrap(),
                "style" => Tensor::from_array((vec![1i64, 256], style.clone())).unwrap(),
                "speed" => Tensor::from_array((vec![1i64], vec![1.0f32])).unwrap(),
            ])
            .expect("run");
        outputs[0].try_extract_tensor::<f32>().unwrap().1.to_vec()
    };
    let original = run(&mut mediagen_onnx::session(env, &model, 2).unwrap());
    let ours = run(&mut mediagen_onnx::session_rewritten(env, &model, 2).unwrap());
    assert_eq!(original.len(), ours.len());
    let convergence = spectral_convergence(&original, &ours);
    eprintln!(
        "{} samples, spectral convergence {convergence:.3}",
        ours.len()
    );
    assert!(convergence < 0.15, "spectral convergence {convergence:.3}");
}

/// A clone's pitch and formant factors. The harmonic source's phase, made
/// again from the scaled pitch curve, is the model's own (a factor of 1.001
/// sounds as the model's phase does: a wrong step per point or per harmonic
/// would put every harmonic elsewhere), and a factor of 1.25 raises the
/// measured median pitch by that. A formant factor of 0.85 lowers the
/// spectrum's centroid and leaves the pitch, and the length nearly.
#[test]
fn kokoro_speaks_a_table_at_another_pitch_and_formants() {
    use mediagen_speech::tts::Style;
    use mediagen_speech::voice::{analyse, VoiceProfile, RATE};
    let catalog = TtsCatalog::discover(&models_dir(), 2);
    let heart = catalog
        .voices()
        .iter()
        .find(|v| v.key == "af_heart")
        .unwrap();
    let table = catalog.style_table(&heart.id).expect("a style table");
    let text = "The birch canoe slid on the smooth planks, and the boat moved on.";
    let speak = |pitch: f32, formant: f32| {
        let style = Style {
            table: &table,
            pitch,
            formant,
            pace: 1.0,
        };
        catalog
            .speak_styled(&heart.id, Some(style), text, 1.0, |_, _, _| true)
            .unwrap()
    };
    let (own, near, high) = (speak(1.0, 1.0), speak(1.001, 1.0), speak(1.25, 1.0));
    assert_eq!(own.samples.len(), near.samples.len());
    let convergence = spectral_convergence(&own.samples, &near.samples);
    assert!(convergence < 0.15, "spectral convergence {convergence:.3}");
    let profile = |audio: &mediagen_media::audio::Audio| -> VoiceProfile {
        let pcm = mediagen_media::audio::resample(&audio.samples, audio.sample_rate, RATE);
        analyse(&[pcm]).expect("a profile")
    };
    let (own_p, high_p) = (profile(&own), profile(&high));
    let ratio = high_p.pitch_median / own_p.pitch_median;
    assert!((1.19..1.31).contains(&ratio), "pitch ratio {ratio:.3}");

    let lower = speak(1.0, 0.85);
    let lower_p = profile(&lower);
    let length = lower.samples.len() as f64 / own.samples.len() as f64;
    let pitch = lower_p.pitch_median / own_p.pitch_median;
    let centroid = lower_p.centroid / own_p.centroid;
    eprintln!("formants ×0.85: length {length:.3}, pitch {pitch:.3}, centroid {centroid:.3}");
    // Durations are whole frames: the shortest phonemes cannot shorten, so
    // a lower factor speaks a little slower (measured 1.048).
    assert!((0.97..1.07).contains(&length), "length ratio {length:.3}");
    assert!((0.95..1.05).contains(&pitch), "pitch ratio {pitch:.3}");
    // The analyser's centroid (measured 0.960).
    assert!(
        (0.8..0.98).contains(&centroid),
        "centroid ratio {centroid:.3}"
    );
}

/// Piper's graph as we run it (residual convolutions with their leaky
/// ReLUs, and transposed convolutions, by our operators) gives the waveform
/// the file as shipped gives, sample for sample to within float rounding.
/// The noise scales are zero so that both runs are deterministic.
#[test]
fn piper_rewritten_graph_matches_the_original() {
    use ort::value::Tensor;
    let models = models_dir();
    let model = models.join("piper/en_US-joe-medium.onnx");
    let env = mediagen_onnx::environment(&models).expect("onnxruntime");
    // A phrase's worth of phoneme ids (the voice's map has about 130), each
    // followed by the pad id 0, as Piper writes them.
    let ids: Vec<i64> = [1, 0]
        .into_iter()
        .chain((0..60).flat_map(|i| [14 + (i * 37) % 110, 0]))
        .chain([2])
        .collect();
    let run = |session: &mut ort::session::Session| -> Vec<f32> {
        let n = ids.len() as i64;
        let outputs = session
            .run(ort::inputs![
                "input" => Tensor::from_array((vec![1i64, n], ids.clone())).unwrap(),
                "input_lengths" => Tensor::from_array((vec![1i64], vec![n])).unwrap(),
                "scales" => Tensor::from_array((vec![3i64], vec![0.0f32, 1.0, 0.0])).unwrap(),
            ])
            .expect("run");
        outputs[0].try_extract_tensor::<f32>().unwrap().1.to_vec()
    };
    let original = run(&mut mediagen_onnx::session(env, &model, 2).unwrap());
    let ours = run(&mut mediagen_onnx::session_rewritten(env, &model, 2).unwrap());
    assert_eq!(original.len(), ours.len());
    let power = |v: &mut dyn Iterator<Item = f32>| v.map(|x| f64::from(x).powi(2)).sum::<f64>();
    let signal = power(&mut original.iter().copied());
    let noise = power(&mut original.iter().zip(&ours).map(|(a, b)| a - b));
    let snr = 10.0 * (signal / noise.max(1e-30)).log10();
    eprintln!("{} samples, SNR {snr:.1} dB", ours.len());
    assert!(signal > 0.0 && snr > 80.0, "SNR {snr:.1} dB");
}

/// A catalog voice saying something else is found again among the
/// candidates of its language and gender: by pitch and formants alone, and
/// with the speaker encoder's embedding too (as dubbing matches a
/// speaker). The embedding must find at least as many as the profile alone.
#[ignore = "long: run by `make test-long`"]
#[test]
fn catalog_voices_are_found_again_by_how_they_sound() {
    use mediagen_speakers::encoder::SpeakerEncoder;
    use mediagen_speech::tts::Likeness;
    use mediagen_speech::voice::{analyse, RATE};

    let catalog = TtsCatalog::discover(&models_dir(), 2);
    let encoder = SpeakerEncoder::load(&models_dir(), 2).expect("speaker encoder");
    let passage = "Our train left the station an hour late. By the time we reached \
                   the coast the rain had stopped, and the whole town was out walking \
                   along the harbour.";
    let (mut by_profile, mut by_both, mut by_print, mut tried) = (0, 0, 0, 0);
    for gender in ["female", "male"] {
        let candidates = catalog.candidates(gender, "en-US");
        for voice in &candidates {
            let audio = catalog
                .speak(&voice.id, passage, 1.0, |_, _, _| true)
                .unwrap();
            let samples = mediagen_media::audio::resample(&audio.samples, audio.sample_rate, RATE);
            let profile = analyse(std::slice::from_ref(&samples)).unwrap();
            let print = encoder.embed_at(&samples, RATE).unwrap();
            let first = catalog.closest(&profile, "en-US").map(|v| v.id.clone());
            let like = Likeness {
                profile: &profile,
                print: Some((&print, &encoder)),
            };
            let second = catalog
                .closest_except(&like, "en-US", &[])
                .map(|v| v.id.clone());
            eprintln!(
                "{}: by profile {:?}, with the embedding {:?}",
                voice.key,
                first
                    .as_ref()
                    .and_then(|id| catalog.voice(id))
                    .map(|v| &v.key),
                second
                    .as_ref()
                    .and_then(|id| catalog.voice(id))
                    .map(|v| &v.key)
            );
            // By the embedding alone, among the candidates of its gender.
            let nearest = candidates
                .iter()
                .max_by(|a, b| {
                    let s = |v: &&mediagen_speech::tts::VoiceInfo| {
                        catalog
                            .voiceprint(&v.id, &encoder)
                            .unwrap()
                            .similarity(&print)
                    };
                    s(a).total_cmp(&s(b))
                })
                .unwrap();
            by_print += usize::from(nearest.id == voice.id);
            tried += 1;
            by_profile += usize::from(first.as_deref() == Some(voice.id.as_str()));
            by_both += usize::from(second.as_deref() == Some(voice.id.as_str()));
        }
    }
    eprintln!(
        "found again: {by_profile}/{tried} by profile, {by_print}/{tried} by the embedding alone, \
         {by_both}/{tried} by both"
    );
    assert!(tried >= 6, "{tried} candidates");
    assert!(by_print * 4 >= tried * 3, "{by_print}/{tried}");
    assert!(by_both >= by_profile, "{by_both} < {by_profile}");
    assert!(by_both * 4 >= tried * 3, "{by_both}/{tried}");
}
