//! The published document is the contract: every operation lists the
//! statuses the platform can answer it with, each error with the error
//! body's schema, and paging parameters with the bounds the server keeps.
//! (`scripts/contract.sh` runs schemathesis against the same document.)

use serde_json::Value;

use crate::helpers::{assert_error, Backend, TestApp};

async fn every_operation_documents_the_platforms_answers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let doc: Value = app.openapi().await;
    assert!(doc["components"]["schemas"]["Error"]["properties"]["error"].is_object());
    // Optional body members may be null (read as absent); required ones not.
    let account = &doc["components"]["schemas"]["CreateAccount"]["properties"];
    assert_eq!(
        account["credits"]["type"],
        serde_json::json!(["integer", "null"])
    );
    assert_eq!(account["name"]["type"], "string");
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "post", "patch", "put", "delete"].contains(&method.as_str()) {
                continue;
            }
            operations += 1;
            let responses = op["responses"].as_object().unwrap();
            let has = |s: &str| responses.contains_key(s);
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let mut expected = vec!["500", "403"];
            if secured {
                expected.extend(["401", "429"]);
            }
            if path.contains('{') {
                expected.push("404");
            }
            if op.get("requestBody").is_some() {
                expected.extend(["400", "413", "415"]);
            }
            if method == "post" {
                expected.extend(["409", "422"]);
            }
            for status in expected {
                assert!(has(status), "{method} {path} does not document {status}");
            }
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    assert_eq!(
                        r["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/Error",
                        "{method} {path} {status}"
                    );
                }
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["name"] == "page" || p["name"] == "limit" {
                    assert_eq!(p["schema"]["minimum"], 1, "{method} {path}");
                    let max = if p["name"] == "page" { 2147483647 } else { 100 };
                    assert_eq!(p["schema"]["maximum"], max, "{method} {path}");
                }
            }
        }
    }
    assert!(operations >= 40, "{operations}");
    // The bounds are the server's.
    let key = &app.admin_key;
    for query in ["page=2147483648", "page=0", "limit=101", "limit=0"] {
        let r = app.get(&format!("/v1/jobs?{query}"), key).await;
        assert_error(r, 400, "invalid_parameter").await;
    }
    assert_eq!(
        app.get("/v1/jobs?page=2147483647&limit=100", key)
            .await
            .status(),
        200
    );
}

/// A member set to `null` is the same as an absent one, as the document's
/// nullable optional fields say: optional ones take their default,
/// required ones are missing (400 naming them).
async fn null_members_are_absent(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    let voices: Value = app
        .get("/v1/voices?limit=1", key)
        .await
        .json()
        .await
        .unwrap();
    let voice = voices["data"][0]["id"].clone();
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            serde_json::json!({"text": "Hello.", "voiceId": voice, "format": null,
                "sampleRate": null, "speed": null, "timestamps": null, "dryRun": true}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r: Value = r.json().await.unwrap();
    assert_eq!(r["dryRun"], true, "{r}");
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            serde_json::json!({"text": null, "voiceId": voice}),
        )
        .await;
    let b = assert_error(r, 400, "invalid_parameter").await;
    assert_eq!(b["error"]["details"]["parameter"], "text");
    let r = app
        .post(
            "/v1/keys",
            key,
            serde_json::json!({"level": "read", "expiresAt": null}),
        )
        .await;
    assert_eq!(r.status(), 201);
}

crate::on_both_backends!(
    every_operation_documents_the_platforms_answers,
    null_members_are_absent
);
