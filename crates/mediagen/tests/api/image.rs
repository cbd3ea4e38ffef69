//! `POST /v1/image-generation`: the embedded scene composer, checked on the
//! decoded pixels (ffmpeg decodes PNG, JPEG and WebP to raw RGB).

use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

pub struct Image {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
    pub bytes: Vec<u8>,
}

impl Image {
    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

/// Decodes an image of any format with ffmpeg, reading its size with ffprobe.
pub fn decode(bytes: &[u8]) -> Image {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("image");
    std::fs::write(&path, bytes).unwrap();
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=width,height",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let size = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    let (w, h) = size
        .split_once(',')
        .unwrap_or_else(|| panic!("not an image: {size}"));
    let raw = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&path)
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .unwrap();
    assert!(raw.status.success());
    Image {
        width: w.parse().unwrap(),
        height: h.parse().unwrap(),
        rgb: raw.stdout,
        bytes: bytes.to_vec(),
    }
}

async fn generate(app: &TestApp, key: &str, body: Value) -> (Value, Vec<Image>) {
    let job: Value = app
        .post("/v1/image-generation", key, body.clone())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{body} → {job}");
    let mut images = Vec::new();
    for image in job["result"]["images"].as_array().unwrap() {
        let bytes = app.download(image["imageUrl"].as_str().unwrap()).await;
        images.push(decode(&bytes));
    }
    (job, images)
}

/// The object named `word` as drawn: its box.
fn object<'a>(job: &'a Value, word: &str) -> &'a Value {
    job["result"]["images"][0]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["object"] == word)
        .unwrap_or_else(|| panic!("{word} drawn: {job}"))
}

/// Pixels of `bbox` that differ from the background image, and their mean
/// colour.
fn drawn(image: &Image, background: &Image, bbox: &Value) -> (f64, [f64; 3]) {
    let n = |k: &str| bbox[k].as_u64().unwrap() as usize;
    let (x0, y0, w, h) = (n("x"), n("y"), n("width"), n("height"));
    let (mut differ, mut sum) = (0usize, [0f64; 3]);
    for y in y0..(y0 + h).min(image.height) {
        for x in x0..(x0 + w).min(image.width) {
            let (a, b) = (image.at(x, y), background.at(x, y));
            let d: i32 = (0..3)
                .map(|c| (i32::from(a[c]) - i32::from(b[c])).abs())
                .sum();
            if d > 30 {
                differ += 1;
                for c in 0..3 {
                    sum[c] += f64::from(a[c]);
                }
            }
        }
    }
    let mean = sum.map(|s| s / differ.max(1) as f64);
    (differ as f64 / (w * h) as f64, mean)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_drawn_as_described() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(1_000, "write").await;
    let size = json!({"width": 512, "height": 384, "seed": 9});
    let with = |prompt: &str| {
        let mut body = size.clone();
        body["prompt"] = json!(prompt);
        body
    };

    let (job, images) = generate(
        &app,
        &key,
        with("A cat wearing a red hat on a beach at sunset"),
    )
    .await;
    let (_, background) = generate(&app, &key, with("a beach at sunset")).await;
    let (image, background) = (&images[0], &background[0]);
    assert_eq!((image.width, image.height), (512, 384));
    assert_eq!(&image.bytes[1..4], b"PNG");
    let r = &job["result"];
    assert_eq!(r["setting"], "beach");
    assert_eq!(r["timeOfDay"], "sunset");
    assert_eq!(r["ignoredTerms"], json!([]));
    let (cat, hat) = (object(&job, "cat"), object(&job, "hat"));
    assert_eq!(hat["color"], "red");
    assert_eq!(hat["relation"], "wearing");
    // The cat and the hat are drawn where reported; the hat on the cat's
    // head: its box starts above the cat's and overlaps it.
    let (cat_cover, _) = drawn(image, background, &cat["bbox"]);
    let (hat_cover, hat_colour) = drawn(image, background, &hat["bbox"]);
    assert!(
        cat_cover > 0.2 && hat_cover > 0.2,
        "{cat_cover} {hat_cover}"
    );
    let (cy, hy) = (
        cat["bbox"]["y"].as_u64().unwrap(),
        hat["bbox"]["y"].as_u64().unwrap(),
    );
    let hat_bottom = hy + hat["bbox"]["height"].as_u64().unwrap();
    assert!(hy < cy && hat_bottom > cy, "hat {hat} on cat {cat}");
    // Red: the hat's drawn pixels are dominated by red.
    assert!(
        hat_colour[0] > 1.5 * hat_colour[1] && hat_colour[0] > 1.5 * hat_colour[2],
        "{hat_colour:?}"
    );
    // A sunset sky (warm at the horizon) over sand (bottom rows).
    let [r0, _, b0] = image.at(10, 384 * 55 / 100);
    assert!(r0 > b0 + 60, "sunset glow {r0} {b0}");
    let sand = image.at(10, 380);
    assert!(sand[0] > 120 && sand[0] > sand[2], "{sand:?}");

    // A colour word changes the measured colour of its object.
    let (blue_job, blue) = generate(
        &app,
        &key,
        with("a cat wearing a blue hat on a beach at sunset"),
    )
    .await;
    let (_, blue_colour) = drawn(&blue[0], background, &object(&blue_job, "hat")["bbox"]);
    assert!(blue_colour[2] > 1.5 * blue_colour[0], "{blue_colour:?}");

    // Several objects, a count, a setting, a style; unknown words reported.
    let (job, images) = generate(
        &app,
        &key,
        with("two dogs next to a tree in a snowy forest, flibbertigibbet"),
    )
    .await;
    let dogs: Vec<&Value> = job["result"]["images"][0]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["object"] == "dogs")
        .collect();
    assert_eq!(dogs.len(), 2);
    assert!(object(&job, "tree")["bbox"].is_object());
    assert_eq!(job["result"]["ignoredTerms"], json!(["flibbertigibbet"]));
    let (_, forest) = generate(&app, &key, with("a snowy forest")).await;
    for o in job["result"]["images"][0]["objects"].as_array().unwrap() {
        assert!(drawn(&images[0], &forest[0], &o["bbox"]).0 > 0.15, "{o}");
    }
    // Relations are placed as read, and reported with whether they hold.
    let (job, _) = generate(&app, &key, with("a car to the right of a tree")).await;
    let x = |o: &Value| o["bbox"]["x"].as_u64().unwrap();
    let (car, tree) = (object(&job, "car"), object(&job, "tree"));
    assert!(
        x(car) > x(tree) + tree["bbox"]["width"].as_u64().unwrap() / 2,
        "{job}"
    );
    assert_eq!(
        job["result"]["images"][0]["relations"],
        json!([{"subject": "car", "relation": "rightOf", "objects": ["tree"], "met": true}])
    );
    let (job, _) = generate(&app, &key, with("a fox around a tree")).await;
    let around = &job["result"]["images"][0]["relations"][0];
    assert_eq!(
        (&around["relation"], &around["met"]),
        (&json!("around"), &json!(false))
    );
    assert!(
        around["reason"].as_str().unwrap().contains("how many"),
        "{around}"
    );
    // The negative prompt leaves objects out.
    let mut body = with("a cat and a dog on a meadow");
    body["negativePrompt"] = json!("dog");
    let (job, _) = generate(&app, &key, body).await;
    let objects = job["result"]["images"][0]["objects"].as_array().unwrap();
    assert!(
        objects.iter().all(|o| o["object"] != "dog") && objects.len() == 1,
        "{job}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_sizes_formats_and_styles() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(1_000, "write").await;
    let body = |seed: u64, format: &str| {
        json!({"prompt": "a robot under a rainbow in the city at night", "width": 256, "height": 192,
               "seed": seed, "format": format})
    };
    let (_, a) = generate(&app, &key, body(5, "png")).await;
    let (_, b) = generate(&app, &key, body(5, "png")).await;
    let (_, c) = generate(&app, &key, body(6, "png")).await;
    assert_eq!(a[0].bytes, b[0].bytes, "same seed, same bytes");
    assert_ne!(a[0].bytes, c[0].bytes);
    for format in ["jpeg", "webp"] {
        let (job, images) = generate(&app, &key, body(5, format)).await;
        assert_eq!((images[0].width, images[0].height), (256, 192), "{format}");
        assert_eq!(job["result"]["format"], format);
    }
    // n images, seeds counting up; billed per image.
    let mut two = body(40, "png");
    two["n"] = json!(2);
    let (job, images) = generate(&app, &key, two).await;
    assert_eq!(images.len(), 2);
    assert_eq!(job["result"]["images"][1]["seed"], 41);
    assert_eq!(job["credits"], 2);
    // Styles change the pixels: pixel art is made of blocks.
    let mut pixel = body(5, "png");
    pixel["style"] = json!("pixel");
    let (job, images) = generate(&app, &key, pixel).await;
    assert_eq!(job["result"]["style"], "pixel");
    let img = &images[0];
    let blocks = (0..img.height)
        .step_by(4)
        .all(|y| img.at(0, y) == img.at(1, y));
    assert!(blocks, "pixel art is blocky");
}

async fn bad_image_requests_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1_000, "write").await;
    let e = assert_error(
        app.post(
            "/v1/image-generation",
            &key,
            json!({"prompt": "xyzzy plugh"}),
        )
        .await,
        422,
        "unsupported_prompt",
    )
    .await;
    assert_eq!(
        e["error"]["details"]["ignoredTerms"],
        json!(["xyzzy", "plugh"])
    );
    for (body, parameter) in [
        (json!({"prompt": ""}), "prompt"),
        (json!({"prompt": "a cat", "width": 100}), "width"),
        (json!({"prompt": "a cat", "height": 4096}), "height"),
        (json!({"prompt": "a cat", "width": 32}), "width"),
        (json!({"prompt": "a cat", "n": 5}), "n"),
        (json!({"prompt": "a cat", "style": "oil"}), "style"),
        (json!({"prompt": "a cat", "format": "gif"}), "format"),
    ] {
        let e = assert_error(
            app.post("/v1/image-generation", &key, body).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(e["error"]["details"]["parameter"], parameter);
    }
    assert_eq!(app.account_view(&key).await["credits"]["balance"], 1_000);
}

crate::on_both_backends!(bad_image_requests_are_refused);
