//! Neural image and sound models picked with `model`: the tiny
//! random-weight models `mediagen_generate::diffusion::tiny` writes, in a
//! models directory of the test's own, run end to end through the API.

use mediagen_generate::diffusion::tiny;
use serde_json::{json, Value};

use crate::helpers::{assert_error, models_dir, Backend, TestApp};
use crate::image::decode;

/// A server whose models directory holds the tiny models, the ONNX
/// runtime and the icon set (linked from the installed models).
async fn app_with_tiny_models(backend: Backend) -> (TestApp, tempfile::TempDir) {
    let models = tempfile::tempdir().unwrap();
    tiny::write_all(models.path()).unwrap();
    for linked in ["onnxruntime", "emoji", "avatars"] {
        std::os::unix::fs::symlink(models_dir().join(linked), models.path().join(linked)).unwrap();
    }
    let dir = models.path().to_owned();
    let app = TestApp::spawn_with(backend, |c| c.models_dir = dir).await;
    (app, models)
}

async fn completed(app: &TestApp, key: &str, path: &str, body: Value) -> Value {
    let job: Value = app
        .post(path, key, body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{body} → {job}");
    job
}

fn pcm(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neural_models_make_images_and_sounds() {
    let (app, _models) = app_with_tiny_models(Backend::Sqlite).await;
    let (_, key) = app.account(1_000, "write").await;

    // GET /v1/models lists them.
    let models: Value = app.get("/v1/models", &key).await.json().await.unwrap();
    let listed: Vec<(String, String)> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["engine"] == "diffusion")
        .map(|m| {
            (
                m["kind"].as_str().unwrap().to_owned(),
                m["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            ("image-generation".to_owned(), "tiny-sd".to_owned()),
            ("sound-generation".to_owned(), "tiny-audioldm".to_owned())
        ],
        "{models}"
    );

    // Images: the requested size, one per seed, reproducible.
    let body = json!({"prompt": "a red cat on the beach", "model": "tiny-sd", "width": 64,
                      "height": 72, "n": 2, "seed": 5, "steps": 2});
    let job = completed(&app, &key, "/v1/image-generation", body.clone()).await;
    let result = &job["result"];
    assert_eq!(result["model"], "tiny-sd");
    assert_eq!(result["steps"], 2);
    // The model's own default guidance (its mediagen.json).
    assert_eq!(result["guidanceScale"], 3.0);
    let images = result["images"].as_array().unwrap();
    assert_eq!(images.len(), 2);
    assert_eq!(images[1]["seed"], 6);
    assert!(images[0]["timings"]["perStep"].as_f64().unwrap() > 0.0);
    assert_eq!(images[0]["timings"]["evaluationsPerStep"], 2);
    let mut decoded = Vec::new();
    for image in images {
        let bytes = app.download(image["imageUrl"].as_str().unwrap()).await;
        let d = decode(&bytes);
        assert_eq!((d.width, d.height), (64, 72));
        decoded.push(d);
    }
    assert_ne!(decoded[0].rgb, decoded[1].rgb, "two seeds, two pictures");
    let again = completed(&app, &key, "/v1/image-generation", body).await;
    let bytes = app
        .download(again["result"]["imageUrl"].as_str().unwrap())
        .await;
    assert_eq!(
        bytes, decoded[0].bytes,
        "the same seed gives the same bytes"
    );
    let jpeg = completed(
        &app,
        &key,
        "/v1/image-generation",
        json!({"prompt": "a dog", "model": "tiny-sd", "width": 64, "height": 64, "steps": 1,
               "guidanceScale": 0, "format": "jpeg"}),
    )
    .await;
    assert_eq!(jpeg["result"]["contentType"], "image/jpeg");
    assert_eq!(
        jpeg["result"]["images"][0]["timings"]["evaluationsPerStep"],
        1
    );

    // Sounds: exact length at the asked rate, reproducible, loops close.
    let sound = |extra: Value| {
        let mut body = json!({"prompt": "heavy rain", "model": "tiny-audioldm", "duration": 1.5,
                              "format": "pcm", "sampleRate": 16000, "seed": 3, "steps": 2});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let job = completed(&app, &key, "/v1/sound-generation", sound(json!({}))).await;
    assert_eq!(job["result"]["model"], "tiny-audioldm");
    assert_eq!(job["result"]["modelSampleRate"], 16000);
    let a = pcm(&app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await);
    assert_eq!(a.len(), 24_000);
    let rms = (a.iter().map(|v| v * v).sum::<f32>() / a.len() as f32).sqrt();
    assert!(rms > 0.01, "rms {rms}");
    let job = completed(&app, &key, "/v1/sound-generation", sound(json!({}))).await;
    let b = pcm(&app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await);
    assert_eq!(a, b, "the same seed gives the same sound");
    let job = completed(
        &app,
        &key,
        "/v1/sound-generation",
        sound(json!({"loop": true})),
    )
    .await;
    let looped = pcm(&app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await);
    assert_eq!(looped.len(), 24_000);
    let mut steps: Vec<f32> = looped.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    steps.sort_by(f32::total_cmp);
    let wrap = (looped[0] - looped[looped.len() - 1]).abs();
    assert!(
        wrap <= steps[steps.len() * 99 / 100],
        "the wrap-around jump {wrap} is larger than the sound's own steps"
    );
    // Without a rate, the model's own (16 kHz) is kept for WAV.
    let job = completed(
        &app,
        &key,
        "/v1/sound-generation",
        json!({"prompt": "wind", "model": "tiny-audioldm", "duration": 0.5, "format": "wav", "steps": 1}),
    )
    .await;
    assert_eq!(job["result"]["sampleRate"], 16000);
}

async fn bad_neural_requests_are_refused(backend: Backend) {
    let (app, models) = app_with_tiny_models(backend).await;
    let (_, key) = app.account(100, "write").await;
    let image = "/v1/image-generation";
    let sound = "/v1/sound-generation";
    // Out of the document's ranges: 400. Well-formed but not for this
    // server (a model it lacks) or this combination: 422.
    let (bad, unusable) = ((400, "invalid_parameter"), (422, "unprocessable_entity"));
    for (path, body, parameter, (status, code)) in [
        (
            image,
            json!({"prompt": "a cat", "model": "nope"}),
            "model",
            unusable,
        ),
        (
            sound,
            json!({"prompt": "rain", "model": "tiny-sd"}),
            "model",
            unusable,
        ),
        (
            image,
            json!({"prompt": "a cat", "model": "tiny-sd", "steps": 0}),
            "steps",
            bad,
        ),
        (
            image,
            json!({"prompt": "a cat", "model": "tiny-sd", "steps": 151}),
            "steps",
            bad,
        ),
        (
            image,
            json!({"prompt": "a cat", "model": "tiny-sd", "guidanceScale": 31}),
            "guidanceScale",
            bad,
        ),
        (
            image,
            json!({"prompt": "a cat", "steps": 4}),
            "steps",
            unusable,
        ),
        (
            sound,
            json!({"prompt": "rain", "guidanceScale": 2}),
            "guidanceScale",
            unusable,
        ),
        (
            sound,
            json!({"prompt": "rain", "negativePrompt": "wind"}),
            "negativePrompt",
            unusable,
        ),
        (
            image,
            json!({"prompt": "a cat", "model": "../image/tiny-sd"}),
            "model",
            unusable,
        ),
    ] {
        let e = assert_error(app.post(path, &key, body.clone()).await, status, code).await;
        assert_eq!(e["error"]["details"]["parameter"], parameter, "{body}");
    }
    let e = assert_error(
        app.post(image, &key, json!({"prompt": "a cat", "model": "nope"}))
            .await,
        422,
        "unprocessable_entity",
    )
    .await;
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("embedded, tiny-sd"), "{message}");

    // Price by pixel count: 2048² costs four 1024² images.
    let price = |w: u32| json!({"prompt": "a cat", "model": "tiny-sd", "width": w, "height": w, "dryRun": true});
    let small: Value = app
        .post(image, &key, price(1024))
        .await
        .json()
        .await
        .unwrap();
    let large: Value = app
        .post(image, &key, price(2048))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        large["estimatedCredits"].as_i64().unwrap(),
        4 * small["estimatedCredits"].as_i64().unwrap()
    );

    // A model that cannot load fails its job, and the credits come back.
    let broken = models.path().join("image/broken");
    std::fs::create_dir_all(broken.join("unet")).unwrap();
    std::fs::write(broken.join("unet/model.onnx"), b"not a model").unwrap();
    let before = app.account_view(&key).await["credits"]["balance"].clone();
    let failed: Value = app
        .post(
            image,
            &key,
            json!({"prompt": "a cat", "model": "broken", "width": 64, "height": 64}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(failed["error"]["code"], "job_failed", "{failed}");
    assert_eq!(
        failed["error"]["details"]["error"]["code"], "model_unavailable",
        "{failed}"
    );
    assert_eq!(app.account_view(&key).await["credits"]["balance"], before);
}

crate::on_both_backends!(bad_neural_requests_are_refused);
