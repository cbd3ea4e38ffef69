//! The real engines on the models that `scripts/models.sh` installs (run by
//! `make test`'s setup). Missing models fail these tests: they are never
//! skipped.

use std::path::PathBuf;
use std::time::Instant;

use mediagen_engines::tts::TtsCatalog;

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
