//! `GET /v1/avatars`: the built-in presenters, their filters and paging,
//! and their clips.

use std::process::Command;

use serde_json::Value;

use crate::helpers::{assert_error, Backend, TestApp};

async fn list(app: &TestApp, key: &str, query: &str) -> Value {
    let r = app.get(&format!("/v1/avatars{query}"), key).await;
    assert_eq!(r.status(), 200, "{query}");
    r.json().await.unwrap()
}

fn names(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn catalog_filters_and_pages(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(0, "read").await;
    let all = list(&app, &key, "?limit=100").await;
    let total = all["pagination"]["total"].as_u64().unwrap();
    assert!(total >= 12, "{all}");
    let every = names(&all);
    let mut sorted = every.clone();
    sorted.sort();
    assert_eq!(every, sorted, "sorted by name");
    let first = &all["data"][0];
    for field in [
        "id",
        "description",
        "gender",
        "labels",
        "previewVideoUrl",
        "posterUrl",
        "createdAt",
    ] {
        assert!(!first[field].is_null(), "{field} in {first}");
    }
    assert_eq!(
        (first["width"].as_u64(), first["fps"].as_f64()),
        (Some(512), Some(25.0))
    );
    assert_eq!(first["category"], "premade");
    assert_eq!(first["style"], "illustrated");

    // Paging: the last page and the envelope.
    let page = list(&app, &key, "?limit=5&page=3").await;
    assert_eq!(
        page["data"].as_array().unwrap().len(),
        (total - 10).min(5) as usize
    );
    assert_eq!(page["pagination"]["page"], 3);
    assert_eq!(page["pagination"]["hasMore"], total > 15);
    let reversed = names(&list(&app, &key, "?limit=100&sort=-name").await);
    assert_eq!(reversed, every.iter().rev().cloned().collect::<Vec<_>>());

    // Filters.
    let women = list(&app, &key, "?gender=female&limit=100").await;
    assert!(women["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["gender"] == "female"));
    assert!(women["pagination"]["total"].as_u64().unwrap() < total);
    let glasses = list(&app, &key, "?q=glasses&limit=100").await;
    assert!(!names(&glasses).is_empty());
    assert!(glasses["data"].as_array().unwrap().iter().all(|a| {
        a["labels"].as_array().unwrap().contains(&"glasses".into())
            || a["description"].as_str().unwrap().contains("glasses")
    }));
    assert_eq!(list(&app, &key, "?q=ADA").await["data"][0]["name"], "Ada");
    assert_eq!(
        list(&app, &key, "?category=custom").await["pagination"]["total"],
        0
    );
    assert_eq!(
        list(&app, &key, "?orientation=square").await["pagination"]["total"],
        total
    );
    for bad in [
        "?gender=robot",
        "?category=mine",
        "?sort=age",
        "?orientation=round",
        "?limit=0",
    ] {
        assert_error(
            app.get(&format!("/v1/avatars{bad}"), &key).await,
            400,
            "invalid_parameter",
        )
        .await;
    }

    // One avatar; an unknown id.
    let id = first["id"].as_str().unwrap();
    let one: Value = app
        .get(&format!("/v1/avatars/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(one["name"], first["name"]);
    assert_error(
        app.get("/v1/avatars/av_nobody", &key).await,
        404,
        "resource_not_found",
    )
    .await;
    let r = app
        .client
        .get(format!("{}/v1/avatars", app.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

crate::on_both_backends!(catalog_filters_and_pages);

/// The clip is a 4-second 512×512 25 fps H.264 loop and the poster a PNG.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previews_are_real_clips() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(0, "read").await;
    let avatar = &list(&app, &key, "?limit=1").await["data"][0];
    let clip = app
        .download(avatar["previewVideoUrl"].as_str().unwrap())
        .await;
    let poster = app.download(avatar["posterUrl"].as_str().unwrap()).await;
    assert_eq!(&poster[1..4], b"PNG");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clip.mp4");
    std::fs::write(&path, &clip).unwrap();
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-count_frames",
            "-show_entries",
        ])
        .args([
            "stream=codec_name,width,height,r_frame_rate,nb_read_frames",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&probe.stdout).trim(),
        "h264,512,512,25/1,100"
    );
}
