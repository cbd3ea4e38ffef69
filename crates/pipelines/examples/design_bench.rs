//! The voice-design bench (`bench/voice_design.sh`): for a set of
//! descriptions, the three previews each makes, measured: median pitch and
//! speaking rate (what the words ask to move), the accent (the lead voice's
//! language), how alike the three are to one another against how alike
//! each is to itself on another sentence (GE2E), and the recogniser's WER
//! on each preview. Prints a markdown table.
//!
//! `cargo run --release -p mediagen-pipelines --example design_bench -- MODELS`

use std::path::PathBuf;

use mediagen_jobs::voice_design::{read, DesignRequest};
use mediagen_media::audio::resample;
use mediagen_pipelines::tts::{speak_neural, Styled};
use mediagen_pipelines::voice_design::design_voices;
use mediagen_speech::stt::wer::spoken_word_error_rate;
use mediagen_speech::stt::{transcribe, SttCatalog, SttOptions};
use mediagen_speech::tts::{Style, TtsCatalog};

const SAID: &str = "The quick brown fox jumps over the lazy dog near the old stone bridge.";
const OTHER: &str = "Please call Stella and ask her to bring these things with her from the store.";

const DESCRIPTIONS: &[&str] = &[
    "a man with a deep voice",
    "a man with a high voice",
    "a woman speaking slowly",
    "a woman speaking quickly",
    "a British woman",
    "an American woman",
    "a calm older man with a deep British voice, speaking slowly",
    "a bright young woman who talks quickly",
];

fn main() {
    let models = PathBuf::from(std::env::args().nth(1).expect("usage: design_bench MODELS"));
    let tts = TtsCatalog::discover(&models, 2);
    let stt = SttCatalog::discover(&models, 2, 1);
    let encoder = stt.encoder().expect("speaker encoder");
    let model = stt.model(None).expect("a recogniser");
    println!("| description | language | preview | lead | pitch Hz | rate /s | WER | alike to itself | alike to the others |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for description in DESCRIPTIONS {
        let req = DesignRequest {
            description: description.to_string(),
            attributes: read(description),
            text: SAID.to_owned(),
            seed: 1,
        };
        let made = design_voices(&tts, &req, &|| false, &|_| {}).expect("designed");
        let embed =
            |samples: &[f32], rate: u32| encoder.embed_at(samples, rate).expect("embedding");
        let prints: Vec<_> = made
            .iter()
            .map(|m| embed(&m.audio.samples, m.audio.sample_rate))
            .collect();
        for (i, m) in made.iter().enumerate() {
            let styled = Styled {
                style: Style {
                    table: &m.designed.table,
                    pitch: m.designed.pitch,
                    formant: m.designed.formant,
                    pace: m.designed.pace,
                },
                colour: &[],
            };
            let other = speak_neural(
                &tts,
                &m.base_voice_id,
                styled,
                OTHER,
                None,
                1.0,
                |_, _, _| true,
            )
            .expect("spoken");
            let itself = prints[i].similarity(&embed(&other.samples, other.sample_rate));
            let others: Vec<f32> = (0..prints.len())
                .filter(|&j| j != i)
                .map(|j| prints[i].similarity(&prints[j]))
                .collect();
            let others = others.iter().copied().fold(f32::MIN, f32::max);
            let pcm = resample(&m.audio.samples, m.audio.sample_rate, 16_000);
            let options = SttOptions {
                language: Some("en".into()),
                translate: false,
                prompt: None,
                words: false,
                decoding: mediagen_speech::stt::Decoding::Full,
            };
            let heard = transcribe(model.as_ref(), stt.gate(), stt.vad(), &pcm, &options)
                .expect("transcript")
                .text;
            let wer = spoken_word_error_rate("en", SAID, &heard);
            let lead = tts
                .voice(&m.base_voice_id)
                .map(|v| v.name.clone())
                .unwrap_or_default();
            println!(
                "| {description} | {} | {} | {lead} | {:.0} | {:.2} | {:.1} % | {itself:.3} | {others:.3} |",
                req.attributes.language,
                i + 1,
                m.profile.pitch_median,
                m.profile.speaking_rate,
                wer * 100.0,
            );
        }
    }
}
