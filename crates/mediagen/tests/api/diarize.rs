//! Diarization through `POST /v1/speech-to-text` (`diarize: true`): a real
//! two-person telephone conversation against its reference turns, and
//! one-, two- and three-speaker conversations built here from our own
//! voices (Kokoro and Piper, through the text-to-speech API), with turns
//! under 2 s, scored by diarization error rate against the turns we made.

use serde_json::Value;

use crate::helpers::{assert_error, form, wav, Backend, TestApp};
use crate::stt::synthesize;
use mediagen_media::audio::{parse_wav, resample};

const RATE: u32 = 16_000;

/// A conversation's lines, said in turn by its speakers; short replies
/// among them.
const LINES: [&str; 12] = [
    "So tell me about the project you started last year.",
    "Well, it began as a small idea in my garage.",
    "Really?",
    "A way to translate videos into other languages automatically.",
    "That sounds ambitious.",
    "It was. The first version took hours for a single minute of video.",
    "And now?",
    "Now it runs faster than real time on an ordinary laptop.",
    "No way.",
    "We rewrote the speech engine twice before it was good enough.",
    "What comes next for you?",
    "Next, every speaker in a video keeps their own voice.",
];

/// `text` in `voice`, 16 kHz.
async fn say(app: &TestApp, key: &str, voice: &str, text: &str) -> Vec<f32> {
    let audio = parse_wav(&synthesize(app, key, voice, text, "wav").await).expect("a wav");
    resample(&audio.samples, audio.sample_rate, RATE)
}

/// Every line in `voice`, its own silence trimmed so a turn's bounds are
/// its speech's.
async fn lines(app: &TestApp, key: &str, voice: &str) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for line in LINES {
        let speech = say(app, key, voice, line).await;
        let loud = |s: &f32| s.abs() > 0.01;
        let first = speech.iter().position(loud).unwrap_or(0);
        let last = speech
            .iter()
            .rposition(loud)
            .map_or(speech.len(), |i| i + 1);
        out.push(speech[first..last].to_vec());
    }
    out
}

/// The lines said in turn by the `voices` (each voice's lines from
/// [`lines`]), with `pauses` (seconds, in turn) between them, as a WAV
/// file; and the true turns `(start, end, speaker)` in seconds.
fn conversation(voices: &[&Vec<Vec<f32>>], pauses: &[f64]) -> (Vec<u8>, Vec<(f64, f64, usize)>) {
    let mut audio = vec![0f32; RATE as usize / 2];
    let mut turns = Vec::new();
    for k in 0..LINES.len() {
        let speaker = k % voices.len();
        let at = audio.len();
        audio.extend_from_slice(&voices[speaker][k]);
        turns.push((
            at as f64 / RATE as f64,
            audio.len() as f64 / RATE as f64,
            speaker,
        ));
        let pause = pauses[k % pauses.len()];
        audio.extend(std::iter::repeat_n(0.0, (pause * RATE as f64) as usize));
    }
    (wav(&audio, RATE), turns)
}

/// Diarization error rate of `hypothesis` turns against `reference`
/// (missed speech, false alarm and confusion over the reference's speech,
/// in 10-ms steps, a 0.25-s collar around every reference boundary not
/// scored, the best one-to-one mapping of speakers).
fn der(reference: &[(f64, f64, usize)], hypothesis: &[(f64, f64, usize)]) -> f64 {
    let step = 0.01;
    let end = reference
        .iter()
        .chain(hypothesis)
        .map(|t| t.1)
        .fold(0.0, f64::max)
        + 1.0;
    let n = (end / step) as usize;
    let mut truth = vec![None; n];
    let mut scored = vec![true; n];
    for &(s, e, k) in reference {
        for slot in &mut truth[(s / step) as usize..((e / step) as usize).min(n)] {
            *slot = Some(k);
        }
        for b in [s, e] {
            let (lo, hi) = (
                ((b - 0.25).max(0.0) / step) as usize,
                (((b + 0.25) / step) as usize).min(n),
            );
            scored[lo..hi].iter_mut().for_each(|x| *x = false);
        }
    }
    let mut hyp = vec![None; n];
    for &(s, e, k) in hypothesis {
        for slot in &mut hyp[(s / step) as usize..((e / step) as usize).min(n)] {
            *slot = Some(k);
        }
    }
    let speakers_h = hypothesis.iter().map(|t| t.2 + 1).max().unwrap_or(0);
    let speakers_r = reference.iter().map(|t| t.2 + 1).max().unwrap_or(0);
    // Every mapping of hypothesis speakers to reference speakers (or none).
    let mut best = f64::MAX;
    let options = speakers_r + 1;
    for code in 0..options.pow(speakers_h as u32) {
        let map: Vec<Option<usize>> = (0..speakers_h)
            .map(|h| {
                let r = code / options.pow(h as u32) % options;
                (r < speakers_r).then_some(r)
            })
            .collect();
        let used: Vec<usize> = map.iter().flatten().copied().collect();
        if (1..used.len()).any(|i| used[..i].contains(&used[i])) {
            continue;
        }
        let (mut errors, mut total) = (0usize, 0usize);
        for i in (0..n).filter(|&i| scored[i]) {
            let mapped = hyp[i].map(|h: usize| map[h]);
            match (truth[i], mapped) {
                (Some(r), Some(Some(h))) if r == h => total += 1,
                (Some(_), _) => {
                    total += 1;
                    errors += 1;
                }
                (None, Some(_)) => errors += 1,
                (None, None) => {}
            }
        }
        best = best.min(errors as f64 / total.max(1) as f64);
    }
    best
}

/// The turns a diarized result gives: its segments with their speakers.
fn turns_of(result: &Value) -> Vec<(f64, f64, usize)> {
    result["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let who = s["speaker"].as_str().expect("every segment has a speaker");
            let k = who.strip_prefix("speaker_").unwrap().parse().unwrap();
            (s["start"].as_f64().unwrap(), s["end"].as_f64().unwrap(), k)
        })
        .collect()
}

async fn diarized(app: &TestApp, key: &str, wav: Vec<u8>, fields: &[(&str, &str)]) -> Value {
    let r = app
        .post_form(
            "/v1/speech-to-text",
            key,
            form(vec![("file", wav, "talk.wav")], fields),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    job["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by `make test-long`"]
async fn speech_to_text_says_who_speaks_when() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 300.0).await;
    let (_, key) = app.account(1_000_000, "write").await;
    let woman = app
        .first_voice(&key, "engine=kokoro&gender=female&language=en-US")
        .await;
    let man = app
        .first_voice(&key, "engine=kokoro&gender=male&language=en-GB")
        .await;
    let joe = app.first_voice(&key, "engine=piper").await;

    // Bad options are refused before any work, naming the parameter.
    let wav = wav(&[0.0; 16_000], RATE);
    for (fields, parameter) in [
        (vec![("numSpeakers", "2")], "numSpeakers"),
        (
            vec![("diarize", "true"), ("numSpeakers", "0")],
            "numSpeakers",
        ),
        (
            vec![("diarize", "true"), ("numSpeakers", "33")],
            "numSpeakers",
        ),
        (vec![("diarize", "maybe")], "diarize"),
    ] {
        let r = app
            .post_form(
                "/v1/speech-to-text",
                &key,
                form(vec![("file", wav.clone(), "a.wav")], &fields),
            )
            .await;
        let body = assert_error(r, 400, "invalid_parameter").await;
        assert_eq!(body["error"]["details"]["parameter"], parameter, "{body}");
    }

    let (woman, man, joe) = (
        lines(&app, &key, &woman).await,
        lines(&app, &key, &man).await,
        lines(&app, &key, &joe).await,
    );
    let pauses = [0.3, 0.8, 0.5, 0.6];

    // Two speakers, subtitles with voices.
    let (two, truth2) = conversation(&[&woman, &man], &pauses);
    let r = diarized(
        &app,
        &key,
        two,
        &[("diarize", "true"), ("responseFormat", "vtt")],
    )
    .await;
    let der2 = der(&truth2, &turns_of(&r));
    let subtitles = r["subtitles"].as_str().unwrap();
    assert!(
        subtitles.contains("<v speaker_0>") && subtitles.contains("<v speaker_1>"),
        "{subtitles}"
    );
    assert_eq!(
        r["speakers"].as_array().unwrap().len(),
        2,
        "{}",
        r["speakers"]
    );

    // The same two taking turns without a pause (50 ms).
    let (tight, truth_tight) = conversation(&[&woman, &man], &[0.05]);
    let r = diarized(&app, &key, tight, &[("diarize", "true")]).await;
    let der_tight = der(&truth_tight, &turns_of(&r));
    assert_eq!(
        r["speakers"].as_array().unwrap().len(),
        2,
        "{}",
        r["speakers"]
    );

    // Three speakers, every word labelled.
    let (three, truth3) = conversation(&[&woman, &man, &joe], &pauses);
    let r3 = diarized(
        &app,
        &key,
        three,
        &[
            ("diarize", "true"),
            ("responseFormat", "verbose_json"),
            ("timestampGranularities", "word"),
        ],
    )
    .await;
    let der3 = der(&truth3, &turns_of(&r3));
    let words = r3["words"].as_array().unwrap();
    assert!(
        !words.is_empty() && words.iter().all(|w| w["speaker"].is_string()),
        "{}",
        r3["words"]
    );
    let speakers = r3["speakers"].as_array().unwrap();
    assert_eq!(speakers.len(), 3, "{}", r3["speakers"]);
    let spoken: f64 = speakers
        .iter()
        .map(|s| s["seconds"].as_f64().unwrap())
        .sum();
    let truth_spoken: f64 = truth3.iter().map(|t| t.1 - t.0).sum();
    assert!(
        (spoken - truth_spoken).abs() < 0.15 * truth_spoken,
        "{spoken} vs {truth_spoken}"
    );

    // One speaker never splits in two.
    let (one, truth1) = conversation(&[&man], &pauses);
    let r1 = diarized(&app, &key, one, &[("diarize", "true")]).await;
    let der1 = der(&truth1, &turns_of(&r1));
    assert_eq!(
        r1["speakers"].as_array().unwrap().len(),
        1,
        "{}",
        r1["speakers"]
    );
    assert!(r1.get("words").is_none(), "words only when asked");

    eprintln!(
        "diarization error rate: one speaker {:.1} %, two {:.1} %, two without pauses {:.1} %, three {:.1} %",
        der1 * 100.0,
        der2 * 100.0,
        der_tight * 100.0,
        der3 * 100.0
    );
    // The diarizer's networks were trained on real speech (the real
    // conversation of `a_real_conversation_keeps_its_overlap`: 4–6 %);
    // on these synthetic voices it measured 2.3 % for one, 2.2 % for
    // two, 8.0 % for two without pauses and 4.5 % for three
    // (docs/voice.md, Speakers).
    for (name, rate, most) in [
        ("one", der1, 0.10),
        ("two", der2, 0.20),
        ("two without pauses", der_tight, 0.20),
        ("three", der3, 0.25),
    ] {
        assert!(rate <= most, "{name} speakers: DER {:.1} %", rate * 100.0);
    }
}

/// A two-person conversation dubbed with `voiceMode: clone`: each speaker
/// gets a voice of their own (a neural clone searched from their own
/// lines), and the dub keeps them apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by `make test-long`"]
async fn a_conversation_is_dubbed_with_a_voice_for_each_speaker() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 300.0).await;
    let (_, key) = app.account(1_000_000, "write").await;
    // A high woman's voice and a low man's, as in an interview (Kokoro's
    // Bella and Lewis: median pitches of 185 and 82 Hz).
    let woman = app.first_voice(&key, "engine=kokoro&q=bella").await;
    let man = app.first_voice(&key, "engine=kokoro&q=lewis").await;
    let (woman, man) = (
        lines(&app, &key, &woman).await,
        lines(&app, &key, &man).await,
    );
    let (talk, _) = conversation(&[&woman, &man], &[0.3, 0.8, 0.5, 0.6]);
    let r = app
        .post_form(
            "/v1/dubbing",
            &key,
            form(
                vec![("file", talk, "talk.wav")],
                &[
                    ("targetLanguage", "es"),
                    ("voiceMode", "clone"),
                    ("format", "wav"),
                    ("keepBackground", "false"),
                ],
            ),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    let id = job["id"].as_str().unwrap().to_owned();
    let job = app
        .wait_job(&key, &id, std::time::Duration::from_secs(600), |j| {
            j["status"] == "completed" || j["status"] == "failed"
        })
        .await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    let speakers = result["speakers"].as_array().expect("speakers");
    assert_eq!(speakers.len(), 2, "{}", result["speakers"]);
    assert_ne!(
        speakers[0]["voiceId"], speakers[1]["voiceId"],
        "{}",
        result["speakers"]
    );
    assert!(
        speakers
            .iter()
            .all(|s| s["seconds"].as_f64().unwrap() > 5.0),
        "{}",
        result["speakers"]
    );
    // Each says enough for a neural clone of their own voice. The searches
    // share the 120 s the hold pays for: where the first speaker's took
    // more than 80 s (a loaded machine: its judging overran), the next is
    // left under the 40 s a search needs and keeps its WORLD part, by
    // design. Nothing else may leave a speaker without one.
    let neural = speakers.iter().filter(|s| s["clone"] == "neural").count();
    let voice_seconds = result["timings"]["voice"].as_f64().unwrap();
    assert!(
        neural == 2 || (neural == 1 && voice_seconds > 80.0),
        "{} (timings {})",
        result["speakers"],
        result["timings"]
    );
    assert_eq!(speakers[0]["clone"], "neural", "{}", result["speakers"]);

    // Each speaker's dubbed lines, as heard in the dub.
    let dubbed = crate::voice_clone::pcm(&app.download(result["audioUrl"].as_str().unwrap()).await);
    let mut parts: Vec<Vec<f32>> = vec![Vec::new(); 2];
    for s in result["segments"].as_array().unwrap() {
        let who = s["speaker"].as_str().expect("every line has a speaker");
        let k: usize = who.strip_prefix("speaker_").unwrap().parse().unwrap();
        let at = |f: &str| ((s[f].as_f64().unwrap() * 16_000.0) as usize).min(dubbed.len());
        parts[k].extend_from_slice(&dubbed[at("spokenStart")..at("spokenEnd")]);
    }
    let pitch: Vec<f64> = parts
        .iter()
        .map(|p| crate::voice_clone::median_pitch(p))
        .collect();
    let (high, low) = (pitch[0].max(pitch[1]), pitch[0].min(pitch[1]));
    let encoder =
        mediagen_speakers::encoder::SpeakerEncoder::load(&crate::helpers::models_dir(), 2)
            .expect("run scripts/models.sh");
    let voices: Vec<_> = parts
        .iter()
        .map(|p| encoder.embed(p).unwrap().expect("speech"))
        .collect();
    let alike = voices[0].similarity(&voices[1]);
    eprintln!("dubbed speakers: median pitch {pitch:?} Hz, similarity {alike:.3}");
    assert!(high >= 1.3 * low, "pitches {pitch:?}");
    assert!(
        alike < mediagen_speakers::diarize::THRESHOLD,
        "similarity {alike}"
    );

    // The first line given to the other speaker: spoken again in their
    // voice, every other line as it was.
    let first = &result["segments"][0];
    let (was, other) = match first["speaker"].as_str() {
        Some("speaker_0") => (0, "speaker_1"),
        _ => (1, "speaker_0"),
    };
    let path = format!("/v1/dubbing/{id}/segments");
    for (body, status) in [
        (
            serde_json::json!({"segments": [{"index": 0, "speaker": "speaker_7"}]}),
            422,
        ),
        (serde_json::json!({"segments": [{"index": 0}]}), 400),
    ] {
        let r = app.post(&path, &key, body).await;
        assert_eq!(r.status(), status);
    }
    let r = app
        .post(
            &path,
            &key,
            serde_json::json!({"segments": [{"index": 0, "speaker": other}]}),
        )
        .await;
    assert_eq!(r.status(), 202);
    let edit: Value = r.json().await.unwrap();
    let edit = app
        .wait_job(
            &key,
            edit["id"].as_str().unwrap(),
            std::time::Duration::from_secs(300),
            |j| j["status"] == "completed" || j["status"] == "failed",
        )
        .await;
    assert_eq!(edit["status"], "completed", "{edit}");
    let moved = &edit["result"]["segments"][0];
    assert_eq!(moved["speaker"], other, "{moved}");
    assert_eq!(moved["translatedText"], first["translatedText"]);
    let redub = crate::voice_clone::pcm(
        &app.download(edit["result"]["audioUrl"].as_str().unwrap())
            .await,
    );
    let at = |f: &str| ((moved[f].as_f64().unwrap() * 16_000.0) as usize).min(redub.len());
    let now = crate::voice_clone::median_pitch(&redub[at("spokenStart")..at("spokenEnd")]);
    eprintln!(
        "line 0: {} Hz as {}, {now} Hz as {other}",
        pitch[was], first["speaker"]
    );
    assert!(
        (now / pitch[1 - was] - 1.0).abs() < (now / pitch[was] - 1.0).abs(),
        "{now} Hz: nearer {} Hz ({other}) than {} Hz",
        pitch[1 - was],
        pitch[was]
    );
}

/// The reference turns of the pyannote.audio wheel's sample conversation.
fn sample_turns() -> Vec<(f64, f64, usize)> {
    let rttm = std::fs::read_to_string(crate::helpers::models_dir().join("diarize/sample.rttm"))
        .expect("installed by scripts/models.sh");
    let mut names: Vec<String> = Vec::new();
    rttm.lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (start, dur): (f64, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            if !names.iter().any(|n| n == f[7]) {
                names.push(f[7].to_owned());
            }
            let k = names.iter().position(|n| n == f[7]).unwrap();
            (start, start + dur, k)
        })
        .collect()
}

/// A real two-person telephone conversation (the pyannote.audio wheel's
/// sample, with its reference turns): two speakers, the turns near the
/// reference's, the stretches where both talk at once reported as
/// `overlaps` and named in the subtitles; the speaker counts asked for
/// are honoured and checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_conversation_keeps_its_overlap() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 300.0).await;
    let (_, key) = app.account(100_000, "write").await;
    let sample = std::fs::read(crate::helpers::models_dir().join("diarize/sample.wav")).unwrap();
    let fields = [
        ("diarize", "true"),
        ("language", "en"),
        ("responseFormat", "verbose_json"),
        ("timestampGranularities", "word"),
    ];
    let result = diarized(&app, &key, sample.clone(), &fields).await;
    let speakers = result["speakers"].as_array().unwrap();
    assert_eq!(speakers.len(), 2, "{}", result["speakers"]);
    let error = der(&sample_turns(), &turns_of(&result));
    let overlaps = result["overlaps"].as_array().expect("overlaps listed");
    eprintln!(
        "real conversation: DER {:.1} %, {} overlaps",
        100.0 * error,
        overlaps.len()
    );
    assert!(error < 0.10, "DER {:.1} %", 100.0 * error);
    assert!(!overlaps.is_empty());
    for o in overlaps {
        let (start, end) = (o["start"].as_f64().unwrap(), o["end"].as_f64().unwrap());
        assert!(start < end && end <= 30.1, "{o}");
        assert_eq!(
            o["speakers"],
            serde_json::json!(["speaker_0", "speaker_1"]),
            "{o}"
        );
    }
    // Each is one of the reference's overlaps, and at least two of its
    // three longest (0.4 s or more) are found.
    let meets = |o: &serde_json::Value, (start, end): (f64, f64)| {
        o["start"].as_f64().unwrap() < end && o["end"].as_f64().unwrap() > start
    };
    const REFERENCE: [(f64, f64); 6] = [
        (8.32, 8.35),
        (9.92, 10.02),
        (10.57, 11.03),
        (14.49, 14.7),
        (18.15, 18.59),
        (27.85, 28.5),
    ];
    for o in overlaps {
        assert!(REFERENCE.iter().any(|&r| meets(o, r)), "{o} is no overlap");
    }
    let longest = [REFERENCE[2], REFERENCE[4], REFERENCE[5]];
    let found = longest
        .iter()
        .filter(|&&r| overlaps.iter().any(|o| meets(o, r)))
        .count();
    assert!(found >= 2, "{overlaps:?}");

    // Subtitles name both voices where a line is spoken over.
    let srt = diarized(
        &app,
        &key,
        sample.clone(),
        &[
            ("diarize", "true"),
            ("language", "en"),
            ("responseFormat", "srt"),
        ],
    )
    .await;
    let subtitles = srt["subtitles"].as_str().unwrap();
    assert!(
        subtitles.contains("[speaker_0 + speaker_1]")
            || subtitles.contains("[speaker_1 + speaker_0]"),
        "{subtitles}"
    );

    // The counts asked for.
    let one = diarized(
        &app,
        &key,
        sample.clone(),
        &[
            ("diarize", "true"),
            ("language", "en"),
            ("maxSpeakers", "1"),
        ],
    )
    .await;
    assert_eq!(
        one["speakers"].as_array().unwrap().len(),
        1,
        "{}",
        one["speakers"]
    );
    for (fields, name) in [
        (
            vec![
                ("diarize", "true"),
                ("minSpeakers", "3"),
                ("maxSpeakers", "2"),
            ],
            "maxSpeakers",
        ),
        (
            vec![
                ("diarize", "true"),
                ("numSpeakers", "2"),
                ("minSpeakers", "2"),
            ],
            "minSpeakers",
        ),
        (vec![("maxSpeakers", "2")], "maxSpeakers"),
        (
            vec![("diarize", "true"), ("minSpeakers", "33")],
            "minSpeakers",
        ),
    ] {
        let r = app
            .post_form(
                "/v1/speech-to-text",
                &key,
                form(vec![("file", sample.clone(), "talk.wav")], &fields),
            )
            .await;
        let body = assert_error(r, 400, "invalid_parameter").await;
        assert_eq!(body["error"]["details"]["parameter"], name, "{body}");
    }
}
