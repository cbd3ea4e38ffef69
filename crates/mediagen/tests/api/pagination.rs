use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn list_envelope_and_edges(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let key = &app.admin_key;
    for i in 0..5 {
        assert_eq!(
            app.test_job(key, json!({"ms": 0, "output": format!("n{i}")}))
                .await
                .status(),
            200
        );
    }
    let app = &app;
    let page = |q: &'static str| async move {
        app.get(&format!("/v1/jobs{q}"), key)
            .await
            .json::<Value>()
            .await
            .unwrap()
    };

    let all = page("").await;
    assert_eq!(
        all["pagination"],
        json!({"page": 1, "limit": 20, "total": 5, "hasMore": false})
    );
    assert_eq!(all["data"].as_array().unwrap().len(), 5);

    let p1 = page("?limit=2").await;
    let p2 = page("?limit=2&page=2").await;
    let p3 = page("?limit=2&page=3").await;
    assert_eq!(
        (
            p1["pagination"]["hasMore"].clone(),
            p2["pagination"]["hasMore"].clone(),
            p3["pagination"]["hasMore"].clone()
        ),
        (json!(true), json!(true), json!(false))
    );
    assert_eq!(p3["data"].as_array().unwrap().len(), 1);
    let ids: std::collections::HashSet<_> = [&p1, &p2, &p3]
        .iter()
        .flat_map(|p| {
            p["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["id"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(ids.len(), 5, "pages do not overlap");

    let exact = page("?limit=5").await;
    assert_eq!(exact["pagination"]["hasMore"], false);
    let beyond = page("?page=9").await;
    assert_eq!(beyond["data"], json!([]));
    assert_eq!(beyond["pagination"]["total"], 5);
    assert_eq!(page("?limit=100").await["pagination"]["limit"], 100);

    for (q, param) in [
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?limit=abc", "limit"),
        ("?page=0", "page"),
        ("?page=-1", "page"),
        ("?status=done", "status"),
        // A name that is no kind is refused, not answered with nothing.
        ("?kind=speech", "kind"),
    ] {
        let body = assert_error(
            app.get(&format!("/v1/jobs{q}"), key).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(body["error"]["details"]["parameter"], param, "{q}");
    }

    assert_eq!(page("?status=completed").await["pagination"]["total"], 5);
    assert_eq!(page("?status=failed").await["pagination"]["total"], 0);
    assert_eq!(
        page("?kind=test.sleep&limit=1").await["pagination"]["total"],
        5
    );
    assert_eq!(page("?kind=tts").await["pagination"]["total"], 0);
}

crate::on_both_backends!(list_envelope_and_edges);
