use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn insufficient_credits_and_refunds(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (account, key) = app.account(10, "write").await;

    // 402 with the amounts.
    let body = assert_error(
        app.test_job(&key, json!({"ms": 0, "units": 20})).await,
        402,
        "insufficient_credits",
    )
    .await;
    assert_eq!(body["error"]["details"]["required"], 20);
    assert_eq!(body["error"]["details"]["available"], 10);

    // A failing job is refunded.
    let body = assert_error(
        app.test_job(&key, json!({"ms": 0, "units": 6, "fail": "abort"}))
            .await,
        500,
        "job_failed",
    )
    .await;
    assert_eq!(body["error"]["details"]["error"]["code"], "test_failure");
    let job_id = body["error"]["details"]["jobId"]
        .as_str()
        .unwrap()
        .to_owned();
    let job: Value = app
        .get(&format!("/v1/jobs/{job_id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "failed");
    assert_eq!(job["error"]["code"], "test_failure");
    let credits = &app.account_view(&key).await["credits"];
    assert_eq!(credits, &json!({"balance": 10, "reserved": 0, "used": 0}));

    // A successful one is charged.
    assert_eq!(
        app.test_job(&key, json!({"ms": 0, "units": 4}))
            .await
            .status(),
        200
    );
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 6, "reserved": 0, "used": 4})
    );

    // The ledger holds every movement, in order.
    let entries: Vec<String> = app
        .state
        .db
        .ledger(&mediagen_core::AccountId::parse(&account).unwrap(), 10)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .map(|e| e.entry)
        .collect();
    assert_eq!(
        entries,
        ["grant", "reserve", "refund", "reserve", "capture"]
    );
    // The same ledger through the API, newest first, paged; the starting
    // grant left 10 and the charged job 6.
    let ledger: Value = app
        .get("/v1/account/ledger", &key)
        .await
        .json()
        .await
        .unwrap();
    let listed: Vec<&str> = ledger["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["capture", "reserve", "refund", "reserve", "grant"],
        "{ledger}"
    );
    assert_eq!(ledger["pagination"]["total"], 5);
    assert_eq!(ledger["data"][0]["balanceAfter"], 6, "{ledger}");
    assert_eq!(ledger["data"][4]["balanceAfter"], 10, "{ledger}");
    assert_eq!(ledger["data"][4]["amount"], 10, "{ledger}");
    assert_eq!(ledger["data"][2]["jobId"], job_id.as_str(), "{ledger}");
    let second: Value = app
        .get("/v1/account/ledger?limit=2&page=2", &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["data"][0], ledger["data"][2], "{second}");
    assert_eq!(second["pagination"]["hasMore"], true);
    // Another account's key sees its own movements only.
    let theirs: Value = app
        .get("/v1/account/ledger?limit=100", &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    assert!(
        theirs["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["jobId"] != job_id.as_str()),
        "{theirs}"
    );
    assert_error(
        app.get("/v1/account/ledger?limit=0", &key).await,
        400,
        "invalid_parameter",
    )
    .await;

    // While running, the cost is reserved.
    let id = app
        .test_job_async(&key, json!({"ms": 1500, "units": 3}))
        .await;
    app.wait_job(&key, &id, std::time::Duration::from_secs(5), |j| {
        j["status"] == "processing"
    })
    .await;
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 3, "reserved": 3, "used": 4})
    );
    // Cancelling refunds.
    let cancelled: Value = app
        .delete(&format!("/v1/jobs/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        app.account_view(&key).await["credits"],
        json!({"balance": 6, "reserved": 0, "used": 4})
    );
    assert_error(
        app.delete(&format!("/v1/jobs/{id}"), &key).await,
        409,
        "job_not_cancellable",
    )
    .await;
}

async fn dry_run_prices_without_a_job(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| {
        c.costs.insert("test.sleep".into(), 2.5);
    })
    .await;
    let (_, key) = app.account(10, "write").await;
    let r: Value = app
        .test_job(&key, json!({"units": 3, "dryRun": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        r,
        json!({"dryRun": true, "kind": "test.sleep", "estimatedCredits": 8, "availableCredits": 10, "sufficientCredits": true})
    );
    let r: Value = app
        .test_job(&key, json!({"units": 30, "dryRun": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["sufficientCredits"], false);
    let jobs: Value = app.get("/v1/jobs", &key).await.json().await.unwrap();
    assert_eq!(jobs["pagination"]["total"], 0);
    assert_eq!(app.account_view(&key).await["credits"]["balance"], 10);
}

crate::on_both_backends!(
    insufficient_credits_and_refunds,
    dry_run_prices_without_a_job
);
