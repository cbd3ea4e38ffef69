//! What the benches' examples share.

use std::path::Path;
use std::process::Command;

/// An audio file as mono f32 samples at `rate`, decoded by ffmpeg.
pub fn decode(path: &Path, rate: u32) -> Vec<f32> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "f32le", "-ac", "1", "-ar"])
        .arg(rate.to_string())
        .arg("pipe:1")
        .output()
        .expect("ffmpeg");
    out.stdout
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A speaker's utterances in `dir` (flac or wav files, in name order), at
/// `rate`.
pub fn utterances(dir: &Path, rate: u32) -> Vec<Vec<f32>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("speaker dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "flac" || e == "wav"))
        .collect();
    files.sort();
    files.iter().map(|f| decode(f, rate)).collect()
}

/// A reader's utterances split as the clone benches use them: the first
/// up to 45 s, the samples a clone is made from, and the rest, held out;
/// and the samples' seconds.
#[allow(dead_code)] // not every example splits
pub fn reader(dir: &Path, rate: u32) -> (Vec<Vec<f32>>, Vec<Vec<f32>>, f64) {
    let (mut samples, mut held) = (Vec::new(), Vec::new());
    let mut total = 0.0;
    for pcm in utterances(dir, rate) {
        let len = pcm.len() as f64 / f64::from(rate);
        if total + len <= 45.0 && held.is_empty() {
            total += len;
            samples.push(pcm);
        } else {
            held.push(pcm);
        }
    }
    (samples, held, total)
}

/// Said by every voice a clone bench judges: none of these is a sentence
/// the clone job hears or judges with.
#[allow(dead_code)] // not every example judges clones
pub const BENCH_SENTENCES: [&str; 10] = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.",
    "A large size in stockings is hard to sell.",
];

/// [`BENCH_SENTENCES`] in Spanish: said by a clone speaking Spanish
/// (`languageCode: es`), WER only.
#[allow(dead_code)] // not every example speaks Spanish
pub const SPANISH_SENTENCES: [&str; 10] = [
    "La canoa de abedul se deslizó sobre las tablas lisas.",
    "Pega la hoja sobre el fondo azul oscuro.",
    "Es fácil saber la profundidad de un pozo.",
    "Hoy en día una pata de pollo es un plato raro.",
    "El arroz se sirve a menudo en cuencos redondos.",
    "El jugo de los limones hace un buen ponche.",
    "La caja fue lanzada junto al camión aparcado.",
    "Los cerdos comieron maíz picado y restos de comida.",
    "Nos esperaban cuatro horas de trabajo constante.",
    "Una talla grande de medias es difícil de vender.",
];
