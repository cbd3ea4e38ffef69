use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{assert_error, form, Backend, TestApp};
use crate::tts::joe;

/// Word error rate of `hypothesis` against `reference` (lower-case words,
/// punctuation ignored, numbers as written by the recogniser normalised).
pub fn wer(reference: &str, hypothesis: &str) -> f64 {
    let numbers = |s: &str| s.to_lowercase().replace("5th", "fifth");
    mediagen_speech::stt::wer::word_error_rate(&numbers(reference), &numbers(hypothesis))
}

pub async fn synthesize(
    app: &TestApp,
    key: &str,
    voice: &str,
    text: &str,
    format: &str,
) -> Vec<u8> {
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": text, "voiceId": voice, "format": format}),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    app.client
        .get(job["result"]["audioUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec()
}

async fn transcribe(
    app: &TestApp,
    key: &str,
    bytes: Vec<u8>,
    name: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    app.post_form(
        "/v1/speech-to-text",
        key,
        form(vec![("file", bytes, name)], fields),
    )
    .await
}

/// The job a transcription answers with.
async fn transcribed(
    app: &TestApp,
    key: &str,
    bytes: Vec<u8>,
    name: &str,
    fields: &[(&str, &str)],
) -> Value {
    transcribe(app, key, bytes, name, fields)
        .await
        .json()
        .await
        .unwrap()
}

const ENGLISH: &str = "The old lighthouse keeper climbed the stairs every evening. He lit the lamp and watched the ships pass in the dark.";

async fn speech_round_trips_through_tts_and_stt(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.sync_wait_seconds = 120.0).await;
    let (_, key) = app.account(100_000, "write").await;

    // The default English voice (Kokoro), an mp3, detected as English.
    let voices: Value = app
        .get("/v1/voices?language=en-US&limit=1", &key)
        .await
        .json()
        .await
        .unwrap();
    let kokoro = voices["data"][0]["id"].as_str().unwrap().to_owned();
    let mp3 = synthesize(&app, &key, &kokoro, ENGLISH, "mp3").await;
    // The same speech on the other engine: whisper.cpp with the ggml file
    // (`base` is the CTranslate2 folder, so the file answers to its stem).
    let job = transcribed(
        &app,
        &key,
        mp3.clone(),
        "speech.mp3",
        &[("model", "ggml-base"), ("language", "en")],
    )
    .await;
    let w = wer(ENGLISH, job["result"]["text"].as_str().unwrap());
    assert!(w < 0.10, "WER {w} on whisper.cpp: {job}");
    let job = transcribed(&app, &key, mp3, "speech.mp3", &[]).await;
    assert_eq!(job["status"], "completed", "{job}");
    let r = &job["result"];
    assert_eq!(r["language"], "en");
    assert!(r["languageProbability"].as_f64().unwrap() > 0.5);
    let w = wer(ENGLISH, r["text"].as_str().unwrap());
    assert!(w < 0.10, "WER {w} on the default voice: {}", r["text"]);
    let duration = r["duration"].as_f64().unwrap();
    let credits = job["credits"].as_i64().unwrap();
    assert_eq!(credits, duration.ceil() as i64, "a credit per second");

    // Piper as ogg/opus, with srt; cues are monotonic and inside the audio.
    let voice = joe(&app, &key).await;
    let ogg = synthesize(&app, &key, &voice, ENGLISH, "ogg").await;
    let job = transcribed(
        &app,
        &key,
        ogg,
        "speech.ogg",
        &[("language", "en"), ("responseFormat", "srt")],
    )
    .await;
    let r = &job["result"];
    assert!(
        wer(ENGLISH, r["text"].as_str().unwrap()) < 0.10,
        "{}",
        r["text"]
    );
    let srt = r["subtitles"].as_str().unwrap();
    let mut last = 0.0;
    for line in srt.lines().filter(|l| l.contains(" --> ")) {
        let secs = |t: &str| {
            let (hms, ms) = t.trim().split_once(',').unwrap();
            let p: Vec<f64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
            p[0] * 3600.0 + p[1] * 60.0 + p[2] + ms.parse::<f64>().unwrap() / 1000.0
        };
        let (a, b) = line.split_once(" --> ").unwrap();
        let (a, b) = (secs(a), secs(b));
        assert!(
            a >= last && b >= a && b <= r["duration"].as_f64().unwrap() + 0.05,
            "{srt}"
        );
        last = b;
    }
    assert!(last > 0.0, "{srt}");
    let stored = app
        .client
        .get(r["subtitlesUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(stored, srt);

    // Spanish from espeak-ng, detected; vtt; and by fileId (JSON) with word timestamps.
    let es = Command::new("espeak-ng")
        .args([
            "-v",
            "es",
            "--stdout",
            "Hola, me llamo Pedro y vivo en Madrid. Me gusta mucho el fútbol.",
        ])
        .output()
        .unwrap()
        .stdout;
    let job = transcribed(
        &app,
        &key,
        es.clone(),
        "es.wav",
        &[("responseFormat", "vtt")],
    )
    .await;
    let r = &job["result"];
    assert_eq!(r["language"], "es", "{r}");
    assert!(r["subtitles"].as_str().unwrap().starts_with("WEBVTT\n\n"));
    // espeak-ng's Spanish is robotic: the language and the clear words are
    // what this checks (the neural voices are held to the WER bound above).
    let text = r["text"].as_str().unwrap().to_lowercase();
    assert!(
        text.contains("me gusta mucho") && text.contains("fútbol"),
        "{text}"
    );

    // A clear Spanish voice (Kokoro), uploaded once and used by fileId.
    let spanish: Value = app
        .get("/v1/voices?engine=kokoro&language=es&gender=female", &key)
        .await
        .json()
        .await
        .unwrap();
    let dora_id = spanish["data"][0]["id"].as_str().unwrap().to_owned();
    let dora = synthesize(
        &app,
        &key,
        &dora_id,
        "Hola, me llamo Pedro y vivo en Madrid. Me gusta mucho el fútbol.",
        "wav",
    )
    .await;
    let file: Value = app
        .client
        .post(format!("{}/v1/files", app.addr))
        .bearer_auth(&key)
        .multipart(reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(dora).file_name("es.wav"),
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(file["duration"].as_f64().unwrap() > 2.0, "{file}");
    let body = json!({"fileId": file["id"], "language": "es", "responseFormat": "verbose_json", "timestampGranularities": ["word"]});
    let job: Value = app
        .post("/v1/speech-to-text", &key, body)
        .await
        .json()
        .await
        .unwrap();
    let words = job["result"]["words"].as_array().unwrap();
    assert!(words.len() >= 10, "{words:?}");
    assert!(words
        .windows(2)
        .all(|w| w[0]["start"].as_f64() <= w[1]["start"].as_f64()));
    // Word times come from the audio: inside it, spread over it, each word
    // ending after it starts.
    let length = job["result"]["duration"].as_f64().unwrap();
    let time = |w: &Value, k: &str| w[k].as_f64().unwrap();
    assert!(words
        .iter()
        .all(|w| time(w, "start") <= time(w, "end") && time(w, "end") <= length + 0.05));
    let last = words.last().unwrap();
    assert!(time(last, "end") > 0.6 * length, "{last} of {length} s");
    let madrid = words
        .iter()
        .find(|w| w["word"].as_str().unwrap().contains("Madrid"));
    assert!(
        madrid.is_some_and(|w| time(w, "start") > 0.3 * length),
        "{words:?}"
    );

    // Translation to English.
    let body = json!({"fileId": file["id"], "task": "translate"});
    let job: Value = app
        .post("/v1/speech-to-text", &key, body)
        .await
        .json()
        .await
        .unwrap();
    let text = job["result"]["text"].as_str().unwrap().to_lowercase();
    assert!(
        text.contains("madrid")
            && (text.contains("my name") || text.contains("i live") || text.contains("football")),
        "{text}"
    );
}

async fn speech_to_text_refuses_bad_input(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1000, "write").await;
    let (_, other) = app.account(1000, "write").await;
    let wav = Command::new("espeak-ng")
        .args(["--stdout", "Testing one two three."])
        .output()
        .unwrap()
        .stdout;

    let b = assert_error(
        transcribe(&app, &key, b"just some text".to_vec(), "notes.mp3", &[]).await,
        415,
        "unsupported_media_type",
    )
    .await;
    assert_eq!(b["error"]["details"]["parameter"], "file");
    // A damaged mp4: the container is recognisable, its contents are not.
    let dir = tempfile::tempdir().unwrap();
    let mp4 = dir.path().join("a.mp4");
    let made = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=2",
            "-c:a",
            "aac",
        ])
        .arg(&mp4)
        .status()
        .unwrap();
    assert!(made.success());
    let mut damaged = std::fs::read(&mp4).unwrap();
    damaged.truncate(damaged.len() / 3);
    let b = assert_error(
        transcribe(&app, &key, damaged, "clip.mp4", &[]).await,
        422,
        "unreadable_media",
    )
    .await;
    assert!(b["error"]["details"]["reason"].is_string());

    for (fields, parameter) in [
        (vec![("language", "xx")], "language"),
        (vec![("language", "es"), ("model", "tiny.en")], "language"),
        (vec![("task", "dance")], "task"),
        (vec![("responseFormat", "docx")], "responseFormat"),
        (
            vec![("timestampGranularities", "word")],
            "timestampGranularities",
        ),
        (vec![("model", "huge")], "model"),
        (vec![("colour", "red")], "colour"),
        // A part that is not a list (`name[]`) is sent once.
        (vec![("language", "en"), ("language", "de")], "language"),
    ] {
        let b = assert_error(
            transcribe(&app, &key, wav.clone(), "a.wav", &fields).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(b["error"]["details"]["parameter"], parameter, "{fields:?}");
    }
    let b = assert_error(
        app.post("/v1/speech-to-text", &key, json!({"language": "en"}))
            .await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(b["error"]["details"]["parameter"], "fileId");
    assert_error(
        app.post("/v1/speech-to-text", &key, json!({"fileId": "file_nope"}))
            .await,
        404,
        "resource_not_found",
    )
    .await;

    // Another account's file is not there.
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(wav.clone()).file_name("a.wav"),
    );
    let theirs: Value = app
        .client
        .post(format!("{}/v1/files", app.addr))
        .bearer_auth(&other)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = app
        .post("/v1/speech-to-text", &key, json!({"fileId": theirs["id"]}))
        .await;
    assert_error(r, 404, "resource_not_found").await;

    // A dry run prices by the second without keeping the upload.
    let r: Value = transcribe(&app, &key, wav, "a.wav", &[("dryRun", "true")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["dryRun"], true);
    assert!(r["estimatedCredits"].as_i64().unwrap() >= 1);
    let files: Value = app.get("/v1/files", &key).await.json().await.unwrap();
    assert_eq!(files["pagination"]["total"], 0);

    // The languages it hears, by code and name.
    let heard = app.get_json("/v1/speech-to-text/languages", &key).await;
    let languages = heard["languages"].as_array().unwrap();
    assert!(languages.len() > 50, "{heard}");
    assert!(
        languages.contains(&json!({"code": "de", "name": "german"})),
        "{heard}"
    );
    assert!(!languages.iter().any(|l| l["code"] == "xx"));
}

crate::on_both_backends!(speech_to_text_refuses_bad_input);

/// Japanese and Mandarin on Kokoro voices (each read by its own
/// phonemizer), heard again by the recogniser told the language; and heard
/// without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn japanese_and_mandarin_are_spoken_and_heard_again() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let key = &app.admin_key;
    // Not among bench/languages/<lang>.txt's sentences (those are held out).
    for (language, voices, text) in [
        ("ja", 5, "駅の近くに新しい本屋ができました。"),
        ("zh", 8, "车站附近新开了一家书店。"),
    ] {
        let list = app
            .get_json(
                &format!("/v1/voices?language={language}&engine=kokoro"),
                key,
            )
            .await;
        assert_eq!(list["pagination"]["total"], voices, "{list}");
        let voice = list["data"][0]["id"].as_str().unwrap().to_owned();
        let wav = synthesize(&app, key, &voice, text, "wav").await;
        let file = format!("{language}.wav");
        let job = transcribed(&app, key, wav.clone(), &file, &[("language", language)]).await;
        let heard = job["result"]["text"].as_str().unwrap();
        let c = mediagen_speech::stt::wer::character_error_rate(text, heard);
        assert!(c <= 0.10, "{language} CER {c}: {heard}");
        let job = transcribed(&app, key, wav, &file, &[]).await;
        assert_eq!(job["result"]["language"], language, "{job}");
        // Streamed too: at least a second of 24 kHz 16-bit audio.
        let body = json!({"text": text, "voiceId": voice, "format": "pcm"});
        let r = crate::tts::stream(&app, key, body).await;
        assert_eq!(r.status(), 200);
        assert!(r.bytes().await.unwrap().len() > 48_000);
    }
}

/// The model round trip runs once, on SQLite: it exercises the engines, not
/// the database (the request path is covered on both by the test above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speech_round_trips_through_tts_and_stt_on_sqlite() {
    speech_round_trips_through_tts_and_stt(Backend::Sqlite).await
}
