//! `POST /v1/sound-generation`: the embedded engine's sounds measured on
//! their samples (raw 16-bit PCM at 22.05 kHz).

use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

const RATE: f32 = 22_050.0;

/// Generates a sound as raw PCM; returns the job and the samples.
async fn generate(app: &TestApp, key: &str, body: Value) -> (Value, Vec<f32>) {
    let mut body = body;
    body["format"] = json!("pcm");
    body["sampleRate"] = json!(RATE as u32);
    let r = app.post("/v1/sound-generation", key, body.clone()).await;
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "completed", "{body} → {job}");
    let bytes = app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await;
    let samples = bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    (job, samples)
}

fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|v| v * v).sum::<f32>() / x.len().max(1) as f32).sqrt()
}

/// Brightness: the RMS of the first difference over the RMS (about
/// 2π·f/rate for a tone at f): broadband hiss scores high, rumble low.
fn brightness(x: &[f32]) -> f32 {
    let d: Vec<f32> = x.windows(2).map(|w| w[1] - w[0]).collect();
    rms(&d) / rms(x)
}

/// Power at `hz` (Goertzel).
fn power(x: &[f32], hz: f32) -> f32 {
    let w = 2.0 * std::f32::consts::PI * hz / RATE;
    let c = 2.0 * w.cos();
    let (mut s1, mut s2) = (0.0f32, 0.0f32);
    for &v in x {
        let s = v + c * s1 - s2;
        s2 = s1;
        s1 = s;
    }
    s1 * s1 + s2 * s2 - c * s1 * s2
}

/// The strongest frequency from 100 Hz to 5 kHz (10 Hz steps), and how
/// far it stands above its neighbourhood (the median power from 0.7× to
/// 1.4× its frequency, outside ±40 Hz of it): a tone stands thousands of
/// times above, noise of any colour a few times.
fn peak(x: &[f32]) -> (f32, f32) {
    let scan: Vec<(f32, f32)> = (10..500)
        .map(|k| (k as f32 * 10.0, power(x, k as f32 * 10.0)))
        .collect();
    let best = scan
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    let mut around: Vec<f32> = (0..200)
        .map(|k| best.0 * (0.7 + 0.7 * k as f32 / 200.0))
        .filter(|f| (f - best.0).abs() > 40.0)
        .map(|f| power(x, f))
        .collect();
    around.sort_by(f32::total_cmp);
    (best.0, best.1 / around[around.len() / 2].max(1e-12))
}

/// Onset times (s): 10 ms loudness frames rising above half the loudest,
/// at least `gap` seconds apart.
fn onsets(x: &[f32], gap: f32) -> Vec<f32> {
    let frame = (RATE * 0.01) as usize;
    let env: Vec<f32> = x.chunks(frame).map(rms).collect();
    let top = env.iter().copied().fold(0.0, f32::max);
    let mut out: Vec<f32> = Vec::new();
    for (i, &e) in env.iter().enumerate() {
        let t = i as f32 * 0.01;
        if e > top * 0.5 && out.last().is_none_or(|&l| t - l >= gap) {
            out.push(t);
        }
    }
    out
}

fn median_interval(times: &[f32]) -> f32 {
    let mut d: Vec<f32> = times.windows(2).map(|w| w[1] - w[0]).collect();
    d.sort_by(f32::total_cmp);
    d[d.len() / 2]
}

/// How far the last sample is from the first, against the sound's own
/// sample-to-sample steps (1.0 = its largest step).
fn wrap_jump(x: &[f32]) -> f32 {
    let largest = x
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f32::max);
    (x[x.len() - 1] - x[0]).abs() / largest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_concept_makes_its_sound() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(100_000, "write").await;
    let vocabulary: Value = app
        .get("/v1/sound-generation/vocabulary", &key)
        .await
        .json()
        .await
        .unwrap();
    let concepts = vocabulary["concepts"].as_array().unwrap();
    assert!(concepts.len() >= 27, "{vocabulary}");
    for c in concepts {
        let word = c["keywords"][0].as_str().unwrap();
        let (job, x) = generate(
            &app,
            &key,
            json!({"prompt": word, "duration": 1.5, "seed": 3}),
        )
        .await;
        let layers = job["result"]["layers"].as_array().unwrap();
        assert_eq!(layers[0]["concept"], c["name"], "{word}: {job}");
        assert_eq!(x.len(), (1.5 * RATE) as usize, "{word}");
        assert!(rms(&x) > 0.01, "{word} is audible");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sounds_have_the_features_asked_for() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(100_000, "write").await;
    let sound = |prompt: &str, duration: f64| {
        let body = json!({"prompt": prompt, "duration": duration, "seed": 11});
        let (app, key) = (&app, &key);
        async move { generate(app, key, body).await.1 }
    };

    // Rain: broadband hiss; wind: a low, dark rush. Both noise-like (no
    // tone stands out).
    let (rain, wind) = (sound("heavy rain", 4.0).await, sound("wind", 4.0).await);
    assert!(
        brightness(&rain) > 3.0 * brightness(&wind),
        "{} vs {}",
        brightness(&rain),
        brightness(&wind)
    );
    assert!(brightness(&wind) < 0.25, "{}", brightness(&wind));
    assert!(
        peak(&rain).1 < 100.0 && peak(&wind).1 < 100.0,
        "{:?} {:?}",
        peak(&rain),
        peak(&wind)
    );

    // A beep is a clear 1 kHz tone; "high" raises it; a chime rings at a pitch.
    let beep = sound("beep", 0.5).await;
    let (hz, prominence) = peak(&beep);
    assert!(
        (hz - 1000.0).abs() <= 10.0 && prominence > 1000.0,
        "{hz} {prominence}"
    );
    let (high, _) = peak(&sound("a high beep", 0.5).await);
    assert!(high > 1200.0, "{high}");
    let (chime_hz, chime_prominence) = peak(&sound("chime", 2.0).await);
    assert!(
        chime_prominence > 100.0 && chime_hz > 500.0,
        "{chime_hz} {chime_prominence}"
    );

    // Footsteps and a heartbeat at the tempo asked.
    let steps = onsets(&sound("footsteps at 90 bpm", 6.0).await, 0.3);
    assert!(steps.len() >= 7, "{steps:?}");
    assert!(
        (median_interval(&steps) - 60.0 / 90.0).abs() < 0.03,
        "{steps:?}"
    );
    let fast = onsets(&sound("fast footsteps", 6.0).await, 0.2);
    assert!(median_interval(&fast) < 0.5, "{fast:?}");
    let beats = onsets(&sound("heartbeat at 60 bpm", 6.0).await, 0.5);
    assert!((median_interval(&beats) - 1.0).abs() < 0.03, "{beats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durations_loops_and_seeds() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(100_000, "write").await;

    // Exact to the sample; billed by the second, rounded up.
    let before = app.account_view(&key).await["credits"]["balance"]
        .as_i64()
        .unwrap();
    let (job, x) = generate(
        &app,
        &key,
        json!({"prompt": "ocean waves", "duration": 1.234}),
    )
    .await;
    assert_eq!(x.len(), (1.234 * RATE).round() as usize);
    assert_eq!(job["result"]["duration"], 1.234);
    assert_eq!(job["credits"], 2);
    let after = app.account_view(&key).await["credits"]["balance"]
        .as_i64()
        .unwrap();
    assert_eq!(before - after, 2);
    // No duration: the prompt's natural length (a beep is short).
    let (job, _) = generate(&app, &key, json!({"prompt": "a beep"})).await;
    assert_eq!(job["result"]["duration"], 0.5);

    // Loops: the end runs into the start.
    for prompt in ["rain", "siren", "campfire"] {
        let (_, x) = generate(
            &app,
            &key,
            json!({"prompt": prompt, "duration": 3, "loop": true, "seed": 5}),
        )
        .await;
        assert!(wrap_jump(&x) <= 0.5, "{prompt}: {}", wrap_jump(&x));
    }

    // Seeds: the same seed gives the same bytes; another seed other bytes;
    // no seed, a random one that is returned and reproduces the sound.
    let (_, a) = generate(
        &app,
        &key,
        json!({"prompt": "birds", "duration": 2, "seed": 42}),
    )
    .await;
    let (_, b) = generate(
        &app,
        &key,
        json!({"prompt": "birds", "duration": 2, "seed": 42}),
    )
    .await;
    let (_, c) = generate(
        &app,
        &key,
        json!({"prompt": "birds", "duration": 2, "seed": 43}),
    )
    .await;
    assert_eq!(a, b);
    assert_ne!(a, c);
    let (job, d) = generate(&app, &key, json!({"prompt": "birds", "duration": 2})).await;
    let seed = job["result"]["seed"].as_u64().unwrap();
    let (_, e) = generate(
        &app,
        &key,
        json!({"prompt": "birds", "duration": 2, "seed": seed}),
    )
    .await;
    assert_eq!(d, e);

    // The plan is reported: layers with their modifiers, unused words.
    let (job, _) = generate(
        &app,
        &key,
        json!({"prompt": "distant thunder and heavy rain on a tin roof", "duration": 2}),
    )
    .await;
    let r = &job["result"];
    assert_eq!(r["layers"][0]["concept"], "thunder");
    assert_eq!(r["layers"][0]["distant"], true);
    assert_eq!(r["layers"][1]["intensity"], 1.5);
    assert_eq!(r["ignoredTerms"], json!(["tin", "roof"]));

    // The default format is mp3.
    let r: Value = app
        .post(
            "/v1/sound-generation",
            &key,
            json!({"prompt": "laser", "seed": 1}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["result"]["format"], "mp3");
    let audio = app
        .client
        .get(r["result"]["audioUrl"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(audio.headers()["content-type"], "audio/mpeg");
}

async fn bad_prompts_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1_000, "write").await;
    let (_, reader) = app.account(1_000, "read").await;
    let e = assert_error(
        app.post(
            "/v1/sound-generation",
            &key,
            json!({"prompt": "a quantum spreadsheet"}),
        )
        .await,
        422,
        "unsupported_prompt",
    )
    .await;
    let understood = e["error"]["details"]["understood"].as_array().unwrap();
    assert!(understood.contains(&json!("rain")) && understood.contains(&json!("footsteps")));
    assert_eq!(
        e["error"]["details"]["ignoredTerms"],
        json!(["quantum", "spreadsheet"])
    );
    for (body, parameter) in [
        (json!({"prompt": "   "}), "prompt"),
        (json!({"prompt": "rain", "duration": 0.2}), "duration"),
        (json!({"prompt": "rain", "duration": 31}), "duration"),
        (json!({"prompt": "rain", "format": "aiff"}), "format"),
        (
            json!({"prompt": "rain", "format": "wav", "sampleRate": 1234}),
            "sampleRate",
        ),
    ] {
        let e = assert_error(
            app.post("/v1/sound-generation", &key, body).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(e["error"]["details"]["parameter"], parameter);
    }
    assert_error(
        app.post("/v1/sound-generation", &reader, json!({"prompt": "rain"}))
            .await,
        403,
        "insufficient_permissions",
    )
    .await;
    // Nothing was charged.
    assert_eq!(app.account_view(&key).await["credits"]["balance"], 1_000);
}

crate::on_both_backends!(bad_prompts_are_refused);
