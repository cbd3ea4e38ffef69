use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};

async fn voice_catalog_filters_sorting_and_paging(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // A read-only key lists voices (the spec's key test).
    let key = app.key("read").await;
    let get = |q: String| {
        let key = key.clone();
        let app = &app;
        async move {
            app.get(&format!("/v1/voices{q}"), &key)
                .await
                .json::<Value>()
                .await
                .unwrap()
        }
    };

    let all = get(String::new()).await;
    let total = all["pagination"]["total"].as_u64().unwrap();
    assert!(total > 100, "{total} voices");
    assert_eq!(all["pagination"]["limit"], 20);
    // Best quality first by default: Kokoro.
    assert_eq!(all["data"][0]["engine"], "kokoro");
    assert_eq!(all["data"][0]["quality"], "high");
    for field in [
        "id",
        "name",
        "language",
        "languages",
        "gender",
        "engine",
        "quality",
        "sampleRate",
        "description",
        "category",
    ] {
        assert!(!all["data"][0][field].is_null(), "{field}");
    }
    assert_eq!(all["data"][0]["id"].as_str().unwrap().len(), 20);

    let en = get("?language=en&limit=100".into()).await;
    let langs: Vec<&str> = en["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["language"].as_str().unwrap())
        .collect();
    assert!(
        !langs.is_empty() && langs.iter().all(|l| *l == "en" || l.starts_with("en-")),
        "{langs:?}"
    );
    assert!(
        get("?language=EN-us".into()).await["pagination"]["total"]
            .as_u64()
            .unwrap()
            >= 2,
        "case-insensitive"
    );

    assert_eq!(get("?engine=piper".into()).await["pagination"]["total"], 1);
    let kokoro = get("?engine=kokoro&language=es".into()).await;
    assert_eq!(kokoro["pagination"]["total"], 3, "Kokoro's Spanish voices");
    let female_british = get("?engine=kokoro&language=en-GB&gender=female".into()).await;
    assert_eq!(female_british["pagination"]["total"], 4);
    let german = get("?q=german".into()).await;
    assert!(german["data"].as_array().unwrap().iter().all(|v| v["name"]
        .as_str()
        .unwrap()
        .to_lowercase()
        .contains("german")));
    assert!(german["pagination"]["total"].as_u64().unwrap() >= 1);
    let male = get("?gender=male&limit=100".into()).await;
    assert!(male["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["gender"] == "male"));
    assert_eq!(
        get("?category=cloned".into()).await["pagination"]["total"],
        0
    );

    let by_name = get("?sort=name&limit=100".into()).await;
    let names: Vec<String> = by_name["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_lowercase())
        .collect();
    assert!(names.windows(2).all(|w| w[0] <= w[1]), "sorted by name");
    let by_lang = get("?sort=language&limit=100".into()).await;
    let langs: Vec<&str> = by_lang["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["language"].as_str().unwrap())
        .collect();
    assert!(langs.windows(2).all(|w| w[0] <= w[1]), "sorted by language");

    let p1 = get("?sort=name&limit=10".into()).await;
    let p2 = get("?sort=name&limit=10&page=2".into()).await;
    assert_ne!(p1["data"][0]["id"], p2["data"][0]["id"]);
    assert_eq!(p2["data"][0]["id"], by_name["data"][10]["id"]);
    let last_page = total.div_ceil(100);
    let last = get(format!("?limit=100&page={last_page}")).await;
    assert_eq!(last["pagination"]["hasMore"], false);

    for (q, parameter) in [
        ("?sort=age", "sort"),
        ("?gender=robot", "gender"),
        ("?limit=500", "limit"),
        ("?category=x", "category"),
    ] {
        let b = assert_error(
            app.get(&format!("/v1/voices{q}"), &key).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(b["error"]["details"]["parameter"], parameter);
    }

    let id = all["data"][0]["id"].as_str().unwrap();
    let one: Value = app
        .get(&format!("/v1/voices/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(one["id"], id);
    assert_error(
        app.get("/v1/voices/unknown", &key).await,
        404,
        "voice_not_found",
    )
    .await;

    // Previews: made ahead by workers (off in this test's server), signed
    // like result URLs; one not made yet is 503 at once and causes no work.
    let piper: Value = app
        .get("/v1/voices?engine=piper", &key)
        .await
        .json()
        .await
        .unwrap();
    let preview = piper["data"][0]["previewUrl"].as_str().unwrap().to_owned();
    assert!(
        preview.starts_with(&format!("{}/previews/", app.addr)),
        "{preview}"
    );
    not_made_yet(app.client.get(&preview).send().await.unwrap()).await;
    let made = app.get_json("/v1/jobs", &app.admin_key).await;
    assert_eq!(made["pagination"]["total"], 0, "{made}");
    let tampered = preview.replace("expires=", "expires=1");
    assert_error(
        app.client.get(&tampered).send().await.unwrap(),
        403,
        "invalid_signature",
    )
    .await;

    let models: Value = app.get("/v1/models", &key).await.json().await.unwrap();
    for engine in ["kokoro", "piper", "espeak", "apertium"] {
        let m = models["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["engine"] == engine)
            .unwrap();
        assert_eq!(m["available"], true, "{m}");
    }
    // Speech-to-text models by name and engine: the CTranslate2 folders
    // take the plain names, the ggml files their stems.
    let stt: Vec<(String, String)> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "speech-to-text" && m["available"] == true)
        .map(|m| {
            (
                m["name"].as_str().unwrap().into(),
                m["engine"].as_str().unwrap().into(),
            )
        })
        .collect();
    for (name, engine) in [
        ("base", "ctranslate2"),
        ("tiny.en", "ctranslate2"),
        ("ggml-base", "whisper.cpp"),
        ("ggml-tiny.en", "whisper.cpp"),
    ] {
        assert!(stt.contains(&(name.into(), engine.into())), "{stt:?}");
    }
}

crate::on_both_backends!(voice_catalog_filters_sorting_and_paging);

/// A preview no worker has made yet: 503 at once, with `Retry-After`.
async fn not_made_yet(r: reqwest::Response) {
    assert_eq!(r.headers()["retry-after"], "5");
    assert_error(r, 503, "service_unavailable").await;
}

/// Previews are made ahead: with no worker making them, 24 preview URLs
/// fetched at once (no key) answer 503 at once, queue no job and leave the
/// operator's own requests alone; a worker of `tts` makes them
/// as it starts, and the same URLs then serve the samples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previews_are_made_ahead_by_workers() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.worker_kinds = "test.sleep".into();
        c.max_concurrent_jobs = 2;
        c.previews_at_start = true;
    })
    .await;
    let voices: Value = app
        .get("/v1/voices?engine=espeak&limit=24", &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    let previews: Vec<String> = voices["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["previewUrl"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(previews.len(), 24);
    let answers =
        futures::future::join_all(previews.iter().map(|url| app.client.get(url).send())).await;
    for r in answers {
        not_made_yet(r.unwrap()).await;
    }
    let jobs = app.get_json("/v1/jobs", &app.admin_key).await;
    assert_eq!(jobs["pagination"]["total"], 0, "{jobs}");
    assert_eq!(
        app.test_job(&app.admin_key, json!({"ms": 0}))
            .await
            .status(),
        200
    );

    let mut config = app.config.clone();
    config.worker_kinds = "tts".into();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(mediagen::run_worker(config, async {
        let _ = stopped.await;
    }));
    let mut served = None;
    for _ in 0..240 {
        let r = app.client.get(&previews[0]).send().await.unwrap();
        if r.status() == 200 {
            assert_eq!(r.headers()["content-type"], "audio/mpeg");
            served = Some(r.bytes().await.unwrap());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let mp3 = served.expect("the preview was made once a worker ran");
    assert!(mp3.len() > 5_000, "{} bytes", mp3.len());
    let again = app.client.get(&previews[0]).send().await.unwrap();
    assert_eq!(
        again.bytes().await.unwrap(),
        mp3,
        "served from the stored copy"
    );
    // Still no job and no charge: previews bill no account.
    let jobs = app.get_json("/v1/jobs", &app.admin_key).await;
    assert_eq!(jobs["pagination"]["total"], 1, "only the test job: {jobs}");
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
}
