//! Live transcription over WebSocket (`/v1/speech-to-text/realtime`),
//! driven by a plain WebSocket client: the real two-person telephone call
//! (the pyannote.audio wheel's sample, installed with the diarization
//! models) streamed in 100-ms frames, its committed turns against the
//! batch transcript of the same file; the upgrade's refusals; the charge.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{form, Backend, TestApp};
use crate::stt::wer;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The upgrade of `query` with `key`: the socket, or the refusal's status
/// and body.
async fn connect(app: &TestApp, key: &str, query: &str) -> Result<Socket, (u16, Value)> {
    upgrade(app, Some(key), "/v1/speech-to-text/realtime", query).await
}

/// [`connect`], tried again while no worker's slot answers
/// ([`upgrade_once_claimed`]).
async fn connect_once_claimed(
    app: &TestApp,
    key: &str,
    query: &str,
    tries: usize,
    pause: Duration,
) -> Socket {
    upgrade_once_claimed(app, key, "/v1/speech-to-text/realtime", query, tries, pause).await
}

/// [`upgrade`], tried again (`pause` apart, at most `tries` times) while no
/// worker's slot answers (503 `no_session_slot`: a fresh server's worker
/// still loading its models under a full test run; the 503 says to retry).
pub async fn upgrade_once_claimed(
    app: &TestApp,
    key: &str,
    path: &str,
    query: &str,
    tries: usize,
    pause: Duration,
) -> Socket {
    for _ in 1..tries {
        match upgrade(app, Some(key), path, query).await {
            Ok(s) => return s,
            Err((503, _)) => tokio::time::sleep(pause).await,
            Err(other) => panic!("{other:?}"),
        }
    }
    upgrade(app, Some(key), path, query)
        .await
        .expect("a worker claims the session")
}

/// The upgrade of `path?query`, with `key` as the Bearer when given.
pub async fn upgrade(
    app: &TestApp,
    key: Option<&str>,
    path: &str,
    query: &str,
) -> Result<Socket, (u16, Value)> {
    let url = format!("{}{path}?{query}", app.addr.replace("http://", "ws://"));
    let mut request = url.into_client_request().unwrap();
    if let Some(key) = key {
        request.headers_mut().insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {key}")).unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            let body = r.body().clone().unwrap_or_default();
            Err((
                r.status().as_u16(),
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            ))
        }
        Err(e) => panic!("upgrade failed: {e}"),
    }
}

/// Where a second of silence is put into the call: between "This is
/// Diane in New Jersey." (ending at 14.05 s) and "And I'm Sheila…" (from
/// 14.37 s). Its two speakers otherwise answer each other with no pause
/// as long as a turn's end.
pub const PAUSE_AT: f64 = 14.2;

/// Held by each test that streams the call at real-time pace: one such
/// session at a time in this suite (the product's claim is two sessions in
/// real time on two idle cores; three beside the rest of the suite fell
/// behind and merged turns).
pub static LIVE_CALL: std::sync::LazyLock<tokio::sync::Mutex<()>> =
    std::sync::LazyLock::new(|| tokio::sync::Mutex::new(()));

/// The 16-kHz call with a second of silence at [`PAUSE_AT`], as a WAV
/// file and as 16-bit PCM.
pub fn call_pcm() -> (Vec<u8>, Vec<u8>) {
    let wav = std::fs::read(crate::helpers::models_dir().join("diarize/sample.wav")).unwrap();
    let audio = mediagen_media::audio::parse_wav(&wav).unwrap();
    assert_eq!(audio.sample_rate, 16_000);
    let at = (PAUSE_AT * 16_000.0) as usize;
    let mut samples = audio.samples[..at].to_vec();
    samples.extend(std::iter::repeat_n(0.0, 16_000));
    samples.extend_from_slice(&audio.samples[at..]);
    (crate::helpers::wav(&samples, 16_000), pcm16(&samples))
}

/// Samples as 16-bit little-endian PCM.
pub fn pcm16(samples: &[f32]) -> Vec<u8> {
    samples
        .iter()
        .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes())
        .collect()
}

/// The batch transcript of `wav` (`POST /v1/speech-to-text`, English).
pub async fn batch_transcript(app: &TestApp, key: &str, wav: Vec<u8>) -> String {
    let batch = app
        .post_form(
            "/v1/speech-to-text",
            key,
            form(vec![("file", wav, "call.wav")], &[("language", "en")]),
        )
        .await;
    let batch: Value = batch.json().await.unwrap();
    batch["result"]["text"]
        .as_str()
        .expect("batch text")
        .to_owned()
}

/// The words the call's speakers say (the wheel's `sample.stm`, in order).
pub fn call_reference() -> String {
    let stm =
        std::fs::read_to_string(crate::helpers::models_dir().join("diarize/sample.stm")).unwrap();
    let words: Vec<&str> = stm
        .lines()
        .flat_map(|line| line.split_whitespace().skip(5))
        .collect();
    words.join(" ")
}

/// The issue's bound on live transcription: against what was said, the
/// committed text is at most 5 WER points worse than the batch transcript
/// of the same file (and, as a check of its own, within 15 % of it: the
/// batch decodes the file in its own 30-s sections, so a turn's words can
/// differ where the two cut the sound differently; 8.1–10.8 % by VM).
pub fn assert_near_batch(client: &str, live: &str, batch: &str) {
    let reference = call_reference();
    let (live_wer, batch_wer) = (wer(&reference, live), wer(&reference, batch));
    let apart = wer(batch, live);
    eprintln!(
        "{client}: WER against the speakers' words: live {:.1} %, batch {:.1} %; \
         live against batch {:.1} %",
        live_wer * 100.0,
        batch_wer * 100.0,
        apart * 100.0
    );
    assert!(
        live_wer <= batch_wer + 0.05,
        "{client}: live {live:?} ({live_wer}) against batch {batch:?} ({batch_wer})"
    );
    assert!(
        apart <= 0.15,
        "{client}: live {live:?} against batch {batch:?}"
    );
}

/// Every event until the close, and the close's code.
pub async fn events(socket: &mut Socket) -> (Vec<Value>, Option<u16>) {
    let mut out = Vec::new();
    while let Some(m) = tokio::time::timeout(Duration::from_secs(120), socket.next())
        .await
        .expect("the session answers")
    {
        match m {
            Ok(Message::Text(t)) => out.push(serde_json::from_str(t.as_str()).unwrap()),
            Ok(Message::Close(c)) => return (out, c.map(|c| u16::from(c.code))),
            Ok(_) => {}
            Err(e) => panic!("socket error: {e}"),
        }
    }
    (out, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_call_is_transcribed_turn_by_turn() {
    let _alone = LIVE_CALL.lock().await;
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(1_000, "write").await;
    let (wav, pcm) = call_pcm();
    let batch_text = batch_transcript(&app, &key, wav).await;

    // Under a full test run the worker may take its time to claim the
    // session (503 `no_session_slot` says to retry, and refunds the hold).
    let query = "language=en&sampleRate=16000&silenceMs=500";
    let socket = connect_once_claimed(&app, &key, query, 10, Duration::from_secs(1)).await;
    let (mut sink, mut stream) = socket.split();
    // 100-ms frames at three times the speaking pace (the turns are found
    // on the sound's own clock, not the wall's).
    let sender = tokio::spawn(async move {
        for frame in pcm.chunks(3200) {
            sink.send(Message::Binary(frame.to_vec().into()))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(33)).await;
        }
        sink.send(Message::Text(r#"{"type":"finish"}"#.into()))
            .await
            .unwrap();
        sink
    });
    let mut all = Vec::new();
    let mut code = None;
    while let Some(m) = tokio::time::timeout(Duration::from_secs(120), stream.next())
        .await
        .expect("the session answers")
    {
        match m.expect("a frame") {
            Message::Text(t) => all.push(serde_json::from_str::<Value>(t.as_str()).unwrap()),
            Message::Close(c) => {
                code = c.map(|c| u16::from(c.code));
                break;
            }
            _ => {}
        }
    }
    let _ = sender.await;
    assert_eq!(code, Some(1000), "{all:?}");
    assert_eq!(all[0]["type"], "session.started", "{all:?}");
    let session = all[0]["sessionId"].as_str().unwrap().to_owned();
    let committed: Vec<&Value> = all
        .iter()
        .filter(|e| e["type"] == "transcript.committed")
        .collect();
    let partials = all
        .iter()
        .filter(|e| e["type"] == "transcript.partial")
        .count();
    // The pause ends the first turn; the second runs to the finish. Each
    // may be cut before (`final: false`) where its drafts agree, the
    // pieces end to end.
    let ends: Vec<&Value> = committed
        .iter()
        .copied()
        .filter(|e| e["final"] == true)
        .collect();
    assert_eq!(
        ends.len(),
        2,
        "a turn on each side of the pause: {committed:?}"
    );
    assert_eq!(committed.last().unwrap()["final"], true, "{committed:?}");
    let first_end = ends[0]["end"].as_f64().unwrap();
    assert!(
        (PAUSE_AT - 0.3..PAUSE_AT + 0.5).contains(&first_end),
        "{}",
        ends[0]
    );
    for pair in committed.windows(2).filter(|p| p[0]["final"] == false) {
        let (end, next) = (
            pair[0]["end"].as_f64().unwrap(),
            pair[1]["start"].as_f64().unwrap(),
        );
        assert!(
            (end - next).abs() < 0.02,
            "a cut's rest goes on from it: {pair:?}"
        );
        assert!(end - pair[0]["start"].as_f64().unwrap() >= 3.8, "{pair:?}");
    }
    assert!(
        partials >= committed.len(),
        "partials while speaking: {all:?}"
    );
    let live: Vec<&str> = committed
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let live = live.join(" ");
    assert_near_batch("native client", &live, &batch_text);
    // Turns in order, words inside their turn, in session seconds.
    let mut last = 0.0;
    for turn in &committed {
        let (start, end) = (
            turn["start"].as_f64().unwrap(),
            turn["end"].as_f64().unwrap(),
        );
        assert!(start >= last - 0.5 && end > start && end <= 31.5, "{turn}");
        for w in turn["words"].as_array().unwrap() {
            let t = w["start"].as_f64().unwrap();
            assert!(t >= start - 0.05 && t <= end + 0.05, "{w} in {turn}");
        }
        last = end;
    }
    assert_eq!(all.last().unwrap()["type"], "session.ended");
    // Charged for the 30 s received, once the worker settled the job.
    let job = app.settled(&key, &session, Duration::from_secs(30)).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["kind"], "stt.realtime");
    let seconds = job["result"]["seconds"].as_f64().unwrap();
    assert!((seconds - 31.0).abs() < 0.1, "{job}");
    assert_eq!(job["credits"], 31, "{job}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upgrade_is_refused_as_the_api_refuses() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.max_sessions_per_account = 1).await;
    let (_, key) = app.account(1_000, "write").await;
    let read = app.key("read").await;
    assert_eq!(connect(&app, &read, "").await.err().unwrap().0, 403);
    assert_eq!(connect(&app, "mg_nokey", "").await.err().unwrap().0, 401);
    let (status, body) = connect(&app, &key, "sampleRate=11025").await.err().unwrap();
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("sampleRate")),
        "{body}"
    );
    let (status, body) = connect(&app, &key, "commit=sometimes").await.err().unwrap();
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("commit")),
        "{body}"
    );
    // Not a WebSocket: 426.
    let r = app.get("/v1/speech-to-text/realtime", &key).await;
    assert_eq!(r.status().as_u16(), 426);
    // The account's cap: a second session at once is refused. (A fresh
    // server's worker may not claim the first within the 10 s a slot is
    // waited for while it loads its models under a full test run: its 503
    // says to retry.)
    let mut first = connect_once_claimed(&app, &key, "", 3, Duration::ZERO).await;
    let (status, body) = connect(&app, &key, "").await.err().unwrap();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("session_limit_exceeded")),
        "{body}"
    );
    // The session is its account's job: another account's key gets 404.
    let started: Value = match first.next().await.unwrap().unwrap() {
        Message::Text(t) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("{other:?}"),
    };
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let (_, other) = app.account(1_000, "write").await;
    let path = format!("/v1/jobs/{id}");
    assert_eq!(app.get(&path, &other).await.status().as_u16(), 404);
    assert_eq!(app.get(&path, &key).await.status().as_u16(), 200);
    // The worker's relay listener takes only the API's signed relay of a
    // session it waits for: a forged signature is refused, and so is a
    // rightly signed relay of a session already relayed.
    let job = mediagen_core::JobId::parse(&id).unwrap();
    let address = app.state.db.session_address(&job).await.unwrap();
    let address = address.expect("the worker's relay address");
    let now = mediagen_core::time::now_ms() / 1000;
    let signed = mediagen_worker::session::relay_path(&app.state.signer, &job, now);
    let forged = format!(
        "/sessions/{id}?expires={}&signature={}",
        now + 60,
        "00".repeat(32)
    );
    for (path, status) in [(forged, 403), (signed, 404)] {
        match tokio_tungstenite::connect_async(format!("ws://{address}{path}")).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
                assert_eq!(r.status().as_u16(), status, "{path}")
            }
            other => panic!("the relay listener took {path}: {:?}", other.map(|_| ())),
        }
    }
    drop(first);
    // Less than the first hold's 30 s: 402, before any upgrade.
    let (_, poor) = app.account(10, "write").await;
    let (status, body) = connect(&app, &poor, "").await.err().unwrap();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (402, Some("insufficient_credits")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_when_the_credits_do() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    // The first hold (30) and one raise cannot both be covered.
    let (_, key) = app.account(50, "write").await;
    let mut socket =
        connect_once_claimed(&app, &key, "commit=manual", 10, Duration::from_secs(1)).await;
    let silence = vec![0u8; 32_000];
    let mut sent = 0;
    let (said, code) = loop {
        if socket
            .send(Message::Binary(silence.clone().into()))
            .await
            .is_err()
            || sent > 60
        {
            break events(&mut socket).await;
        }
        sent += 1;
    };
    assert_eq!(code, Some(4402), "{said:?}");
    let account = app.account_view(&key).await;
    let jobs = app.get_json("/v1/jobs?kind=stt.realtime", &key).await;
    let job = &jobs["data"][0];
    let job = app
        .settled(&key, job["id"].as_str().unwrap(), Duration::from_secs(30))
        .await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "insufficient_credits", "{job}");
    // Charged for what it received before the balance ran out (20 s: the
    // raise at 20 s of 1-s frames is the one refused), nothing after.
    let cost = job["credits"].as_i64().unwrap();
    assert!((19..=21).contains(&cost), "{job}");
    let _ = account;
    let after = app.account_view(&key).await;
    assert_eq!(
        after["credits"]["balance"].as_i64(),
        Some(50 - cost),
        "{after}"
    );
}

/// The first event of a session that opened.
async fn started(socket: &mut Socket) -> Value {
    match tokio::time::timeout(Duration::from_secs(30), socket.next())
        .await
        .expect("the session starts")
    {
        Some(Ok(Message::Text(t))) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_token_opens_one_session_of_its_account() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(1_000, "write").await;
    let (_, other) = app.account(1_000, "write").await;
    let read = app.key("read").await;
    let mint = |key: String| {
        let app = &app;
        async move {
            let r = app
                .post(
                    "/v1/tokens",
                    &key,
                    serde_json::json!({"kind": "stt.realtime"}),
                )
                .await;
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    // A read key may not mint; only the kinds of live sessions are minted.
    assert_eq!(mint(read.clone()).await.0, 403);
    let r = app
        .post("/v1/tokens", &key, serde_json::json!({"kind": "stt"}))
        .await;
    assert_eq!(r.status().as_u16(), 400);
    let (status, minted) = mint(other.clone()).await;
    assert_eq!(status, 201, "{minted}");
    assert_eq!(minted["kind"], "stt.realtime");
    let token = minted["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("mg_tok_"), "{minted}");
    // It is no key anywhere else.
    assert_eq!(app.get("/v1/account", &token).await.status().as_u16(), 401);
    // An upgrade refused after the token was shown (here its query) does
    // not spend it.
    let path = "/v1/speech-to-text/realtime";
    let (status, body) = upgrade(&app, None, path, &format!("token={token}&silenceMs=1"))
        .await
        .expect_err("a silence below 200 ms is refused");
    assert_eq!(status, 400, "{body}");
    // It opens a session without a header, as the account that minted it.
    let mut socket = upgrade(&app, None, path, &format!("token={token}"))
        .await
        .expect("the token opens a session");
    let id = started(&mut socket).await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let job = format!("/v1/jobs/{id}");
    assert_eq!(app.get(&job, &other).await.status().as_u16(), 200);
    assert_eq!(app.get(&job, &key).await.status().as_u16(), 404);
    drop(socket);
    // The worker's slot is free once the session has ended (the next
    // token is spent at its upgrade, so it is not shown before).
    app.settled(&other, &id, Duration::from_secs(30)).await;
    // Once only, whoever shows it.
    let (status, body) = upgrade(&app, Some(&key), path, &format!("token={token}"))
        .await
        .expect_err("a used token is refused");
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        body["error"]["details"]["reason"], "unknown_token",
        "{body}"
    );
    // As the Bearer too; and revoking the key that minted it voids it.
    let (_, minted) = mint(key.clone()).await;
    let bearer = minted["token"].as_str().unwrap().to_owned();
    let (_, minted) = mint(key.clone()).await;
    let voided = minted["token"].as_str().unwrap().to_owned();
    let mut socket = upgrade(&app, Some(&bearer), path, "")
        .await
        .expect("a token as the Bearer");
    assert_eq!(started(&mut socket).await["type"], "session.started");
    drop(socket);
    let minter = app.state.db.find_key(&key).await.unwrap().unwrap();
    let now = mediagen_core::time::now_ms();
    app.state
        .db
        .revoke_key(&minter.account_id, &minter.key_id, now)
        .await
        .unwrap();
    let (status, _) = upgrade(&app, None, path, &format!("token={voided}"))
        .await
        .expect_err("the token of a revoked key is refused");
    assert_eq!(status, 401);
    // ElevenLabs' route mints the same tokens.
    let r = app
        .post(
            "/elevenlabs/v1/single-use-token/realtime_scribe",
            &other,
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status().as_u16(), 200);
    let t: Value = r.json().await.unwrap();
    assert!(t["token"].as_str().unwrap().starts_with("mg_tok_"), "{t}");
}

/// A worker killed mid-session: the client is told to reconnect (1012) and
/// the session, once its lease runs out, is charged the sound its worker
/// had received by its last heartbeat, not refunded and not charged its
/// hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cut_by_a_dead_worker_is_charged_what_it_received() {
    let endpoint = crate::storage::endpoint();
    let bucket = crate::storage::bucket(&endpoint).await;
    let (b, e) = (bucket.clone(), endpoint.clone());
    let app = TestApp::spawn_with(Backend::Postgres, move |c| {
        c.workers = 0;
        crate::storage::on_bucket(c, &b, &e);
    })
    .await;
    let deployment = crate::scale_out::Deployment {
        database_url: app.database_url().to_owned(),
        bucket,
        endpoint,
        settings: Vec::new(),
    };
    let disk = tempfile::tempdir().unwrap();
    let mut worker = deployment.worker(disk.path(), "stt.realtime");
    let (_, key) = app.account(1_000, "write").await;
    // The worker is up once it claims: retried while no slot answers.
    let mut socket =
        connect_once_claimed(&app, &key, "commit=manual", 60, Duration::from_millis(500)).await;
    let id = started(&mut socket).await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // 12 s of (silent) sound, then time for a heartbeat (every 0.2 s).
    for _ in 0..12 {
        socket
            .send(Message::Binary(vec![0u8; 32_000].into()))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    worker.start_kill().unwrap();
    let _ = worker.wait().await;
    let (_, code) = events(&mut socket).await;
    assert_eq!(code, Some(1012), "the client is told to reconnect");
    // The lease (1 s) runs out; the reaper (of any worker) fails the job.
    let mut job = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        app.state.db.reap_expired_jobs().await.unwrap();
        job = app.get_json(&format!("/v1/jobs/{id}"), &key).await;
        if job["status"] == "failed" {
            break;
        }
    }
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "worker_lost", "{job}");
    assert_eq!(job["credits"].as_i64(), Some(12), "{job}");
    let account = app.account_view(&key).await;
    assert_eq!(
        account["credits"]["balance"].as_i64(),
        Some(988),
        "{account}"
    );
}
