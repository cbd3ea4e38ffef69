//! A two-speaker dub in clone mode, on real speakers (issue 49;
//! `bench/clone_dub.sh` runs it around a release server).
//!
//! ```text
//! clone_dub_bench compose OUT.wav TURNS.json A_DIR B_DIR
//! clone_dub_bench judge MODELS JOB.json DUB.wav TURNS.json A_DIR B_DIR
//! ```
//! `compose`: a conversation of speakers A and B taking turns, one
//! utterance each (the first five of each directory, 0.7 s apart), and
//! who speaks when. `judge`: the dub's lines of each speaker (told by
//! the turns, not by the dub's diarization) embedded together and
//! compared with each speaker's other utterances (the sixth on, which the
//! dub never heard), and the dub's Spanish heard by the recogniser against
//! the translated text it was given.
mod common;
use common::{decode, utterances};
use std::path::Path;
use std::process::Command;

use mediagen_media::audio::resample;
use mediagen_speakers::encoder::Embedding;
use mediagen_speech::stt::wer::spoken_word_error_rate;
use mediagen_speech::stt::{transcribe, SttCatalog, SttOptions};
use serde_json::{json, Value};

/// The rate everything is read at here.
const RATE: u32 = 16_000;
/// Utterances of each speaker in the conversation; the rest judge.
const TURNS: usize = 5;
/// Silence between turns, seconds.
const GAP: f64 = 0.7;

fn compose(out: &str, turns: &str, a: &str, b: &str) {
    let (a, b) = (
        utterances(Path::new(a), RATE),
        utterances(Path::new(b), RATE),
    );
    let mut audio: Vec<f32> = Vec::new();
    let mut who = Vec::new();
    for i in 0..TURNS {
        for (k, speaker) in [&a, &b].into_iter().enumerate() {
            let start = audio.len() as f64 / f64::from(RATE);
            audio.extend_from_slice(&speaker[i]);
            who.push(
                json!({"speaker": k, "start": start, "end": audio.len() as f64 / f64::from(RATE)}),
            );
            audio.extend(std::iter::repeat_n(0.0, (GAP * f64::from(RATE)) as usize));
        }
    }
    let raw = format!("{out}.f32");
    let bytes: Vec<u8> = audio.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(&raw, bytes).expect("write");
    let ok = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-y",
            "-f",
            "f32le",
            "-ar",
            &RATE.to_string(),
            "-ac",
            "1",
            "-i",
        ])
        .arg(&raw)
        .args(["-c:a", "pcm_s16le", out])
        .status()
        .expect("ffmpeg")
        .success();
    assert!(ok, "ffmpeg failed");
    let _ = std::fs::remove_file(raw);
    std::fs::write(turns, serde_json::to_vec(&who).unwrap()).expect("turns");
}

fn judge(models: &str, job: &str, dub: &str, turns: &str, dirs: [&str; 2]) {
    let stt = SttCatalog::discover(Path::new(models), 2, 1);
    let encoder = stt.encoder().expect("speaker encoder");
    let model = stt.model(None).expect("a recogniser");
    let job: Value = serde_json::from_slice(&std::fs::read(job).expect("job")).expect("json");
    let turns: Value = serde_json::from_slice(&std::fs::read(turns).expect("turns")).expect("json");
    let dubbed = decode(Path::new(dub), RATE);
    let result = &job["result"];
    // Whose turn holds the middle of a line of the original.
    let speaker_at = |t: f64| {
        turns
            .as_array()
            .unwrap()
            .iter()
            .find(|w| {
                w["start"].as_f64().unwrap() - GAP / 2.0 <= t
                    && t <= w["end"].as_f64().unwrap() + GAP / 2.0
            })
            .map(|w| w["speaker"].as_u64().unwrap() as usize)
    };
    let mut spoken: [Vec<f32>; 2] = [Vec::new(), Vec::new()];
    let mut said: [String; 2] = [String::new(), String::new()];
    let mut labels: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for s in result["segments"].as_array().expect("segments") {
        let middle = (s["start"].as_f64().unwrap() + s["end"].as_f64().unwrap()) / 2.0;
        let Some(k) = speaker_at(middle) else {
            continue;
        };
        let at = |f: &str| ((s[f].as_f64().unwrap() * f64::from(RATE)) as usize).min(dubbed.len());
        spoken[k].extend_from_slice(&dubbed[at("spokenStart")..at("spokenEnd")]);
        spoken[k].extend(std::iter::repeat_n(0.0, RATE as usize / 4));
        said[k].push_str(s["translatedText"].as_str().unwrap_or(""));
        said[k].push(' ');
        labels[k].push(s["speaker"].as_str().unwrap_or("-").to_owned());
    }
    let held: Vec<Embedding> = dirs
        .iter()
        .map(|d| {
            let each: Vec<Embedding> = utterances(Path::new(d), RATE)[TURNS..]
                .iter()
                .map(|u| encoder.embed_at(u, RATE).expect("embedding"))
                .collect();
            Embedding::mean(&each).expect("held-out utterances")
        })
        .collect();
    println!("speaker\tdubbed_s\tlabels\tclone\tto_self\tto_other\tspanish_wer");
    for k in 0..2 {
        let e = encoder.embed_at(&spoken[k], RATE).expect("embedding");
        let options = SttOptions {
            language: Some("es".into()),
            translate: false,
            prompt: None,
            words: false,
            decoding: mediagen_speech::stt::Decoding::Full,
        };
        let heard = transcribe(
            model.as_ref(),
            stt.gate(),
            stt.vad(),
            &resample(&spoken[k], RATE, 16_000),
            &options,
        )
        .expect("transcript")
        .text;
        // What was said and what was heard, for reading the WER's errors.
        eprintln!("said:  {}\nheard: {}", said[k].trim(), heard.trim());
        let mut names = labels[k].clone();
        names.dedup();
        let first = labels[k].first().cloned().unwrap_or_default();
        let part = result["speakers"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["id"] == first.as_str()))
            .map_or(result["clone"].clone(), |p| p["clone"].clone());
        println!(
            "{}\t{:.1}\t{}\t{}\t{:.3}\t{:.3}\t{:.1}",
            Path::new(dirs[k])
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("?"),
            spoken[k].len() as f64 / f64::from(RATE),
            names.join(","),
            part,
            e.similarity(&held[k]),
            e.similarity(&held[1 - k]),
            spoken_word_error_rate("es", &said[k], &heard) * 100.0,
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["compose", out, turns, a, b] => compose(out, turns, a, b),
        ["judge", models, job, dub, turns, a, b] => judge(models, job, dub, turns, [a, b]),
        _ => {
            eprintln!(
                "usage: clone_dub_bench compose OUT.wav TURNS.json A_DIR B_DIR\n       clone_dub_bench judge MODELS JOB.json DUB.wav TURNS.json A_DIR B_DIR"
            );
            std::process::exit(2);
        }
    }
}
