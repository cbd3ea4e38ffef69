//! Speech from streamed text over WebSocket: the native session
//! (`/v1/text-to-speech/realtime`) with a plain WebSocket client, fed text
//! at the pace a language model writes it, the sound heard back by the
//! recogniser; the charge, the close, the refusals; and ElevenLabs'
//! stream-input with its official client.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{Backend, TestApp};
use crate::realtime::{batch_transcript, upgrade, upgrade_once_claimed, Socket};
use crate::sdk::run_python;
use crate::stt::wer;

const PATH: &str = "/v1/text-to-speech/realtime";
const TEXT: &str = "The weather is lovely today. Shall we walk down to the river after lunch? \
                    I will bring the camera, and you can bring the map.";

/// 16-kHz 16-bit PCM as a WAV file.
fn pcm_wav(pcm: &[u8]) -> Vec<u8> {
    let samples: Vec<f32> = pcm
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect();
    crate::helpers::wav(&samples, 16_000)
}

/// What a session said: its events, its sound, when each `audio` event
/// came, and its close code.
#[derive(Default)]
struct Heard {
    events: Vec<Value>,
    sound: Vec<u8>,
    audio_at: Vec<Instant>,
    code: Option<u16>,
}

async fn hear(mut stream: futures::stream::SplitStream<Socket>) -> Heard {
    let mut heard = Heard::default();
    while let Some(m) = tokio::time::timeout(Duration::from_secs(120), stream.next())
        .await
        .expect("the session answers")
    {
        match m.expect("a frame") {
            Message::Text(t) => {
                let e: Value = serde_json::from_str(t.as_str()).unwrap();
                if e["type"] == "audio" {
                    heard.audio_at.push(Instant::now());
                }
                heard.events.push(e);
            }
            Message::Binary(b) => heard.sound.extend_from_slice(&b),
            Message::Close(c) => {
                heard.code = c.map(|c| u16::from(c.code));
                break;
            }
            _ => {}
        }
    }
    heard
}

/// Sends `text` word by word, a word every 66 ms (15 a second, as a
/// language model writes), then `finish`; returns when each sentence's
/// last word went.
async fn write(
    mut sink: futures::stream::SplitSink<Socket, Message>,
    text: &'static str,
) -> Vec<Instant> {
    let mut ends = Vec::new();
    for word in text.split(' ') {
        let piece = json!({"type": "text", "text": format!("{word} ")}).to_string();
        sink.send(Message::Text(piece.into())).await.unwrap();
        if word.ends_with(['.', '?', '!']) {
            ends.push(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(66)).await;
    }
    let finish = json!({"type": "finish"}).to_string();
    sink.send(Message::Text(finish.into())).await.unwrap();
    ends
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_text_is_spoken_sentence_by_sentence() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = app.first_voice(&key, "engine=piper&language=en").await;
    let query = format!("voiceId={voice}&format=pcm&sampleRate=16000");
    let socket = upgrade_once_claimed(&app, &key, PATH, &query, 3, Duration::ZERO).await;
    let (sink, stream) = socket.split();
    let writer = tokio::spawn(write(sink, TEXT));
    let heard = hear(stream).await;
    let ends = writer.await.unwrap();
    assert_eq!(heard.code, Some(1000), "{:?}", heard.events);
    assert_eq!(heard.events[0]["type"], "session.started");
    let audio: Vec<&Value> = heard
        .events
        .iter()
        .filter(|e| e["type"] == "audio")
        .collect();
    let pieces: Vec<&str> = audio.iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(
        pieces,
        [
            "The weather is lovely today.",
            "Shall we walk down to the river after lunch?",
            "I will bring the camera, and you can bring the map."
        ]
    );
    // Each piece's characters timed within it, in order.
    for e in &audio {
        let a = &e["alignment"];
        let chars: Vec<&str> = a["chars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(chars.concat(), e["text"].as_str().unwrap());
        let starts = a["charStartTimesMs"].as_array().unwrap();
        let last = starts.last().unwrap().as_f64().unwrap() / 1000.0;
        assert!(last < e["duration"].as_f64().unwrap(), "{e}");
    }
    // The sound is the pieces' length of 16-kHz PCM.
    let seconds: f64 = audio.iter().map(|e| e["duration"].as_f64().unwrap()).sum();
    let got = heard.sound.len() as f64 / 32_000.0;
    assert!(
        (got - seconds).abs() < 0.05,
        "{got} s of sound for {seconds}"
    );
    // Each sentence is heard soon after its text is whole (printed for the
    // bench; a bound loose enough for a loaded machine).
    for (k, (end, at)) in ends.iter().zip(&heard.audio_at).enumerate() {
        let lag = at.saturating_duration_since(*end);
        eprintln!(
            "piece {k}: first audio {} ms after its text",
            lag.as_millis()
        );
        assert!(lag < Duration::from_secs(5), "piece {k}: {lag:?}");
    }
    // The recogniser hears the text back.
    let text = batch_transcript(&app, &key, pcm_wav(&heard.sound)).await;
    assert!(wer(TEXT, &text) < 0.2, "heard {text:?}");
    // Charged per character spoken.
    let ended = heard.events.last().unwrap();
    assert_eq!(ended["type"], "session.ended");
    let id = heard.events[0]["sessionId"].as_str().unwrap();
    let job = app.settled(&key, id, Duration::from_secs(30)).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["kind"], "tts.realtime");
    let characters = job["result"]["characters"].as_i64().unwrap();
    assert_eq!(characters, ended["characters"].as_i64().unwrap());
    assert!((120..=135).contains(&characters), "{job}");
    assert_eq!(job["credits"].as_i64(), Some(characters), "{job}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speech_session_stops_at_a_close_and_at_the_balance() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let voice = app.first_voice(&key, "engine=piper&language=en").await;
    let query = format!("voiceId={voice}");
    let sentence = "This sentence is one of many that will not all be spoken. ";
    let long: String = sentence.repeat(20);
    // Closed after the first piece: the rest is not spoken or charged.
    let mut socket = upgrade_once_claimed(&app, &key, PATH, &query, 3, Duration::ZERO).await;
    let text = json!({"type": "text", "text": long, "flush": true}).to_string();
    socket.send(Message::Text(text.into())).await.unwrap();
    let mut id = None;
    while let Some(Ok(m)) = socket.next().await {
        if let Message::Text(t) = m {
            let e: Value = serde_json::from_str(t.as_str()).unwrap();
            if e["type"] == "session.started" {
                id = e["sessionId"].as_str().map(str::to_owned);
            }
            if e["type"] == "audio" {
                break;
            }
        }
    }
    drop(socket);
    let closed = Instant::now();
    let id = id.expect("the session started");
    let job = app.settled(&key, &id, Duration::from_secs(30)).await;
    assert!(
        closed.elapsed() < Duration::from_secs(3),
        "settled {:?} after the close",
        closed.elapsed()
    );
    let spoken = job["result"]["characters"].as_i64().unwrap();
    assert!(spoken < 6 * sentence.len() as i64, "{job}");
    assert_eq!(job["credits"].as_i64(), Some(spoken), "{job}");

    // The first hold (1000) and one raise cannot both be covered: 4402,
    // charged for what was spoken.
    let (_, poor) = app.account(1_200, "write").await;
    let mut socket = upgrade(&app, Some(&poor), PATH, &query).await.unwrap();
    for _ in 0..4 {
        let text = json!({"type": "text", "text": sentence.repeat(4)}).to_string();
        if socket.send(Message::Text(text.into())).await.is_err() {
            break;
        }
    }
    let mut code = None;
    let mut events = Vec::new();
    while let Some(Ok(m)) = tokio::time::timeout(Duration::from_secs(60), socket.next())
        .await
        .expect("the session answers")
    {
        match m {
            Message::Text(t) => events.push(serde_json::from_str::<Value>(t.as_str()).unwrap()),
            Message::Close(c) => {
                code = c.map(|c| u16::from(c.code));
                break;
            }
            _ => {}
        }
    }
    assert_eq!(code, Some(4402), "{events:?}");
    let jobs = app.get_json("/v1/jobs?kind=tts.realtime", &poor).await;
    let id = jobs["data"][0]["id"].as_str().unwrap().to_owned();
    let job = app.settled(&poor, &id, Duration::from_secs(30)).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "insufficient_credits", "{job}");
    let spoken = job["result"]["characters"].as_i64().unwrap_or(0);
    let charged = job["credits"].as_i64().unwrap();
    assert!(charged <= 1_200 && charged == spoken.max(charged), "{job}");
    let account = app.account_view(&poor).await;
    assert_eq!(
        account["credits"]["balance"].as_i64(),
        Some(1_200 - charged),
        "{account}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speech_session_is_refused_as_the_api_refuses() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    let read = app.key("read").await;
    let voice = app.first_voice(&key, "engine=piper&language=en").await;
    let query = format!("voiceId={voice}");
    assert_eq!(
        upgrade(&app, Some(&read), PATH, &query)
            .await
            .err()
            .unwrap()
            .0,
        403
    );
    let (status, body) = upgrade(&app, Some(&key), PATH, "voiceId=nobody")
        .await
        .err()
        .unwrap();
    assert_eq!(status, 404, "{body}");
    let (status, body) = upgrade(&app, Some(&key), PATH, &format!("{query}&format=flac"))
        .await
        .err()
        .unwrap();
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("format")),
        "{body}"
    );
    // The query's schema is checked before the upgrade: a plain GET with
    // a rate no format offers is a 400 naming it, not a 426.
    let plain = app
        .get(&format!("{PATH}?{query}&sampleRate=2147483648"), &key)
        .await;
    assert_eq!(plain.status().as_u16(), 400);
    let body: Value = plain.json().await.unwrap();
    assert_eq!(body["error"]["param"], "sampleRate", "{body}");
    let plain = app.get(&format!("{PATH}?{query}"), &key).await;
    assert_eq!(plain.status().as_u16(), 426);
    let (_, poor) = app.account(10, "write").await;
    let (status, _) = upgrade(&app, Some(&poor), PATH, &query)
        .await
        .err()
        .unwrap();
    assert_eq!(status, 402);
    // A token of another kind of session, or of another account's, opens
    // nothing here that is not its own.
    let minted = app
        .post("/v1/tokens", &key, json!({"kind": "stt.realtime"}))
        .await
        .json::<Value>()
        .await
        .unwrap();
    let token = minted["token"].as_str().unwrap();
    let (status, _) = upgrade(&app, None, PATH, &format!("{query}&token={token}"))
        .await
        .err()
        .unwrap();
    assert_eq!(status, 401);
    let minted = app
        .post("/v1/tokens", &key, json!({"kind": "tts.realtime"}))
        .await
        .json::<Value>()
        .await
        .unwrap();
    let token = minted["token"].as_str().unwrap();
    let mut socket = upgrade(&app, None, PATH, &format!("{query}&token={token}"))
        .await
        .expect("a speech token opens a speech session");
    let started = match socket.next().await.unwrap().unwrap() {
        Message::Text(t) => serde_json::from_str::<Value>(t.as_str()).unwrap(),
        other => panic!("{other:?}"),
    };
    // Markup is not read (its breaks would cost nothing): an error, and
    // the session goes on.
    let ssml =
        json!({"type": "text", "text": "<speak><break time=\"10s\"/>Hi.</speak>", "flush": true});
    socket
        .send(Message::Text(ssml.to_string().into()))
        .await
        .unwrap();
    let said = match socket.next().await.unwrap().unwrap() {
        Message::Text(t) => serde_json::from_str::<Value>(t.as_str()).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(said["type"], "error", "{said}");
    let (_, other) = app.account(1_000, "write").await;
    let job = format!("/v1/jobs/{}", started["sessionId"].as_str().unwrap());
    assert_eq!(app.get(&job, &other).await.status().as_u16(), 404);
    assert_eq!(app.get(&job, &key).await.status().as_u16(), 200);
}

const ELEVENLABS: &str = r#"
import os, socket, ssl, threading, time
from elevenlabs import ElevenLabs

base, key, voice, cert, keyfile, out = sys.argv[1:7]
host, port = base.replace("http://", "").split(":")

# A TLS front for the test server: the package's stream-input client
# speaks only wss, as a deployment behind TLS would.
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, keyfile)
front = socket.socket()
front.bind(("127.0.0.1", 0))
front.listen(8)

def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

def serve():
    while True:
        conn, _ = front.accept()
        try:
            tls = context.wrap_socket(conn, server_side=True)
        except OSError:
            continue
        back = socket.create_connection((host, int(port)))
        threading.Thread(target=pipe, args=(tls, back), daemon=True).start()
        threading.Thread(target=pipe, args=(back, tls), daemon=True).start()

threading.Thread(target=serve, daemon=True).start()
os.environ["SSL_CERT_FILE"] = cert
client = ElevenLabs(api_key=key, base_url=f"https://127.0.0.1:{front.getsockname()[1]}/elevenlabs")

TEXT = "The weather is lovely today. Shall we walk down to the river after lunch?"
def words():
    # As a language model writes: a word every 66 ms.
    for word in TEXT.split(" "):
        time.sleep(0.066)
        yield word + " "

report = {"chunks": 0}
with open(out, "wb") as f:
    for chunk in client.text_to_speech.convert_realtime(voice, text=words(), output_format="pcm_16000"):
        report["chunks"] += 1
        f.write(chunk)
print(json.dumps(report))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elevenlabs_stream_input_client_speaks_streamed_text() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(10_000, "write").await;
    // The worker has loaded its voices before the session asks for a slot
    // (a slot not taken within 10 s is a 503, which a loaded machine could
    // otherwise meet while a fresh server warms up).
    let warm = app
        .post(
            "/elevenlabs/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb?output_format=pcm_16000",
            &key,
            json!({"text": "Ready."}),
        )
        .await;
    assert!(warm.status().is_success(), "{}", warm.status());
    let dir = tempfile::tempdir().unwrap();
    let (cert, keyfile) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&keyfile)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (scripts/setup.sh installs it)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let out = dir.path().join("speech.pcm");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    // George, one of ElevenLabs' premade voices.
    let args = vec![
        app.addr.clone(),
        key.clone(),
        "JBFqnCBsd6RMkjVDRZzb".to_owned(),
        path(&cert),
        path(&keyfile),
        path(&out),
    ];
    let report = run_python(ELEVENLABS, dir.path(), args).await;
    assert!(report["chunks"].as_u64().unwrap() >= 2, "{report}");
    let pcm = std::fs::read(&out).unwrap();
    assert!(pcm.len() > 32_000 * 3, "{} bytes", pcm.len());
    let text = batch_transcript(&app, &key, pcm_wav(&pcm)).await;
    let said = "The weather is lovely today. Shall we walk down to the river after lunch?";
    assert!(wer(said, &text) < 0.2, "heard {text:?}");
    let jobs = app.get_json("/v1/jobs?kind=tts.realtime", &key).await;
    let id = jobs["data"][0]["id"].as_str().unwrap().to_owned();
    let job = app.settled(&key, &id, Duration::from_secs(30)).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(
        job["credits"].as_i64(),
        job["result"]["characters"].as_i64(),
        "{job}"
    );
}
