//! Dubbing (`POST /v1/dubbing`): an English video dubbed into Spanish and a
//! Spanish clip dubbed into English, each checked by recognizing the dub
//! again; the picture kept; the language list; unsupported pairs and bad
//! options; a failed dub refunded.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{assert_error, form, talking_video, Backend, TestApp};
use crate::stt::wer;
use crate::voice_clone::{espeak, pcm, picture, transcribe_in};

const ENGLISH: &str = "Good morning and welcome to the city library. \
    The reading room is open every day until eight in the evening. \
    Please return your books to the front desk. The cat looked sneaky.";
const SPANISH: &str = "Buenos días y bienvenidos a la biblioteca de la ciudad. \
    La sala de lectura está abierta todos los días hasta las ocho de la tarde.";

/// Submits a dub and waits for it to end.
async fn dub(
    app: &TestApp,
    key: &str,
    file: Vec<u8>,
    name: &str,
    fields: &[(&str, &str)],
) -> Value {
    let r = app
        .post_form("/v1/dubbing", key, form(vec![("file", file, name)], fields))
        .await;
    assert_eq!(r.status(), 202, "dubbing is asynchronous");
    let job: Value = r.json().await.unwrap();
    let id = job["id"].as_str().unwrap().to_owned();
    app.wait_job(key, &id, Duration::from_secs(600), |j| {
        j["status"] == "completed" || j["status"] == "failed"
    })
    .await
}

/// The translated lines of a result, joined.
fn translated(result: &Value) -> String {
    result["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["translatedText"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every line ends inside its slot, borrowed silence and 10 % included,
/// unless its overrun is reported.
fn assert_fitted(result: &Value, max_speedup: f64) {
    let segments = result["segments"].as_array().unwrap();
    assert!(!segments.is_empty(), "{result}");
    for (i, s) in segments.iter().enumerate() {
        let f = |k: &str| s[k].as_f64().unwrap();
        let next = segments
            .get(i + 1)
            .map_or(f64::MAX, |n| n["start"].as_f64().unwrap());
        let room = next.max(f("end")) + 0.1 * (f("end") - f("start"));
        assert!(
            f("spokenEnd") <= room + f("overrun") + 1e-3,
            "line {i} runs over unreported: {s}"
        );
        assert!((1.0..=max_speedup + 1e-9).contains(&f("speedup")), "{s}");
        assert!(!s["sourceText"].as_str().unwrap().is_empty(), "{s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_english_video_is_dubbed_into_spanish() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let wav = espeak(dir.path(), "en.wav", "en-us", "50", ENGLISH);
    let video = dir.path().join("in.mp4");
    talking_video(&wav, &video);
    let input = std::fs::read(&video).unwrap();
    let job = dub(
        &app,
        &key,
        input.clone(),
        "in.mp4",
        &[("targetLanguage", "es")],
    )
    .await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    assert_eq!(result["sourceLanguage"], "en", "detected");
    assert_eq!(result["targetLanguage"], "es");
    assert_fitted(result, 1.3);

    // The same picture, a new sound track as long as the old one.
    let output = app.download(result["videoUrl"].as_str().unwrap()).await;
    assert_eq!(picture(&output), picture(&input));
    let (a, b) = (pcm(&input), pcm(&output));
    assert!(
        (b.len() as f64 / a.len() as f64 - 1.0).abs() < 0.01,
        "{} vs {}",
        b.len(),
        a.len()
    );
    // A word the translator does not know is kept, without its mark, and
    // listed (it is said as English says it).
    let segments = result["segments"].as_array().unwrap();
    let kept: Vec<&str> = segments
        .iter()
        .flat_map(|s| s["untranslated"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        kept.iter().any(|w| w.eq_ignore_ascii_case("sneaky")),
        "{result}"
    );
    for s in segments {
        let text = s["translatedText"].as_str().unwrap();
        assert!(!text.contains(['*', '@', '#']), "{s}");
        for w in s["untranslated"].as_array().into_iter().flatten() {
            assert!(text.contains(w.as_str().unwrap()), "{s}");
        }
    }
    // The new track speaks the translation.
    let expected = translated(result);
    let heard = transcribe_in(&app, &key, output, "es").await;
    let error = wer(&expected, &heard);
    println!("dubbed es: WER {error:.3}\n  said: {expected}\n  heard: {heard}\n  {result}");
    assert!(error < 0.25, "WER {error}: {heard} vs {expected}");

    // Subtitles of the original and of the dub.
    let transcript = String::from_utf8(
        app.download(result["transcriptUrl"].as_str().unwrap())
            .await,
    )
    .unwrap();
    assert!(transcript.starts_with("1\n00:00:"), "{transcript}");
    assert!(
        transcript.to_lowercase().contains("library"),
        "{transcript}"
    );
    let vtt = String::from_utf8(
        app.download(result["translatedVttUrl"].as_str().unwrap())
            .await,
    )
    .unwrap();
    assert!(vtt.starts_with("WEBVTT"), "{vtt}");
    let srt = String::from_utf8(
        app.download(result["translatedSubtitlesUrl"].as_str().unwrap())
            .await,
    )
    .unwrap();
    assert!(srt.to_lowercase().contains("biblioteca"), "{srt}");
    for stage in [
        "transcribe",
        "translate",
        "voice",
        "synthesize",
        "mix",
        "mux",
    ] {
        assert!(result["timings"][stage].as_f64().is_some(), "{stage}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by `make test-long`"]
async fn a_spanish_clip_is_dubbed_into_english() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let (_, key) = app.account(10_000, "write").await;
    // Spoken by a Kokoro Spanish voice (whisper hears espeak-ng's Spanish poorly).
    let voices: Value = app
        .get("/v1/voices?language=es&engine=kokoro&limit=1", &key)
        .await
        .json()
        .await
        .unwrap();
    let voice = voices["data"][0]["id"].as_str().unwrap();
    let job: Value = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": SPANISH, "voiceId": voice, "format": "wav"}),
        )
        .await
        .json()
        .await
        .unwrap();
    let input = app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await;
    let job = dub(
        &app,
        &key,
        input.clone(),
        "es.wav",
        &[
            ("targetLanguage", "en"),
            ("format", "wav"),
            ("keepBackground", "false"),
        ],
    )
    .await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    assert_eq!(result["sourceLanguage"], "es");
    assert_fitted(result, 1.3);
    let output = app.download(result["audioUrl"].as_str().unwrap()).await;
    let (a, b) = (pcm(&input), pcm(&output));
    assert!(
        (b.len() as f64 / a.len() as f64 - 1.0).abs() < 0.01,
        "{} vs {}",
        b.len(),
        a.len()
    );
    let expected = translated(result);
    assert!(expected.to_lowercase().contains("library"), "{result}");
    let heard = transcribe_in(&app, &key, output.clone(), "en").await;
    let error = wer(&expected, &heard);
    println!("dubbed en: WER {error:.3}\n  said: {expected}\n  heard: {heard}");
    assert!(error < 0.25, "WER {error}: {heard} vs {expected}");

    // One line said differently: only that line changes.
    let segments = result["segments"].as_array().unwrap().clone();
    assert!(segments.len() >= 2, "{result}");
    let last = segments.len() - 1;
    let line = "The reading room opens at nine in the morning.";
    let path = format!("/v1/dubbing/{}/segments", job["id"].as_str().unwrap());
    let body = json!({"segments": [{"index": last, "translatedText": line}]});
    let (_, other) = app.account(10_000, "write").await;
    assert_error(
        app.post(&path, &other, body.clone()).await,
        404,
        "resource_not_found",
    )
    .await;
    // Well-formed, but the dub has no such line: 422.
    let bad = json!({"segments": [{"index": 99, "translatedText": "x"}]});
    assert_error(
        app.post(&path, &key, bad).await,
        422,
        "unprocessable_entity",
    )
    .await;
    let twice = json!({"segments": [{"index": 0, "translatedText": "x"}, {"index": 0, "translatedText": "y"}]});
    assert_error(
        app.post(&path, &key, twice).await,
        422,
        "unprocessable_entity",
    )
    .await;
    let none = json!({"segments": []});
    assert_error(app.post(&path, &key, none).await, 400, "invalid_parameter").await;
    let r = app.post(&path, &key, body).await;
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let edit = app
        .wait_job(&key, &id, Duration::from_secs(300), |j| {
            j["status"] == "completed" || j["status"] == "failed"
        })
        .await;
    assert_eq!(edit["status"], "completed", "{edit}");
    let edited = &edit["result"];
    assert_eq!(edited["editedSegments"], json!([last]));
    assert_eq!(edited["segments"][last]["translatedText"], line);
    for (i, s) in segments.iter().enumerate().take(last) {
        assert_eq!(&edited["segments"][i], s, "line {i} unchanged");
    }
    let again = pcm(&app.download(edited["audioUrl"].as_str().unwrap()).await);
    assert_eq!(again.len(), b.len());
    let span = |s: &Value| {
        let at = |k: &str| (s[k].as_f64().unwrap() * 16_000.0) as usize;
        (at("spokenStart"), at("spokenEnd").min(b.len()))
    };
    for s in segments.iter().take(last) {
        let (from, to) = span(s);
        let most = (from..to)
            .map(|k| (again[k] - b[k]).abs())
            .fold(0.0, f32::max);
        assert!(most < 1e-3, "an unedited line changed by {most}: {s}");
    }
    let (from, to) = span(&edited["segments"][last]);
    let changed = (from..to)
        .filter(|&k| (again[k] - b[k]).abs() > 0.01)
        .count();
    assert!(
        changed > (to - from) / 4,
        "the edited line changed little: {changed}"
    );
    let heard = transcribe_in(
        &app,
        &key,
        app.download(edited["audioUrl"].as_str().unwrap()).await,
        "en",
    )
    .await;
    let heard = heard.to_lowercase();
    assert!(heard.contains("nine") || heard.contains(" 9 "), "{heard}");

    // A part dubbed: the lines from the second on; before it, the original.
    let from = segments[1]["start"].as_f64().unwrap();
    let job = dub(
        &app,
        &key,
        input,
        "es.wav",
        &[
            ("targetLanguage", "en"),
            ("format", "wav"),
            ("startTime", &format!("{:.3}", from - 0.05)),
        ],
    )
    .await;
    assert_eq!(job["status"], "completed", "{job}");
    let part = &job["result"];
    assert_eq!(
        part["segments"].as_array().unwrap().len(),
        segments.len() - 1,
        "{part}"
    );
    let c = pcm(&app.download(part["audioUrl"].as_str().unwrap()).await);
    let before = ((from - 0.1) * 16_000.0) as usize;
    let most = (0..before).map(|k| (c[k] - a[k]).abs()).fold(0.0, f32::max);
    assert!(most < 0.01, "the undubbed start changed by {most}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_pairs_and_bad_options_are_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let (_, reader) = app.account(10, "read").await;
    let languages: Value = app
        .get("/v1/dubbing/languages", &reader)
        .await
        .json()
        .await
        .unwrap();
    let pairs = languages["pairs"].as_array().unwrap();
    let has = |s: &str, t: &str| pairs.iter().any(|p| p["source"] == s && p["target"] == t);
    assert!(has("en", "es") && has("es", "en") && has("en", "fr") && has("de", "en"));
    assert!(!has("en", "en") && !has("en", "ja"));

    let dir = tempfile::tempdir().unwrap();
    let speech = std::fs::read(espeak(dir.path(), "a.wav", "en-us", "50", "Hello there.")).unwrap();
    for (fields, status, code) in [
        (vec![("targetLanguage", "ja")], 422, "unprocessable_entity"),
        (
            vec![("targetLanguage", "en"), ("sourceLanguage", "en")],
            422,
            "unprocessable_entity",
        ),
        (vec![], 400, "invalid_parameter"),
        (
            vec![("targetLanguage", "es"), ("maxSpeedup", "5")],
            400,
            "invalid_parameter",
        ),
        (
            vec![("targetLanguage", "es"), ("startTime", "60")],
            422,
            "unprocessable_entity",
        ),
        (
            vec![("targetLanguage", "es"), ("voiceId", "nobody")],
            404,
            "voice_not_found",
        ),
    ] {
        let r = app
            .post_form(
                "/v1/dubbing",
                &key,
                form(vec![("file", speech.clone(), "a.wav")], &fields),
            )
            .await;
        let body = assert_error(r, status, code).await;
        if fields == [("targetLanguage", "ja")] {
            assert!(body["error"]["details"]["supportedTargets"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "es"));
        }
    }
    let r = app
        .post_form(
            "/v1/dubbing",
            &reader,
            form(
                vec![("file", speech.clone(), "a.wav")],
                &[("targetLanguage", "es")],
            ),
        )
        .await;
    assert_error(r, 403, "insufficient_permissions").await;

    // Another account's file does not exist for this key; a dry run prices
    // the dubbed part only.
    let (_, other) = app.account(10_000, "write").await;
    let file: Value = app
        .post_form(
            "/v1/files",
            &key,
            form(vec![("file", speech.clone(), "a.wav")], &[]),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = file["id"].as_str().unwrap();
    let r = app
        .post(
            "/v1/dubbing",
            &other,
            json!({"fileId": id, "targetLanguage": "es"}),
        )
        .await;
    assert_error(r, 404, "resource_not_found").await;
    let priced: Value = app
        .post(
            "/v1/dubbing",
            &key,
            json!({"fileId": id, "targetLanguage": "es", "startTime": 0.5, "dryRun": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    let seconds = file["duration"].as_f64().unwrap() - 0.5;
    assert_eq!(
        priced["estimatedCredits"],
        json!(2 * seconds.ceil() as i64),
        "{priced}"
    );

    // No speech: the job fails and its credits come back.
    let tone = dir.path().join("tone.wav");
    let ok = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=4",
        ])
        .arg(&tone)
        .status()
        .unwrap();
    assert!(ok.success());
    let before = app.account_view(&key).await["credits"].clone();
    let job = dub(
        &app,
        &key,
        std::fs::read(&tone).unwrap(),
        "tone.wav",
        &[("targetLanguage", "es")],
    )
    .await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "no_speech", "{job}");
    assert_eq!(app.account_view(&key).await["credits"], before);
}
