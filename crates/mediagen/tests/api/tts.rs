use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

/// The id of the Piper voice `joe` (English, US).
pub async fn joe(app: &TestApp, key: &str) -> String {
    let voices: Value = app
        .get("/v1/voices?engine=piper", key)
        .await
        .json()
        .await
        .unwrap();
    voices["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "Joe")
        .expect("Joe is installed")["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Duration (s) and sample rate of an audio file, measured by decoding it
/// with ffmpeg to raw PCM at its own rate.
fn decoded(bytes: &[u8], format: &str, pcm_rate: u32) -> (f64, u32) {
    if format == "pcm" {
        return (bytes.len() as f64 / 2.0 / f64::from(pcm_rate), pcm_rate);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("a.{format}"));
    std::fs::write(&path, bytes).unwrap();
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "a:0",
            "-show_entries",
            "stream=sample_rate,codec_name",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let probe = String::from_utf8_lossy(&probe.stdout).to_string();
    let rate: u32 = probe
        .trim()
        .split(',')
        .find_map(|s| s.parse().ok())
        .unwrap_or(0);
    let pcm = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&path)
        .args(["-f", "s16le", "-ac", "1", "-ar", "8000", "pipe:1"])
        .output()
        .unwrap();
    assert!(pcm.status.success(), "ffmpeg decodes the {format} output");
    (pcm.stdout.len() as f64 / 2.0 / 8000.0, rate)
}

async fn every_format_is_real_audio_of_the_reported_duration(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    let voice = joe(&app, key).await;
    let text = "Hello world. This is a test of the speech system.";
    for (format, content_type) in [
        ("mp3", "audio/mpeg"),
        ("wav", "audio/wav"),
        ("ogg", "audio/ogg"),
        ("flac", "audio/flac"),
        ("pcm", "audio/L16"),
    ] {
        let r = app
            .post(
                "/v1/text-to-speech",
                key,
                json!({"text": text, "voiceId": voice, "format": format}),
            )
            .await;
        assert_eq!(r.status(), 200, "{format}");
        let job: Value = r.json().await.unwrap();
        assert_eq!(job["status"], "completed");
        let result = &job["result"];
        assert_eq!(result["format"], format);
        assert_eq!(result["characters"], text.chars().count());
        let duration = result["duration"].as_f64().unwrap();
        assert!(
            (2.0..6.0).contains(&duration),
            "{format}: {duration} s for two short sentences"
        );
        let audio = app
            .client
            .get(result["audioUrl"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(audio.headers()["content-type"], content_type);
        let bytes = audio.bytes().await.unwrap();
        let rate = result["sampleRate"].as_u64().unwrap() as u32;
        let (measured, file_rate) = decoded(&bytes, format, rate);
        assert!(
            (measured - duration).abs() < 0.1 + duration * 0.05,
            "{format}: decoded {measured} s, reported {duration} s"
        );
        if format != "ogg" {
            // Opus always decodes at 48 kHz whatever rate it was given.
            assert_eq!(file_rate, rate, "{format}");
        }
    }
    // Another rate on request.
    let job: Value = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": "Rate test.", "voiceId": voice, "format": "wav", "sampleRate": 16000}),
        )
        .await
        .json()
        .await
        .unwrap();
    let bytes = app
        .client
        .get(job["result"]["audioUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(decoded(&bytes, "wav", 0).1, 16000);
}

async fn validation_errors_name_the_parameter(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    let voice = joe(&app, key).await;
    let tts = |body: Value| app.post("/v1/text-to-speech", key, body);

    for (body, parameter) in [
        (json!({"text": "   \n ", "voiceId": voice}), "text"),
        (json!({"text": "a".repeat(5001), "voiceId": voice}), "text"),
        (
            json!({"text": "hi", "voiceId": voice, "format": "m4a"}),
            "format",
        ),
        (
            json!({"text": "hi", "voiceId": voice, "speed": 3.0}),
            "speed",
        ),
        (json!({"text": "hi"}), "voiceId"),
        (json!({"voiceId": voice}), "text"),
        (
            json!({"text": "hi", "voiceId": voice, "languageCode": "English"}),
            "languageCode",
        ),
    ] {
        let b = assert_error(tts(body.clone()).await, 400, "invalid_parameter").await;
        assert_eq!(b["error"]["details"]["parameter"], parameter, "{body}");
    }
    // Well-formed, but unusable: a rate the format lacks; nothing to say
    // (invisible characters, emoji, punctuation).
    for (body, parameter) in [
        (
            json!({"text": "hi", "voiceId": voice, "format": "ogg", "sampleRate": 22050}),
            "sampleRate",
        ),
        (
            json!({"text": "\u{200b}\u{200d}\u{feff}", "voiceId": voice}),
            "text",
        ),
        // U+0085 matches the schema's `\S` (ECMAScript), so it is not a
        // 400; it has nothing to say.
        (json!({"text": "\u{85}", "voiceId": voice}), "text"),
        (json!({"text": "🎉🎉 👍", "voiceId": voice}), "text"),
        (json!({"text": "?!… — ...", "voiceId": voice}), "text"),
        (
            json!({"text": "<speak>!!! <break time=\"1s\"/></speak>", "voiceId": voice}),
            "text",
        ),
        // Only a neural clone speaks a language other than its own.
        (
            json!({"text": "hola", "voiceId": voice, "languageCode": "es"}),
            "languageCode",
        ),
    ] {
        let b = assert_error(tts(body.clone()).await, 422, "unprocessable_entity").await;
        assert_eq!(b["error"]["details"]["parameter"], parameter, "{body}");
    }
    let before = app.account_view(key).await["credits"].clone();
    let b = assert_error(
        stream(&app, key, json!({"text": "👍", "voiceId": voice})).await,
        422,
        "unprocessable_entity",
    )
    .await;
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing to say"),
        "{b}"
    );
    assert_eq!(
        app.account_view(key).await["credits"],
        before,
        "nothing charged"
    );
    // Digits and any script are something to say.
    for text in ["42", "日本語", "Ωμέγα!"] {
        let r = tts(json!({"text": text, "voiceId": voice, "dryRun": true})).await;
        assert_eq!(r.status(), 200, "{text}");
    }
    let b = assert_error(
        tts(json!({"text": "hi", "voiceId": "nope"})).await,
        404,
        "voice_not_found",
    )
    .await;
    assert_eq!(b["error"]["details"]["parameter"], "voiceId");

    // Exactly 5000 characters (after trimming) is allowed: priced per character.
    let full = format!("  {}  ", "a".repeat(5000));
    let r: Value = tts(json!({"text": full, "voiceId": voice, "dryRun": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["estimatedCredits"], 5000);

    let read = app.key("read").await;
    let r = app
        .post(
            "/v1/text-to-speech",
            &read,
            json!({"text": "hi", "voiceId": voice}),
        )
        .await;
    assert_error(r, 403, "insufficient_permissions").await;
}

async fn characters_are_charged(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(100, "write").await;
    let voice = joe(&app, &key).await;
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": " Twenty characters!!! ", "voiceId": voice}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 80, "reserved": 0, "used": 20})
    );
    let r = app
        .post(
            "/v1/text-to-speech",
            &key,
            json!({"text": "x".repeat(81), "voiceId": voice}),
        )
        .await;
    assert_error(r, 402, "insufficient_credits").await;
}

async fn other_languages_and_normalisation(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    let voice = joe(&app, key).await;
    // Written numbers take longer to say than their digits would suggest.
    let s = duration_of(&app, key, &voice, "It was 3.").await;
    let l = duration_of(&app, key, &voice, "It was $1,234,567.89.").await;
    assert!(
        l > s + 3.0,
        "the amount is read out in words: {l} s vs {s} s"
    );

    let spanish: Value = app
        .get("/v1/voices?language=es&engine=espeak&limit=1", key)
        .await
        .json()
        .await
        .unwrap();
    let es = spanish["data"][0]["id"].as_str().unwrap();
    let job: Value = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": "Hola, ¿cómo estás? Son las 8:30.", "voiceId": es, "format": "wav"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed");
    assert!(job["result"]["duration"].as_f64().unwrap() > 1.5);
}

async fn duration_of(app: &TestApp, key: &str, voice: &str, text: &str) -> f64 {
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": text, "voiceId": voice, "format": "wav"}),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    job["result"]["duration"].as_f64().unwrap()
}

async fn ssml_breaks_spelling_phonemes_and_errors(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    let voice = joe(&app, key).await;
    let plain = duration_of(&app, key, &voice, "Hello there. Goodbye now.").await;
    let with_break = duration_of(
        &app,
        key,
        &voice,
        r#"<speak>Hello there. <break time="2s"/> Goodbye now.</speak>"#,
    )
    .await;
    assert!(
        // Piper's durations vary a little from run to run (its noise).
        with_break > plain + 1.5,
        "a 2 s break: {with_break} s vs {plain} s"
    );
    // Numeric character references are characters: spoken like the
    // characters themselves.
    // (Piper's durations vary by some 0.1 s between runs; the references
    // read out as text would take over a second more.)
    let entities = duration_of(&app, key, &voice, "<speak>caf&#233; na&#xEF;ve</speak>").await;
    let literal = duration_of(&app, key, &voice, "<speak>café naïve</speak>").await;
    let as_text = duration_of(
        &app,
        key,
        &voice,
        "<speak>caf&amp;#233; na&amp;#xEF;ve</speak>",
    )
    .await;
    assert!(
        (entities - literal).abs() < 0.25 && as_text > entities + 0.8,
        "{entities} s against {literal} s (read as text: {as_text} s)"
    );
    let word = duration_of(&app, key, &voice, "NASA").await;
    let spelled = duration_of(
        &app,
        key,
        &voice,
        r#"<speak><say-as interpret-as="characters">NASA</say-as></speak>"#,
    )
    .await;
    assert!(spelled > word * 1.5, "spelled out: {spelled} s vs {word} s");
    let slow = duration_of(
        &app,
        key,
        &voice,
        r#"<speak><prosody rate="x-slow">Hello there, my friend.</prosody></speak>"#,
    )
    .await;
    let normal = duration_of(&app, key, &voice, "Hello there, my friend.").await;
    assert!(slow > normal * 1.3, "x-slow: {slow} s vs {normal} s");

    // <phoneme> on a neural voice (spoken from the IPA) and on espeak-ng
    // (which falls back to the text).
    let kokoro: Value = app
        .get("/v1/voices?engine=kokoro&q=heart", key)
        .await
        .json()
        .await
        .unwrap();
    let heart = kokoro["data"][0]["id"].as_str().unwrap().to_owned();
    let espeak: Value = app
        .get("/v1/voices?engine=espeak&language=en-US&limit=1", key)
        .await
        .json()
        .await
        .unwrap();
    let robot = espeak["data"][0]["id"].as_str().unwrap().to_owned();
    for v in [&voice, &heart, &robot] {
        let d = duration_of(
            &app,
            key,
            v,
            r#"<speak>I say <phoneme alphabet="ipa" ph="təˈmɑːtoʊ">tomato</phoneme>.</speak>"#,
        )
        .await;
        assert!(d > 0.8, "{v}: {d}");
    }

    let bad = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": "<speak>Hi <b>there</b></speak>", "voiceId": voice}),
        )
        .await;
    let b = assert_error(bad, 422, "unprocessable_entity").await;
    assert_eq!(b["error"]["details"]["parameter"], "text");
    assert_eq!(b["error"]["details"]["position"], 10);
    assert!(b["error"]["message"].as_str().unwrap().contains("<b>"));
    let unclosed = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": "<speak>Hi", "voiceId": voice}),
        )
        .await;
    assert_error(unclosed, 422, "unprocessable_entity").await;
}

crate::on_both_backends!(
    ssml_breaks_spelling_phonemes_and_errors,
    every_format_is_real_audio_of_the_reported_duration,
    validation_errors_name_the_parameter,
    characters_are_charged,
    other_languages_and_normalisation,
    streaming_starts_before_synthesis_ends,
    a_closed_stream_charges_what_was_sent
);

const STORY: &str = "Hi there. The old lighthouse keeper climbed the stairs every evening. \
    He lit the lamp and watched the ships pass in the dark. On the fifth of December, a storm \
    arrived from the north. The waves were taller than the houses, but the light never went out. \
    In the morning the sea was calm again.";

pub async fn stream(app: &TestApp, key: &str, body: Value) -> reqwest::Response {
    app.client
        .post(format!("{}/v1/text-to-speech/stream", app.addr))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn streaming_starts_before_synthesis_ends(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = joe(&app, &key).await;
    let start = std::time::Instant::now();
    let mut r = stream(
        &app,
        &key,
        json!({"text": STORY, "voiceId": voice, "format": "pcm"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "audio/L16");
    let job_id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
    let mut bytes = Vec::new();
    let mut first_audio = None;
    while let Some(chunk) = r.chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
        if first_audio.is_none() && bytes.len() >= 1024 {
            first_audio = Some(start.elapsed());
        }
    }
    let total = start.elapsed();
    let first_audio = first_audio.expect("audio arrived");
    eprintln!("stream: first audio after {first_audio:?}, all after {total:?}");
    assert!(
        first_audio.as_secs_f64() < total.as_secs_f64() * 0.7,
        "first audio {first_audio:?} vs total {total:?}"
    );

    let job = app
        .wait_job(&key, &job_id, std::time::Duration::from_secs(10), |j| {
            j["status"] == "completed"
        })
        .await;
    let duration = job["result"]["duration"].as_f64().unwrap();
    let streamed_seconds = bytes.len() as f64 / 2.0 / 22050.0;
    assert!(
        (streamed_seconds - duration).abs() < 0.1,
        "{streamed_seconds} s streamed, {duration} s reported"
    );
    assert_eq!(job["result"]["streamed"], true);
    // The stored copy is the same audio.
    let stored = app
        .client
        .get(job["result"]["audioUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(stored.len(), bytes.len());
    let chars = STORY.chars().count() as i64;
    assert_eq!(app.account_view(&key).await["credits"]["used"], chars);
}

/// A client that closes the stream early is charged for the sentences
/// sent to it in full, at their share of the text; the rest of the hold is
/// refunded and the job ends `client_disconnected`.
async fn a_closed_stream_charges_what_was_sent(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let voice = joe(&app, &app.admin_key).await;
    let long = [STORY; 6].join(" ");
    let chars = long.chars().count() as i64;
    // Closed after `read` bytes: what the account paid, and the job.
    let closed_after = |read: usize| {
        let (app, voice, long) = (&app, &voice, &long);
        async move {
            let (_, key) = app.account(10_000, "write").await;
            let mut r = stream(
                app,
                &key,
                json!({"text": long, "voiceId": voice, "format": "pcm"}),
            )
            .await;
            let job_id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
            let mut got = 0;
            while got < read {
                got += r.chunk().await.unwrap().expect("more audio").len();
            }
            drop(r);
            let job = app
                .wait_job(&key, &job_id, std::time::Duration::from_secs(60), |j| {
                    j["status"] == "failed"
                })
                .await;
            assert_eq!(job["error"]["code"], "client_disconnected", "{job}");
            let credits = app.account_view(&key).await["credits"].clone();
            let used = credits["used"].as_i64().unwrap();
            assert_eq!(credits["reserved"], 0, "{credits}");
            assert_eq!(credits["balance"].as_i64().unwrap() + used, 10_000);
            if used > 0 {
                assert_eq!(job["credits"], used, "the job shows what it cost");
            }
            (used, job)
        }
    };
    // Nearly 23 s of audio received: the sentences in it are paid for,
    // not the whole text.
    let (most, job) = closed_after(1_000_000).await;
    assert!(most > 0 && most < chars, "{most} of {chars}: {job}");
    assert!(job["error"]["message"]
        .as_str()
        .unwrap()
        .contains("pieces sent"));
    // One chunk read: at most what the server had sent by then.
    let (early, _) = closed_after(1).await;
    assert!(early < chars, "{early} of {chars}");

    // Validation happens before anything is streamed.
    let b = assert_error(
        stream(&app, &app.admin_key, json!({"text": "", "voiceId": voice})).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(b["error"]["details"]["parameter"], "text");
}

/// Word timestamps align the written words with what the recogniser hears;
/// engine work only, so it runs once, on SQLite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn word_timestamps_follow_the_written_words() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 120.0).await;
    let key = &app.admin_key;
    let voice = joe(&app, key).await;
    let text = "The quick brown fox jumps over the lazy dog on 12/05.";
    let job: Value = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": text, "voiceId": voice, "timestamps": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    let words = job["result"]["words"].as_array().unwrap();
    let written: Vec<&str> = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(written, text.split_whitespace().collect::<Vec<_>>());
    let duration = job["result"]["duration"].as_f64().unwrap();
    let mut last_start = -1.0;
    for w in words {
        let (s, e) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
        assert!(
            s >= last_start && e >= s && e <= duration + 0.1,
            "{words:?}"
        );
        last_start = s;
    }
    // The words are spread over the speech, not bunched at the start.
    assert!(
        words[8]["start"].as_f64().unwrap() > duration * 0.4,
        "{words:?}"
    );
}

/// A streamed `pcm` response at a rate other than the voice's (made by
/// the worker without an encoder process) holds the whole speech at the
/// rate asked for: as long as the job says, as long as the same text asked
/// for without streaming (which ffmpeg resamples), and not silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_pcm_comes_at_the_rate_asked_for() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = joe(&app, &key).await;
    let body = json!({"text": STORY, "voiceId": voice, "format": "pcm", "sampleRate": 16000});
    let r = stream(&app, &key, body.clone()).await;
    assert_eq!(r.status(), 200);
    let job_id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
    let bytes = r.bytes().await.unwrap();
    let job = app
        .wait_job(&key, &job_id, std::time::Duration::from_secs(10), |j| {
            j["status"] == "completed"
        })
        .await;
    let duration = job["result"]["duration"].as_f64().unwrap();
    let streamed = decoded(&bytes, "pcm", 16_000).0;
    assert!(
        (streamed - duration).abs() < 0.1,
        "{streamed} s streamed, {duration} s reported"
    );
    let whole = app.post("/v1/text-to-speech", &key, body).await;
    assert_eq!(whole.status(), 200);
    let whole: Value = whole.json().await.unwrap();
    let file = app
        .download(whole["result"]["audioUrl"].as_str().unwrap())
        .await;
    let (seconds, _) = decoded(&file, "pcm", 16_000);
    assert!(
        (seconds - streamed).abs() < 0.1,
        "{seconds} s whole, {streamed} s streamed"
    );
    let samples: Vec<f64> = bytes
        .chunks_exact(2)
        .map(|b| f64::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    let rms = (samples.iter().map(|x| x * x).sum::<f64>() / samples.len() as f64).sqrt();
    assert!(rms > 0.02, "rms {rms}");
}

/// The API process makes no speech: a stream no worker begins within
/// `sync_wait_seconds` is refused (503, nothing charged), and one that a
/// separate worker process begins is relayed from it through PostgreSQL
/// (woken by `NOTIFY`), whole and charged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_are_made_by_a_separate_worker() {
    let app = TestApp::spawn_with(Backend::Postgres, |c| {
        c.worker_kinds = "test.sleep".into();
        c.sync_wait_seconds = 1.0;
    })
    .await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = joe(&app, &key).await;
    let body = json!({"text": STORY, "voiceId": voice, "format": "pcm"});
    let r = stream(&app, &key, body.clone()).await;
    assert_eq!(r.headers()["retry-after"], "5");
    assert_error(r, 503, "service_unavailable").await;
    let credits = app.account_view(&key).await["credits"].clone();
    assert_eq!(
        (credits["used"].as_i64(), credits["reserved"].as_i64()),
        (Some(0), Some(0)),
        "{credits}"
    );

    let mut config = app.config.clone();
    config.worker_kinds = "tts".into();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(mediagen::run_worker(config, async {
        let _ = stopped.await;
    }));
    // Warm: the worker loads its voice before the measured stream.
    let mut served = false;
    for _ in 0..60 {
        let r = stream(&app, &key, json!({"text": "Ready.", "voiceId": voice})).await;
        if r.status() == 200 {
            served = !r.bytes().await.unwrap().is_empty();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert!(served, "the worker streamed");
    // A stream no worker begins within the second is refused (above); on a
    // busy machine the warm worker may miss it too, and the client tries
    // again, as Retry-After asks.
    let mut start = std::time::Instant::now();
    let mut r = stream(&app, &key, body.clone()).await;
    for _ in 0..5 {
        if r.status() != 503 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        start = std::time::Instant::now();
        r = stream(&app, &key, body.clone()).await;
    }
    assert_eq!(r.status(), 200);
    let job_id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
    let mut bytes = Vec::new();
    let mut first_audio = None;
    while let Some(chunk) = r.chunk().await.unwrap() {
        first_audio.get_or_insert_with(|| start.elapsed());
        bytes.extend_from_slice(&chunk);
    }
    let total = start.elapsed();
    let first_audio = first_audio.expect("audio arrived");
    eprintln!("stream through a worker: first audio after {first_audio:?}, all after {total:?}");
    assert!(first_audio.as_secs_f64() < total.as_secs_f64() * 0.7);
    let job = app
        .wait_job(&key, &job_id, std::time::Duration::from_secs(10), |j| {
            j["status"] == "completed"
        })
        .await;
    let stored = app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await;
    assert_eq!(stored, bytes, "the stream is the stored audio");
    let chars = (STORY.chars().count() + "Ready.".len()) as i64;
    assert_eq!(app.account_view(&key).await["credits"]["used"], chars);
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
}
