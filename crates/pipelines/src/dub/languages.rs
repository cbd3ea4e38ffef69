//! The language pairs dubbing can do with the engines installed.

use mediagen_jobs::dub::{DubLanguages, Pair, Via};
use mediagen_speech::stt::{languages as stt_languages, SttCatalog};
use mediagen_speech::translate::Translator;
use mediagen_speech::tts::TtsCatalog;

/// Every pair whose source the recognizer hears, whose translation is
/// installed (or is whisper's, into English) and whose target a voice
/// speaks.
pub fn dub_languages(
    stt: &SttCatalog,
    tts: &TtsCatalog,
    translator: &dyn Translator,
) -> DubLanguages {
    let spoken = |lang: &str| {
        tts.voices().iter().any(|v| {
            v.languages
                .iter()
                .any(|l| l.to_ascii_lowercase().starts_with(lang))
        })
    };
    let multilingual = stt.model(None).is_some_and(|m| m.multilingual());
    let heard = |lang: &str| stt.model(None).is_some() && (multilingual || lang == "en");
    // Text translation where a route is installed (whisper base's
    // translate task drifts from what was said); whisper's otherwise.
    let mut pairs: Vec<Pair> = translator
        .pairs()
        .into_iter()
        .filter(|(source, target)| heard(source) && spoken(target))
        .map(|(source, target)| Pair {
            source,
            target,
            translator: Via::Apertium,
        })
        .collect();
    if multilingual && spoken("en") {
        for source in stt_languages().into_iter().filter(|l| *l != "en") {
            if !pairs.iter().any(|p| p.source == source && p.target == "en") {
                pairs.push(Pair {
                    source: source.to_owned(),
                    target: "en".to_owned(),
                    translator: Via::Whisper,
                });
            }
        }
    }
    pairs.sort_by(|a, b| (&a.source, &a.target).cmp(&(&b.source, &b.target)));
    DubLanguages { pairs }
}
