use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

/// No key reads or touches another account's resources: every resource
/// route answers 404, exactly as for an id that does not exist.
async fn accounts_cannot_see_each_other(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, alice) = app.account(100, "admin").await;
    let (_, bob) = app.account(100, "admin").await;

    let job: Value = app
        .test_job(&alice, json!({"ms": 0}))
        .await
        .json()
        .await
        .unwrap();
    let job_id = job["id"].as_str().unwrap();
    let running = app.test_job_async(&alice, json!({"ms": 3000})).await;
    let alice_key: Value = app
        .post("/v1/keys", &alice, json!({"level": "read"}))
        .await
        .json()
        .await
        .unwrap();
    let alice_key_id = alice_key["id"].as_str().unwrap();

    assert_error(
        app.get(&format!("/v1/jobs/{job_id}"), &bob).await,
        404,
        "resource_not_found",
    )
    .await;
    assert_error(
        app.delete(&format!("/v1/jobs/{running}"), &bob).await,
        404,
        "resource_not_found",
    )
    .await;
    assert_error(
        app.delete(&format!("/v1/keys/{alice_key_id}"), &bob).await,
        404,
        "resource_not_found",
    )
    .await;
    let listed: Value = app.get("/v1/jobs", &bob).await.json().await.unwrap();
    assert_eq!(listed["pagination"]["total"], 0);
    let keys: Value = app.get("/v1/keys", &bob).await.json().await.unwrap();
    assert!(!keys.to_string().contains(alice_key_id));

    // Alice's things are untouched.
    assert_eq!(
        app.get(&format!("/v1/jobs/{job_id}"), &alice)
            .await
            .status(),
        200
    );
    assert_eq!(
        app.get("/v1/account", alice_key["key"].as_str().unwrap())
            .await
            .status(),
        200
    );
    let r: Value = app
        .delete(&format!("/v1/jobs/{running}"), &alice)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["status"], "cancelled");
}

crate::on_both_backends!(accounts_cannot_see_each_other);
