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
    // Operation ids are unique (links and client generators name by them).
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids.contains(&"getVoicesById") && ids.contains(&"postTextToSpeech"));
    // Media endpoints show their form, and the JSON naming an upload.
    let schemas = &doc["components"]["schemas"];
    for (path, form) in [
        ("/v1/speech-to-text", "SpeechToTextForm"),
        ("/v1/video/trim", "VideoTrimForm"),
        ("/v1/voice-changer", "VoiceChangerForm"),
        ("/v1/dubbing", "DubbingForm"),
    ] {
        let body = &doc["paths"][path]["post"]["requestBody"]["content"];
        let reference = format!("#/components/schemas/{form}");
        assert_eq!(body["multipart/form-data"]["schema"]["$ref"], reference);
        assert_eq!(schemas[form]["properties"]["file"]["format"], "binary");
        assert!(schemas[form]["required"]
            .as_array()
            .unwrap()
            .contains(&"file".into()));
        let json = format!("{form}ByFileId");
        assert_eq!(
            body["application/json"]["schema"]["$ref"],
            format!("#/components/schemas/{json}")
        );
        let required = schemas[&json]["required"].as_array().unwrap();
        assert!(required.contains(&"fileId".into()) && !required.contains(&"file".into()));
        // Unknown parts and members are refused, and the document says so.
        assert_eq!(schemas[form]["additionalProperties"], false, "{form}");
        assert_eq!(schemas[&json]["additionalProperties"], false, "{json}");
    }
    assert_eq!(
        doc["paths"]["/v1/video/trim"]["post"]["requestBody"]["content"]["multipart/form-data"]
            ["encoding"]["ranges"]["contentType"],
        "application/json"
    );
    for body in [
        "TextToSpeechRequest",
        "SegmentsBody",
        "SegmentEdit",
        "GrantCredits",
    ] {
        assert_eq!(schemas[body]["additionalProperties"], false, "{body}");
    }
    // What a POST creates links to the operations on it, by operationId.
    let created = &doc["paths"]["/v1/files"]["post"]["responses"]["201"]["links"];
    assert_eq!(
        created["getFilesById"]["operationId"], "getFilesById",
        "{created}"
    );
    assert_eq!(
        created["deleteFilesById"]["parameters"]["id"],
        "$response.body#/id"
    );
    let job = &doc["paths"]["/v1/text-to-speech"]["post"]["responses"]["202"]["links"];
    assert_eq!(job["getJobsById"]["operationId"], "getJobsById", "{job}");
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
