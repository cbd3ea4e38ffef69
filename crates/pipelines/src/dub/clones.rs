//! `voiceMode: clone` with neural clones: each speaker of the original who
//! says enough gets a Kokoro style table searched from their own lines
//! (the `voice.clone` job's search, shorter), spoken with the phonemes of
//! a Kokoro voice of the target language, once the recogniser understands
//! it in that language. A speaker who says too little,
//! whose language (or the target) Kokoro does not speak, or who comes after
//! the dub's search time is spent keeps the closest voice converted toward
//! their profile (the cast's WORLD part).

use std::time::{Duration, Instant};

use mediagen_core::voice::styled_speaker;
use mediagen_core::ErrorCode;
use mediagen_jobs::dub::{CLONE_SEARCH, CLONE_SEARCH_PER_SPEAKER};
use mediagen_media::pcm::PcmFile;
use mediagen_speakers::encoder::Embedding;
use mediagen_speech::voice::RATE;
use mediagen_worker::JobFailure;

use super::cast::{lines_of, speech_of, Cast};
use crate::respeak::Line;
use crate::voice_clone::neural::Maker;

/// Seconds of a speaker's lines a neural clone needs (a third is held out
/// to judge it).
pub const MIN_SPEECH: f64 = 8.0;
/// Seconds of a speaker's lines the search hears at most.
const MAX_SPEECH: f64 = 45.0;
/// Less time than this left for a speaker: their part stays WORLD (the
/// judging after the search takes about half a minute).
const MIN_SEARCH: Duration = Duration::from_secs(40);

/// What the searches made: each part's style table (`None`: the part is
/// spoken as cast), and the seconds they took.
pub struct Cloned {
    pub tables: Vec<Option<Vec<f32>>>,
    pub seconds: f64,
}

/// Gives each WORLD part of `cast` (clone mode) a neural clone where it
/// can, within [`CLONE_SEARCH`] in all: the part then speaks through the
/// Kokoro voice of `target` of the speaker's gender, with the clone's
/// table kept under `key(part)` (the dub stores it there, for edits).
/// `report` sees the share of the parts done.
#[allow(clippy::too_many_arguments)]
pub fn clone_speakers(
    maker: &Maker,
    cast: &mut Cast,
    lines: &[Line],
    original: &PcmFile,
    source: &str,
    target: &str,
    key: impl Fn(usize) -> String,
    report: impl Fn(f32),
) -> Result<Cloned, JobFailure> {
    let started = Instant::now();
    let parts = cast.parts.len();
    let mut tables = vec![None; parts];
    // Each speaker's lines, and their voice as the encoder hears them: a
    // clone is searched to be like its speaker and unlike the others (two
    // speakers of like voices otherwise get clones as like each other).
    let samples: Vec<Vec<Vec<f32>>> = (0..parts)
        .map(|k| speech_of(original, lines_of(lines, &cast.who, k), MAX_SPEECH))
        .collect();
    let voices: Vec<Option<Embedding>> = samples
        .iter()
        .map(|s| {
            let encoder = maker.stt.encoder().ok()?;
            let each: Vec<Embedding> = s
                .iter()
                .filter_map(|piece| encoder.embed_at(piece, RATE).ok())
                .collect();
            Embedding::mean(&each)
        })
        .collect();
    for (k, table) in tables.iter_mut().enumerate() {
        report(k as f32 / parts as f32);
        let Some(profile) = cast.parts[k].toward.clone() else {
            continue;
        };
        let left = CLONE_SEARCH.saturating_sub(started.elapsed());
        let allowed = left.min(CLONE_SEARCH_PER_SPEAKER);
        let Some(speaker) = styled_speaker(maker.tts.voices(), &profile.gender, target) else {
            continue;
        };
        let said: f64 = lines_of(lines, &cast.who, k)
            .map(|l| (l.end - l.start).max(0.0))
            .sum();
        if allowed < MIN_SEARCH || said < MIN_SPEECH {
            continue;
        }
        let others = Embedding::mean(
            voices
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .filter_map(|(_, v)| v.as_ref()),
        );
        let made = match maker.make(
            &samples[k],
            &profile,
            source,
            None,
            others.as_ref(),
            Instant::now() + allowed,
        ) {
            Ok(made) => made,
            Err(e) if e.error().code == ErrorCode::Cancelled.as_str() => return Err(e),
            Err(e) => {
                // The part is still spoken, as cast: the dub goes on.
                tracing::warn!(error = %e, "a speaker's neural clone was not made");
                None
            }
        };
        let Some(voice) = made else { continue };
        // Heard in the target language too: a table found on the source
        // language's phonemes may not carry another's.
        if !maker.speaks_clearly(voice.styled().style, &speaker.id, target)? {
            tracing::info!(
                part = k,
                "a speaker's clone is not understood in the target language"
            );
            continue;
        }
        let part = &mut cast.parts[k];
        part.voice_id = speaker.id.clone();
        part.toward = None;
        part.neural = Some(voice.stored(key(k)));
        *table = Some(voice.styles);
    }
    report(1.0);
    // Charged for the time taken, never past what the hold has for it (a
    // first search of an installation also hears the stock voices).
    Ok(Cloned {
        tables,
        seconds: started.elapsed().min(CLONE_SEARCH).as_secs_f64(),
    })
}
