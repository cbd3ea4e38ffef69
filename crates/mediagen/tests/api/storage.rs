//! Files in an S3 bucket (`storage_url = "s3://bucket/prefix"`), against
//! a local S3-compatible server: moto's, started by `scripts/ensure-s3.sh`
//! (`make test` runs it; `MEDIAGEN_TEST_S3_ENDPOINT` names another).
//! Uploads, results and the premade avatars all go to the bucket and
//! nothing to local disk; workers read inputs from the bucket; results
//! are streamed from it with ranges, or handed out as presigned URLs.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{form, Backend, TestApp};

pub fn endpoint() -> String {
    std::env::var("MEDIAGEN_TEST_S3_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:18292".into())
}

/// A fresh bucket of the test server.
pub async fn bucket(endpoint: &str) -> String {
    let name = format!(
        "mg-{}",
        mediagen_core::ids::random_base62(12).to_lowercase()
    );
    let r = reqwest::Client::new()
        .put(format!("{endpoint}/{name}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("no S3 server at {endpoint} (scripts/ensure-s3.sh): {e}"));
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    name
}

/// The keys in `bucket` (one page is enough here).
async fn keys(endpoint: &str, bucket: &str) -> Vec<String> {
    let xml = reqwest::get(format!("{endpoint}/{bucket}?list-type=2"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    xml.split("<Key>")
        .skip(1)
        .filter_map(|s| s.split("</Key>").next())
        .map(str::to_owned)
        .collect()
}

/// Storage in `bucket` of the S3 server at `endpoint`, under `deploy/`.
pub fn on_bucket(c: &mut mediagen_server::Config, bucket: &str, endpoint: &str) {
    c.storage_url = format!("s3://{bucket}/deploy");
    c.storage_options = [
        ("aws_endpoint", endpoint),
        ("aws_allow_http", "true"),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
}

async fn app_on(bucket: &str, endpoint: &str, redirect: bool) -> TestApp {
    let (bucket, endpoint) = (bucket.to_owned(), endpoint.to_owned());
    TestApp::spawn_with(Backend::Sqlite, move |c| {
        on_bucket(c, &bucket, &endpoint);
        c.storage_redirect = redirect;
    })
    .await
}

/// Every regular file under `dir`.
pub fn local_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(local_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_live_in_the_bucket() {
    let endpoint = endpoint();
    let bucket = bucket(&endpoint).await;
    let app = app_on(&bucket, &endpoint, false).await;
    let key = &app.admin_key;
    let voices: Value = app
        .get("/v1/voices?engine=espeak&language=en-US&limit=1", key)
        .await
        .json()
        .await
        .unwrap();
    let voice = voices["data"][0]["id"].as_str().unwrap().to_owned();

    // A result, written by a worker to the bucket and streamed from it.
    let job: Value = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": "The quick brown fox jumps over the lazy dog.", "voiceId": voice}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    let url = job["result"]["audioUrl"].as_str().unwrap().to_owned();
    let whole = app.download(&url).await;
    assert!(whole.len() > 1000);
    let r = app
        .client
        .get(&url)
        .header("range", "bytes=100-199")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-type"], "audio/mpeg");
    assert_eq!(r.bytes().await.unwrap(), whole[100..200]);

    // An upload, read by a worker from the bucket.
    let file: Value = app
        .post_form(
            "/v1/files",
            key,
            form(vec![("file", whole.to_vec(), "fox.mp3")], &[]),
        )
        .await
        .json()
        .await
        .unwrap();
    let file_id = file["id"].as_str().unwrap();
    let r = app
        .client
        .post(format!("{}/v1/speech-to-text", app.addr))
        .bearer_auth(key)
        .header("prefer", "respond-async")
        .json(&json!({"fileId": file_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let stt: Value = r.json().await.unwrap();
    let stt = app
        .wait_job(
            key,
            stt["id"].as_str().unwrap(),
            Duration::from_secs(120),
            |j| j["status"] == "completed" || j["status"] == "failed",
        )
        .await;
    assert_eq!(stt["status"], "completed", "{stt}");
    let text = stt["result"]["text"].as_str().unwrap().to_lowercase();
    assert!(text.contains("fox") && text.contains("lazy"), "{text}");

    // Everything is in the bucket, under the prefix; nothing on local disk.
    let stored = keys(&endpoint, &bucket).await;
    let tts_job = job["id"].as_str().unwrap();
    assert!(
        stored
            .iter()
            .any(|k| k.starts_with(&format!("deploy/jobs/{tts_job}/"))),
        "{stored:?}"
    );
    assert!(
        stored.iter().any(|k| k.starts_with("deploy/files/")),
        "{stored:?}"
    );
    assert!(
        stored.iter().all(|k| k.starts_with("deploy/")),
        "{stored:?}"
    );
    let blobs = app.data_dir.path().join("blobs");
    assert!(
        !blobs.exists() || local_files(&blobs).is_empty(),
        "{:?}",
        local_files(&blobs)
    );

    // With storage_redirect the same signed URL redirects to the bucket.
    let redirecting = app_on(&bucket, &endpoint, true).await;
    let job: Value = redirecting
        .post(
            "/v1/text-to-speech",
            &redirecting.admin_key,
            json!({"text": "Hello from the bucket.", "voiceId": voice}),
        )
        .await
        .json()
        .await
        .unwrap();
    let url = job["result"]["audioUrl"].as_str().unwrap();
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_follow.get(url).send().await.unwrap();
    assert_eq!(r.status(), 307);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with(&format!("{endpoint}/{bucket}/deploy/jobs/")),
        "{location}"
    );
    assert!(location.contains("X-Amz-Signature="), "{location}");
    let direct = reqwest::get(&location).await.unwrap();
    assert_eq!(direct.status(), 200);
    assert_eq!(direct.headers()["content-type"], "audio/mpeg");
    let through = redirecting.client.get(url).send().await.unwrap();
    assert_eq!(
        through.bytes().await.unwrap(),
        direct.bytes().await.unwrap()
    );
    // The signature still guards the redirect.
    let forged = url.replace("signature=", "signature=0");
    assert_eq!(no_follow.get(&forged).send().await.unwrap().status(), 403);
}
