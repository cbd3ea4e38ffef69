//! Attacks through shared machinery, tried with several accounts: result
//! URLs, signed downloads and the shared speech engines.

use mediagen_core::time::now_ms;
use serde_json::{json, Value};

use crate::helpers::{assert_error, Backend, TestApp};
use crate::stt::wer;
use crate::tts::joe;

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

crate::on_both_backends!(
    user_text_never_becomes_a_url,
    signed_keys_reach_only_registered_outputs
);

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
    for round in 0..2 {
        let mut requests = Vec::new();
        for (i, (key, text)) in own.iter().enumerate() {
            let h = hostile[(i + round * own.len()) % hostile.len()];
            requests.push(speak(&app, &q, &voice, h, false));
            requests.push(speak(&app, key, &voice, text, true));
        }
        let answers = futures::future::join_all(requests).await;
        let spoken: Vec<Vec<u8>> = answers.into_iter().flatten().collect();
        assert_eq!(spoken.len(), own.len());
        for ((_, text), audio) in own.iter().zip(spoken) {
            // Each answer is its own text: close to it (the recogniser
            // slips now and then) and further from every other text.
            let heard = transcript(&app, audio).await;
            let mine = wer(text, &heard);
            assert!(mine < 0.5, "round {round}: `{text}` was heard as `{heard}`");
            for (_, other) in own.iter().filter(|(_, o)| o != text) {
                assert!(
                    mine < wer(other, &heard),
                    "round {round}: `{text}` was heard as `{heard}`, closer to `{other}`"
                );
            }
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

async fn transcript(app: &TestApp, audio: Vec<u8>) -> String {
    let job: Value = app
        .post_form(
            "/v1/speech-to-text",
            &app.admin_key,
            crate::helpers::form(vec![("file", audio, "speech.wav")], &[("language", "en")]),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["status"], "completed", "{job}");
    job["result"]["text"].as_str().unwrap().to_owned()
}
