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

crate::on_both_backends!(signed_urls_serve_ranges_and_refuse_tampering);
