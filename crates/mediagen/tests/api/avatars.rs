//! `GET /v1/avatars`: the built-in presenters, their filters and paging,
//! and their clips.

use std::process::Command;

use serde_json::Value;

use crate::helpers::{assert_error, form, Backend, TestApp};

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

pub fn video(dir: &std::path::Path, name: &str, seconds: f64) -> Vec<u8> {
    let path = dir.join(name);
    let ok = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg(format!("testsrc2=size=320x240:rate=25:duration={seconds}"))
        .args(["-c:v", "libx264", "-pix_fmt", "yuv420p"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::read(path).unwrap()
}

async fn upload_avatar(
    app: &TestApp,
    key: &str,
    file: Option<(Vec<u8>, &str)>,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let files = file
        .map(|(bytes, name)| ("file", bytes, name))
        .into_iter()
        .collect();
    app.post_form("/v1/avatars", key, form(files, fields)).await
}

/// Accounts add their own avatars: validated, listed with the built-in
/// ones, found by label, edited, deleted, and never seen by another account.
async fn custom_avatars(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, key) = app.account(1_000, "write").await;
    let (_, other) = app.account(1_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let clip = video(dir.path(), "sam.mp4", 3.0);
    let r = upload_avatar(
        &app,
        &key,
        Some((clip.clone(), "sam.mp4")),
        &[
            ("name", "Studio Sam"),
            ("labels", "Podcast, studio"),
            ("gender", "male"),
        ],
    )
    .await;
    assert_eq!(r.status(), 201);
    let sam: Value = r.json().await.unwrap();
    let id = sam["id"].as_str().unwrap().to_owned();
    assert_eq!(sam["category"], "custom");
    assert_eq!(sam["style"], "photo");
    assert_eq!(sam["labels"], serde_json::json!(["podcast", "studio"]));
    assert_eq!(
        (sam["width"].as_u64(), sam["height"].as_u64()),
        (Some(320), Some(240))
    );
    assert_eq!(sam["orientation"], "landscape");
    assert_eq!(
        (sam["duration"].as_f64(), sam["fps"].as_f64()),
        (Some(3.0), Some(25.0))
    );
    assert_eq!(
        app.download(sam["previewVideoUrl"].as_str().unwrap()).await,
        clip
    );
    let poster = app.download(sam["posterUrl"].as_str().unwrap()).await;
    assert_eq!(&poster[1..4], b"PNG");

    // Found by label and by category, beside the built-in ones.
    let found = list(&app, &key, "?q=podcast").await;
    assert_eq!(names(&found), ["Studio Sam"]);
    assert_eq!(
        list(&app, &key, "?category=custom").await["data"][0]["id"],
        id.as_str()
    );
    assert_eq!(
        list(&app, &key, "?orientation=landscape").await["pagination"]["total"],
        1
    );
    let all = list(&app, &key, "?limit=100").await;
    assert_eq!(all["pagination"]["total"], 13);
    assert_eq!(
        list(&app, &key, "?limit=1&sort=-createdAt").await["data"][0]["id"],
        id.as_str()
    );

    // Edited.
    let r = app
        .request(
            reqwest::Method::PATCH,
            &format!("/v1/avatars/{id}"),
            Some(&key),
            Some(serde_json::json!({"name": "Sam Live", "labels": ["live"]})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let edited: Value = app
        .get(&format!("/v1/avatars/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (edited["name"].as_str(), edited["labels"].clone()),
        (Some("Sam Live"), serde_json::json!(["live"]))
    );
    let r = app
        .request(
            reqwest::Method::PATCH,
            &format!("/v1/avatars/{id}"),
            Some(&key),
            Some(serde_json::json!({"gender": "robot"})),
        )
        .await;
    assert_error(r, 400, "invalid_parameter").await;

    // Another account sees none of it, and cannot use it.
    assert_error(
        app.get(&format!("/v1/avatars/{id}"), &other).await,
        404,
        "resource_not_found",
    )
    .await;
    let r = app
        .request(
            reqwest::Method::PATCH,
            &format!("/v1/avatars/{id}"),
            Some(&other),
            Some(serde_json::json!({"name": "Mine"})),
        )
        .await;
    assert_error(r, 404, "resource_not_found").await;
    assert_error(
        app.delete(&format!("/v1/avatars/{id}"), &other).await,
        404,
        "resource_not_found",
    )
    .await;
    assert_error(
        app.post(
            "/v1/avatar-expansion",
            &other,
            serde_json::json!({"avatarId": id, "duration": 5}),
        )
        .await,
        404,
        "resource_not_found",
    )
    .await;
    assert_eq!(
        list(&app, &other, "?category=custom").await["pagination"]["total"],
        0
    );
    // The built-in ones cannot be edited or deleted.
    assert_error(
        app.delete("/v1/avatars/av_ada", &key).await,
        404,
        "resource_not_found",
    )
    .await;

    // Bad uploads.
    let tone = dir.path().join("tone.wav");
    let ok = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i", "sine=duration=3"])
        .arg(&tone)
        .status()
        .unwrap();
    assert!(ok.success());
    let r = upload_avatar(
        &app,
        &key,
        Some((std::fs::read(&tone).unwrap(), "tone.wav")),
        &[("name", "Tone")],
    )
    .await;
    let e = assert_error(r, 422, "unprocessable_entity").await;
    assert_eq!(e["error"]["details"]["parameter"], "file");
    let short = video(dir.path(), "short.mp4", 0.5);
    let r = upload_avatar(&app, &key, Some((short, "short.mp4")), &[("name", "Blink")]).await;
    assert_error(r, 422, "unprocessable_entity").await;
    let r = upload_avatar(
        &app,
        &key,
        Some((b"just some words".to_vec(), "a.mp4")),
        &[("name", "Text")],
    )
    .await;
    assert_error(r, 415, "unsupported_media_type").await;
    let r = upload_avatar(&app, &key, Some((clip.clone(), "sam.mp4")), &[]).await;
    assert_error(r, 400, "invalid_parameter").await;
    let (_, reader) = app.account(0, "read").await;
    let r = upload_avatar(&app, &reader, Some((clip, "sam.mp4")), &[("name", "R")]).await;
    assert_error(r, 403, "insufficient_permissions").await;

    // Deleted, with its files.
    let url = sam["previewVideoUrl"].as_str().unwrap().to_owned();
    assert_eq!(
        app.delete(&format!("/v1/avatars/{id}"), &key)
            .await
            .status(),
        200
    );
    assert_error(
        app.get(&format!("/v1/avatars/{id}"), &key).await,
        404,
        "resource_not_found",
    )
    .await;
    assert_eq!(app.client.get(url).send().await.unwrap().status(), 404);
}

crate::on_both_backends!(catalog_filters_and_pages, custom_avatars);
