//! Attacks through shared machinery, tried with several accounts: result
//! URLs, signed downloads and the shared speech engines.

use mediagen_core::time::now_ms;
use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};
use crate::stt::wer;
use crate::tts::joe;
use crate::voice_clone::transcribe_in;

/// The blob key inside a signed URL.
fn key_of(url: &str) -> String {
    url.split("/blobs/")
        .nth(1)
        .and_then(|rest| rest.split('?').next())
        .unwrap()
        .to_owned()
}

/// A URL for `key`, correctly signed and valid for a minute.
fn signed(app: &TestApp, key: &str) -> String {
    let expires = now_ms() / 1000 + 60;
    format!(
        "{}/blobs/{key}?expires={expires}&signature={}",
        app.addr,
        app.state.signer.sign(key, expires)
    )
}

/// Text a user sends and gets back in a result (as speech copies its words
/// and dubs their lines) stays text: no string is read as a storage key.
async fn user_text_never_becomes_a_url(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (alice_id, alice) = app.account(100, "write").await;
    let (_, bob) = app.account(100, "write").await;
    let job: Value = app
        .test_job(&alice, json!({"output": "alice's secret"}))
        .await
        .json()
        .await
        .unwrap();
    let alice_url = job["result"]["textUrl"].as_str().unwrap().to_owned();
    let alice_key = key_of(&alice_url);
    assert_eq!(app.download(&alice_url).await, b"alice's secret");

    let echo = json!([
        format!("blob:{alice_key}"),
        {"audioUrl": format!("blob:{alice_key}")},
        format!("blob:files/{alice_id}/file_x"),
        "blob:../../etc/passwd",
    ]);
    let r = app.test_job(&bob, json!({"echo": echo.clone()})).await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    let job: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(job["result"]["echo"], echo, "user text comes back as sent");
    // The only URL in the answer is Bob's own output.
    assert_eq!(body.matches("/blobs/").count(), 1, "{body}");
    assert!(!body.contains(&alice_url[..alice_url.find('?').unwrap()]));
    let own = job["result"]["textUrl"].as_str().unwrap();
    assert!(key_of(own).starts_with(&format!("jobs/{}/", job["id"].as_str().unwrap())));
    // Listing shows the same.
    let list = app.get("/v1/jobs", &bob).await.text().await.unwrap();
    assert_eq!(list.matches("/blobs/").count(), 1, "{list}");
}

/// A signature alone reaches nothing but the registered outputs of jobs that
/// exist: not uploads, not a job's working files, not made-up keys.
async fn signed_keys_reach_only_registered_outputs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (account, key) = app.account(100, "write").await;
    let job: Value = app
        .test_job(&key, json!({"output": "result"}))
        .await
        .json()
        .await
        .unwrap();
    let job_id = job["id"].as_str().unwrap();
    let url = job["result"]["textUrl"].as_str().unwrap();
    assert_eq!(app.download(url).await, b"result");
    assert_eq!(app.download(&signed(&app, &key_of(url))).await, b"result");

    for stored in [
        format!("files/{account}/file_upload"),
        format!("jobs/{job_id}/dub/state.json"),
        format!("voices/{account}/voice_gone.mp3"),
        format!("avatars/{account}/avatar_gone.png"),
        "avatars/premade/nobody.png".to_owned(),
        "tmp/anything".to_owned(),
    ] {
        app.state
            .blobs
            .put(&stored, bytes::Bytes::from_static(b"private"))
            .await
            .unwrap();
        let r = app.client.get(signed(&app, &stored)).send().await.unwrap();
        assert_error(r, 404, "resource_not_found").await;
    }
    // Foreign or forged signatures are refused before anything is looked up.
    let forged = format!(
        "{}/blobs/{}?expires={}&signature={}",
        app.addr,
        key_of(url),
        now_ms() / 1000 + 60,
        "0".repeat(64)
    );
    assert_error(
        app.client.get(forged).send().await.unwrap(),
        403,
        "invalid_signature",
    )
    .await;
}

/// Requests of several accounts, side by side with hostile texts (the old
/// phonemizer's sentinel word, a marker-like number, control characters,
/// newlines, SSML fragments), each get speech of their own text, checked by
/// the recogniser. Engine work only, so it runs once, on SQLite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_hostile_texts_never_shift_speech_between_accounts() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.sync_wait_seconds = 120.0;
        c.workers = 2;
    })
    .await;
    let (_, p) = app.account(100_000, "write").await;
    let (_, q) = app.account(100_000, "write").await;
    let voice = joe(&app, &p).await;
    let hostile = [
        "Zyzzyvaqx.",
        "zyzzyvaqx.\nzyzzyvaqx.",
        "482913774512.\n\n482913774512.",
        "Dear Mr.",
        "Hello\u{1}\u{1b}[2J\r\nthere",
        "<speak>unclosed <break time=\"1s\"",
    ];
    let own = [
        (&p, "The weather is lovely in the garden today."),
        (&q, "My bank password is purple elephant."),
        (&p, "Please bring seven apples to the market."),
        (&q, "The train leaves from platform number four."),
    ];
    // Every hostile text, each sent beside one of the accounts' own (two
    // workers take them in whatever order they come).
    let mut requests = Vec::new();
    for (i, h) in hostile.iter().enumerate() {
        requests.push(speak(&app, &q, &voice, h, false));
        if let Some((key, text)) = own.get(i) {
            requests.push(speak(&app, key, &voice, text, true));
        }
    }
    let answers = futures::future::join_all(requests).await;
    let spoken: Vec<Vec<u8>> = answers.into_iter().flatten().collect();
    assert_eq!(spoken.len(), own.len());
    for ((_, text), audio) in own.iter().zip(spoken) {
        // Each answer is its own text: close to it (the recogniser slips
        // now and then) and further from every other text.
        let heard = transcribe_in(&app, &app.admin_key, audio, "en").await;
        let mine = wer(text, &heard);
        assert!(mine < 0.5, "`{text}` was heard as `{heard}`");
        for (_, other) in own.iter().filter(|(_, o)| o != text) {
            assert!(
                mine < wer(other, &heard),
                "`{text}` was heard as `{heard}`, closer to `{other}`"
            );
        }
    }
    // User text that looks like a storage key stays text in word timestamps.
    let job: Value = app
        .post(
            "/v1/text-to-speech",
            &p,
            json!({"text": "blob:jobs/job_x/speech.mp3 is mine.", "voiceId": voice, "timestamps": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        job["result"]["words"][0]["word"],
        "blob:jobs/job_x/speech.mp3"
    );
    assert_eq!(job.to_string().matches("/blobs/").count(), 1, "{job}");
}

/// Speech of `text` as wav (`keep`), or only the request made (hostile
/// texts may be refused or spoken; either way they are sent).
async fn speak(app: &TestApp, key: &str, voice: &str, text: &str, keep: bool) -> Option<Vec<u8>> {
    let r = app
        .post(
            "/v1/text-to-speech",
            key,
            json!({"text": text, "voiceId": voice, "format": "wav"}),
        )
        .await;
    let status = r.status();
    let job: Value = r.json().await.unwrap();
    if !keep {
        assert!(status == 200 || status == 400 || status == 422, "{job}");
        return None;
    }
    assert_eq!(job["status"], "completed", "{job}");
    Some(
        app.download(job["result"]["audioUrl"].as_str().unwrap())
            .await,
    )
}

/// One account's resources, each by the path template that takes its id.
struct Owned {
    ids: std::collections::HashMap<&'static str, String>,
    file: String,
    voice: String,
    avatar: String,
    /// A webhook delivery of the account's endpoint (`ids` has the endpoint).
    delivery: String,
}

/// A job, a file, a key, an avatar, a cloned voice and a webhook endpoint
/// with a delivery of the account `key`.
async fn resources(app: &TestApp, account: &str, key: &str) -> Owned {
    let dir = tempfile::tempdir().unwrap();
    // An endpoint first, so the job's end makes a delivery of its own.
    let hook: Value = app
        .post(
            "/v1/webhooks",
            key,
            json!({"url": "https://hooks.example.com/mine"}),
        )
        .await
        .json()
        .await
        .unwrap();
    let hook = hook["id"].as_str().unwrap().to_owned();
    let job: Value = app.test_job(key, json!({})).await.json().await.unwrap();
    let job = job["id"].as_str().unwrap().to_owned();
    let sent: Value = app
        .get(&format!("/v1/webhooks/{hook}/deliveries"), key)
        .await
        .json()
        .await
        .unwrap();
    let delivery = sent["data"][0]["id"].as_str().unwrap().to_owned();
    let sample = crate::voice_clone::espeak(
        dir.path(),
        "sample.wav",
        "en-us",
        "50",
        "Peter Piper picked a peck of pickled peppers, and then he went home to count \
         them all one by one. She sells sea shells by the sea shore, and the shells she \
         sells are surely the finest in town.",
    );
    let sample = std::fs::read(sample).unwrap();
    let created = |r: reqwest::Response| async move {
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 201, "{v}");
        v["id"].as_str().unwrap().to_owned()
    };
    let file = created(
        app.post_form(
            "/v1/files",
            key,
            crate::helpers::form(vec![("file", sample.clone(), "s.wav")], &[]),
        )
        .await,
    )
    .await;
    let key_id = created(app.post("/v1/keys", key, json!({"level": "read"})).await).await;
    let clip = crate::avatars::video(dir.path(), "clip.mp4", 2.0);
    let avatar = app
        .made(
            key,
            app.post_form(
                "/v1/avatars",
                key,
                crate::helpers::form(vec![("file", clip, "clip.mp4")], &[("name", "Mine")]),
            )
            .await,
            "avatarId",
        )
        .await;
    let voice = app
        .made(
            key,
            app.post_form(
                "/v1/voices",
                key,
                crate::helpers::form(
                    vec![("files", sample, "s.wav")],
                    // WORLD: the walk is about whose voice it is, and a
                    // neural search would take minutes of the suite.
                    &[
                        ("name", "Mine"),
                        ("consent", "true"),
                        ("language", "en"),
                        ("method", "world"),
                    ],
                ),
            )
            .await,
            "voiceId",
        )
        .await;
    let ids = [
        ("/v1/jobs/{id}", job.clone()),
        ("/v1/dubbing/{jobId}/segments", job),
        ("/v1/files/{id}", file.clone()),
        ("/v1/keys/{id}", key_id),
        ("/v1/avatars/{id}", avatar.clone()),
        ("/v1/voices/{id}", voice.clone()),
        ("/v1/webhooks/{id}", hook.clone()),
        ("/v1/webhooks/{id}/deliveries", hook.clone()),
        ("/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", hook),
        ("/v1/accounts/{id}", account.to_owned()),
        ("/v1/accounts/{id}/credits", account.to_owned()),
        ("/v1/accounts/{id}/keys", account.to_owned()),
    ]
    .into_iter()
    .collect();
    Owned {
        ids,
        file,
        voice,
        avatar,
        delivery,
    }
}

fn method(name: &str) -> reqwest::Method {
    reqwest::Method::from_bytes(name.to_uppercase().as_bytes()).unwrap()
}

/// Walks the published OpenAPI document: every route that takes an id
/// answers another account 404 (the operator's routes: 403), every route
/// that changes something refuses a read key, and every body field that
/// names a resource answers 404 for another account's.
async fn every_route_refuses_other_accounts_and_read_keys(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.sync_wait_seconds = 60.0).await;
    let (a_id, a) = app.account(100_000, "admin").await;
    let (_, b) = app.account(100_000, "admin").await;
    let b_read: Value = app
        .post("/v1/keys", &b, json!({"level": "read"}))
        .await
        .json()
        .await
        .unwrap();
    let b_read = b_read["key"].as_str().unwrap().to_owned();
    let mine = resources(&app, &a_id, &a).await;
    let doc: Value = app.openapi().await;
    let (mut walked, mut refused_read) = (0, 0);
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/v1/") {
            continue; // signed routes: their own tests
        }
        if path == "/v1/models/{id}" {
            continue; // the server's models: the same for every account
        }
        for (verb, op) in item.as_object().unwrap() {
            let level = op["security"][0]["bearer"][0].as_str().unwrap_or("");
            let url = match path.find('{') {
                None => path.clone(),
                Some(_) => {
                    let id = mine
                        .ids
                        .get(path.as_str())
                        .unwrap_or_else(|| panic!("{path}: add its resource to this walk"));
                    let (head, rest) = path.split_once('{').unwrap();
                    let tail = rest.split_once('}').unwrap().1;
                    let url = format!("{head}{id}{tail}").replace("{deliveryId}", &mine.delivery);
                    // A body that would be valid for the owner, so the answer
                    // is about the id, not the body.
                    let body = match path.as_str() {
                        "/v1/dubbing/{jobId}/segments" => {
                            json!({"segments": [{"index": 0, "translatedText": "Hola."}]})
                        }
                        "/v1/accounts/{id}/credits" => json!({"amount": 1}),
                        "/v1/accounts/{id}/keys" => json!({"level": "read"}),
                        _ if verb == "patch" => json!({"name": "Theirs"}),
                        _ => json!({}),
                    };
                    let r = app.request(method(verb), &url, Some(&b), Some(body)).await;
                    let status = r.status().as_u16();
                    let body: Value = r.json().await.unwrap();
                    let code = body["error"]["code"].as_str().unwrap_or("");
                    if path.starts_with("/v1/accounts/") {
                        assert_eq!(status, 403, "{verb} {path}: {body}");
                    } else {
                        assert!(
                            status == 404
                                && (code == "resource_not_found" || code == "voice_not_found"),
                            "{verb} {path} across accounts: {status} {body}"
                        );
                    }
                    walked += 1;
                    url
                }
            };
            if verb != "get" && (level == "write" || level == "admin") {
                let r = app
                    .request(method(verb), &url, Some(&b_read), Some(json!({})))
                    .await;
                assert_error(r, 403, "insufficient_permissions").await;
                refused_read += 1;
            }
        }
    }
    assert!(
        walked >= 12 && refused_read >= 20,
        "{walked} {refused_read}"
    );

    // Fields that name a resource.
    let b_file: Value = app
        .post_form(
            "/v1/files",
            &b,
            crate::helpers::form(
                vec![("file", crate::helpers::silent_wav(16_000, 16_000), "b.wav")],
                &[],
            ),
        )
        .await
        .json()
        .await
        .unwrap();
    let b_file = b_file["id"].as_str().unwrap();
    let voices: Value = app
        .get("/v1/voices?engine=espeak&limit=1", &b)
        .await
        .json()
        .await
        .unwrap();
    let catalog = voices["data"][0]["id"].as_str().unwrap();
    let (file, voice, avatar) = (&mine.file, &mine.voice, &mine.avatar);
    for (path, body) in [
        ("/v1/speech-to-text", json!({"fileId": file})),
        ("/v1/video/trim", json!({"fileId": file, "ranges": "0-1"})),
        (
            "/v1/voice-changer",
            json!({"fileId": file, "voiceId": catalog}),
        ),
        (
            "/v1/voice-changer",
            json!({"fileId": b_file, "voiceId": voice}),
        ),
        (
            "/v1/dubbing",
            json!({"fileId": file, "targetLanguage": "es"}),
        ),
        (
            "/v1/avatar-expansion",
            json!({"fileId": file, "duration": 5}),
        ),
        (
            "/v1/avatar-expansion",
            json!({"avatarId": avatar, "duration": 5}),
        ),
        (
            "/v1/avatar-expansion",
            json!({"avatarId": avatar, "audioFileId": b_file}),
        ),
        (
            "/v1/avatar-expansion",
            json!({"fileId": b_file, "audioFileId": file}),
        ),
        (
            "/v1/text-to-speech",
            json!({"text": "Hello.", "voiceId": voice}),
        ),
        (
            "/v1/text-to-speech/stream",
            json!({"text": "Hello.", "voiceId": voice}),
        ),
        (
            "/v1/audio/speech",
            json!({"model": "tts-1", "input": "Hello.", "voice": voice}),
        ),
        (
            "/v1/audio/transcriptions",
            json!({"fileId": file, "model": "whisper-1"}),
        ),
        (
            "/v1/audio/translations",
            json!({"fileId": file, "model": "whisper-1"}),
        ),
    ] {
        let r = app.post(path, &b, body.clone()).await;
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        let code = v["error"]["code"].as_str().unwrap_or("");
        assert!(
            status == 404 && (code == "resource_not_found" || code == "voice_not_found"),
            "{path} {body}: {status} {v}"
        );
    }
    // The same through ElevenLabs' routes, with its `xi-api-key` header.
    let eleven = |verb: reqwest::Method, path: String| {
        app.client
            .request(verb, format!("{}/elevenlabs/v1{path}", app.addr))
            .header("xi-api-key", &b)
    };
    for (request, what) in [
        (
            eleven(reqwest::Method::GET, format!("/voices/{voice}")),
            "voice",
        ),
        (
            eleven(reqwest::Method::POST, format!("/text-to-speech/{voice}"))
                .json(&json!({"text": "Hello."})),
            "speech",
        ),
        (
            eleven(reqwest::Method::POST, "/speech-to-text".into())
                .json(&json!({"fileId": file, "model_id": "scribe_v1"})),
            "file",
        ),
    ] {
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 404, "elevenlabs {what}: {v}");
    }
    // Lists never show another account's things.
    for list in [
        "/v1/jobs",
        "/v1/files",
        "/v1/keys",
        "/v1/avatars?limit=100",
        "/v1/voices?limit=100",
        "/elevenlabs/v1/voices",
        "/v1/webhooks",
    ] {
        let text = app.get(list, &b).await.text().await.unwrap();
        for id in mine.ids.values().filter(|id| **id != a_id) {
            assert!(!text.contains(id.as_str()), "{list} shows {id}");
        }
    }
}

crate::on_both_backends!(
    user_text_never_becomes_a_url,
    signed_keys_reach_only_registered_outputs,
    every_route_refuses_other_accounts_and_read_keys,
    results_from_before_the_upgrade_keep_their_own_files
);

/// Jobs finished before outputs were registered keep working URLs after
/// the upgrade: their own files become outputs; nothing else does.
async fn results_from_before_the_upgrade_keep_their_own_files(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let job: Value = app
        .test_job(&app.admin_key, json!({"output": "kept"}))
        .await
        .json()
        .await
        .unwrap();
    let id = job["id"].as_str().unwrap().to_owned();
    let legacy = json!({
        "textUrl": format!("blob:jobs/{id}/output.txt"),
        "echo": "blob:jobs/job_other/speech.mp3",
    });
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(app.database_url()).await.unwrap();
    // As a database from before the upgrade holds it.
    sqlx::query("UPDATE jobs SET outputs = NULL, result = $2 WHERE id = $1")
        .bind(&id)
        .bind(legacy.to_string())
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM settings WHERE name = 'legacy_outputs_registered'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(app.state.db.register_legacy_outputs().await.unwrap(), 1);
    assert_eq!(app.state.db.register_legacy_outputs().await.unwrap(), 0);
    let shown: Value = app
        .get(&format!("/v1/jobs/{id}"), &app.admin_key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        app.download(shown["result"]["textUrl"].as_str().unwrap())
            .await,
        b"kept"
    );
    assert_eq!(shown["result"]["echo"], "blob:jobs/job_other/speech.mp3");
}
