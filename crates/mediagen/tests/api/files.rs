use mediagen_core::time::now_ms;
use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn signed_urls_serve_ranges_and_refuse_tampering(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let job: Value = app
        .test_job(&app.admin_key, json!({"output": "hello world"}))
        .await
        .json()
        .await
        .unwrap();
    let url = job["result"]["textUrl"].as_str().unwrap().to_owned();
    assert!(job["result"]["urlExpiresAt"].as_str().is_some());

    // No API key needed: the signature is the authorization.
    let r = app.client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.headers()["accept-ranges"], "bytes");
    assert_eq!(r.text().await.unwrap(), "hello world");

    let r = app
        .client
        .get(&url)
        .header("range", "bytes=6-")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-range"], "bytes 6-10/11");
    assert_eq!(r.text().await.unwrap(), "world");
    let r = app
        .client
        .get(&url)
        .header("range", "bytes=0-1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.text().await.unwrap(), "he");
    // An end past the file (even u64::MAX) is the file's end.
    let r = app
        .client
        .get(&url)
        .header("range", "bytes=0-18446744073709551615")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-range"], "bytes 0-10/11");
    assert_eq!(r.text().await.unwrap(), "hello world");
    assert_error(
        app.client
            .get(&url)
            .header("range", "bytes=50-")
            .send()
            .await
            .unwrap(),
        416,
        "range_not_satisfiable",
    )
    .await;

    // Tampering: signature, expiry or path.
    let (base, query) = url.split_once('?').unwrap();
    let sig = query.split("signature=").nth(1).unwrap();
    let flipped = format!(
        "{}{}",
        &sig[..sig.len() - 1],
        if sig.ends_with('0') { "1" } else { "0" }
    );
    let tampered = url.replace(sig, &flipped);
    assert_error(
        app.client.get(&tampered).send().await.unwrap(),
        403,
        "invalid_signature",
    )
    .await;
    let later = url.replace("expires=", "expires=9");
    assert_error(
        app.client.get(&later).send().await.unwrap(),
        403,
        "invalid_signature",
    )
    .await;
    let other_path = format!("{}?{query}", base.replace("output.txt", "other.txt"));
    assert_error(
        app.client.get(&other_path).send().await.unwrap(),
        403,
        "invalid_signature",
    )
    .await;
    assert_error(
        app.client.get(base).send().await.unwrap(),
        403,
        "invalid_signature",
    )
    .await;

    // Expired, though correctly signed.
    let key = base.split("/blobs/").nth(1).unwrap();
    let past = now_ms() / 1000 - 10;
    let expired = format!(
        "{}/blobs/{key}?expires={past}&signature={}",
        app.addr,
        app.state.signer.sign(key, past)
    );
    assert_error(
        app.client.get(&expired).send().await.unwrap(),
        403,
        "url_expired",
    )
    .await;

    // Correctly signed, but nothing there.
    let future = now_ms() / 1000 + 100;
    let missing = "jobs/job_none/output.txt";
    let url = format!(
        "{}/blobs/{missing}?expires={future}&signature={}",
        app.addr,
        app.state.signer.sign(missing, future)
    );
    assert_error(
        app.client.get(&url).send().await.unwrap(),
        404,
        "resource_not_found",
    )
    .await;
}

fn form(bytes: Vec<u8>, name: &str) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
    )
}

async fn upload(app: &TestApp, key: &str, form: reqwest::multipart::Form) -> reqwest::Response {
    app.client
        .post(format!("{}/v1/files", app.addr))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap()
}

/// A tiny valid WAV file: 0.1 s of silence, 8 kHz mono 16-bit.
fn wav() -> Vec<u8> {
    crate::helpers::silent_wav(800, 8000)
}

async fn files_upload_list_delete_and_limits(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.upload_body_limit = 64 * 1024).await;
    let (_, alice) = app.account(10, "write").await;
    let (_, bob) = app.account(10, "write").await;

    let r = upload(&app, &alice, form(wav(), "../../secret/take 1.wav")).await;
    assert_eq!(r.status(), 201);
    let file: Value = r.json().await.unwrap();
    assert!(file["id"].as_str().unwrap().starts_with("file_"));
    assert_eq!(file["filename"], "take 1.wav");
    assert_eq!(file["size"], 44 + 1600);
    assert_eq!(file["contentType"], "audio/x-wav", "sniffed from the bytes");
    let id = file["id"].as_str().unwrap();

    // The type comes from the content, not the name: text is refused.
    let r = upload(&app, &alice, form(b"just text".to_vec(), "song.mp3")).await;
    assert_error(r, 415, "unsupported_media_type").await;
    assert!(
        (file["duration"].as_f64().unwrap() - 0.1).abs() < 0.01,
        "probed: {file}"
    );

    let list: Value = app.get("/v1/files", &alice).await.json().await.unwrap();
    assert_eq!(list["pagination"]["total"], 1);
    assert_eq!(
        app.get(&format!("/v1/files/{id}"), &alice).await.status(),
        200
    );

    // Another account sees nothing and can delete nothing.
    assert_error(
        app.get(&format!("/v1/files/{id}"), &bob).await,
        404,
        "resource_not_found",
    )
    .await;
    assert_error(
        app.delete(&format!("/v1/files/{id}"), &bob).await,
        404,
        "resource_not_found",
    )
    .await;
    let list: Value = app.get("/v1/files", &bob).await.json().await.unwrap();
    assert_eq!(list["pagination"]["total"], 0);

    // Limits and bad requests.
    let body = assert_error(
        upload(&app, &alice, form(vec![7u8; 100 * 1024], "big.bin")).await,
        413,
        "payload_too_large",
    )
    .await;
    assert_eq!(body["error"]["details"]["limit"], 64 * 1024);
    let only_text = reqwest::multipart::Form::new().text("name", "x");
    let body = assert_error(
        upload(&app, &alice, only_text).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["details"]["parameter"], "file");
    assert_error(
        app.post("/v1/files", &alice, json!({"file": "x"})).await,
        415,
        "unsupported_media_type",
    )
    .await;
    let read = app.key("read").await;
    assert_error(
        upload(&app, &read, form(wav(), "a.wav")).await,
        403,
        "insufficient_permissions",
    )
    .await;

    let deleted: Value = app
        .delete(&format!("/v1/files/{id}"), &alice)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(deleted, json!({"id": id, "deleted": true}));
    assert_error(
        app.get(&format!("/v1/files/{id}"), &alice).await,
        404,
        "resource_not_found",
    )
    .await;
}

crate::on_both_backends!(
    signed_urls_serve_ranges_and_refuse_tampering,
    files_upload_list_delete_and_limits
);
