//! OpenAI's official Python package (`openai` from PyPI, unmodified;
//! `scripts/ensure-sdk.sh` installs it) against the OpenAI-compatible
//! speech route: every `response_format`, streamed and whole, the voice
//! names, the ignored `instructions`, credits, and the SDK's typed errors
//! with OpenAI's `type` and `param` (docs/compatibility.md).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Backend, TestApp};
use crate::sdk::{assert_errors, run_python};

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

/// What the SDK does, reported as JSON on stdout. Arguments: the server,
/// a write key, a directory for the audio, a read key, a voice id of ours
/// (Piper's, the quickest: the formats are made by it, and one OpenAI
/// voice name, spoken by Kokoro, is enough for the mapping).
const SCRIPT: &str = r#"
import base64, json, sys
import openai

base, key, out, read_key, voice = sys.argv[1:6]
sentence = "The quick brown fox jumps over the lazy dog."
client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
report = {"jobs": []}
for fmt in ["mp3", "opus", "aac", "flac", "wav", "pcm"]:
    r = client.audio.speech.create(model="tts-1", voice=voice, input=sentence, response_format=fmt)
    r.write_to_file(f"{out}/speech.{fmt}")
    report["jobs"].append(r.response.headers.get("x-job-id"))
with client.audio.speech.with_streaming_response.create(
    model="gpt-4o-mini-tts", voice="onyx", input="Streaming works too.",
    instructions="Speak calmly.", speed=1.25,
) as r:
    r.stream_to_file(f"{out}/streamed.mp3")
    report["ignored"] = r.headers.get("x-mediagen-ignored")
    report["jobs"].append(r.headers.get("x-job-id"))
r = client.audio.speech.with_raw_response.create(
    model="gpt-4o-mini-tts", voice=voice, input="Events too.", stream_format="sse")
events = [json.loads(line[len("data: "):]) for line in r.http_response.text.splitlines()
          if line.startswith("data: ")]
with open(f"{out}/events.mp3", "wb") as f:
    for e in events:
        if e["type"] == "speech.audio.delta":
            f.write(base64.b64decode(e["audio"]))
report["sse"] = {"content_type": r.headers.get("content-type"),
                 "types": [e["type"] for e in events], "last": events[-1]}
report["jobs"].append(r.headers.get("x-job-id"))

def speak(c=client, **kw):
    args = {"model": "tts-1", "voice": "nova", "input": "Hello there."}
    args.update(kw)
    return lambda: c.audio.speech.create(**args)

report["errors"] = {
    "voice": fails(speak(voice="nobody")),
    "speed": fails(speak(speed=3.0)),
    "model": fails(speak(model="tts-9")),
    "format": fails(speak(response_format="ogg")),
    "stream_format": fails(speak(stream_format="json")),
    "input": fails(speak(input="   ")),
    "long": fails(speak(input="a" * 4097)),
    "key": fails(speak(openai.OpenAI(base_url=base + "/v1", api_key="mg_live_nope", max_retries=0))),
    "level": fails(speak(openai.OpenAI(base_url=base + "/v1", api_key=read_key, max_retries=0))),
}
print(json.dumps(report))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openais_python_package_makes_speech() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 60.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let (_, read_key) = app.account(10_000, "read").await;
    let piper = app.first_voice(&key, "engine=piper").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    let args = vec![
        app.addr.clone(),
        key.clone(),
        out,
        read_key.clone(),
        piper.clone(),
    ];
    let report = run_python(SCRIPT, dir.path(), args).await;

    // Real audio in each format, of one length; pcm is OpenAI's 24 kHz s16le.
    let codec = |path: &Path| {
        let out = Command::new("ffprobe")
            .args(["-v", "error", "-select_streams", "a:0"])
            .args(["-show_entries", "stream=codec_name", "-of", "csv=p=0"])
            .arg(path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    // Decoded to the end: a streamed wav or flac header gives no length.
    let decoded_seconds = |path: &Path| {
        let out = Command::new("ffmpeg")
            .args(["-v", "error", "-i"])
            .arg(path)
            .args(["-f", "s16le", "-ac", "1", "-ar", "24000", "-"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", path.display());
        out.stdout.len() as f64 / 2.0 / 24_000.0
    };
    assert!(decoded_seconds(&dir.path().join("streamed.mp3")) > 0.5);
    // Server-sent events: deltas of the mp3, then the usage.
    let sse = &report["sse"];
    assert_eq!(sse["content_type"], "text/event-stream", "{sse}");
    let types = sse["types"].as_array().unwrap();
    assert!(types.len() >= 2, "{sse}");
    assert!(
        types[..types.len() - 1]
            .iter()
            .all(|t| t == "speech.audio.delta"),
        "{sse}"
    );
    assert_eq!(sse["last"]["type"], "speech.audio.done", "{sse}");
    assert_eq!(
        sse["last"]["usage"]["input_tokens"],
        "Events too.".len(),
        "{sse}"
    );
    let events = dir.path().join("events.mp3");
    assert_eq!(codec(&events), "mp3");
    let heard = decoded_seconds(&events);
    assert!(heard > 0.5, "{heard} s");
    assert_eq!(report["ignored"], "instructions", "{report}");

    // Each request is a job of the account, charged by character, in the
    // voice it names: ours by id, OpenAI's `onyx` by Kokoro's Onyx.
    let jobs = report["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 8, "{report}");
    let (mut charged, mut durations) = (0, Vec::new());
    for (i, id) in jobs.iter().enumerate() {
        let job = app
            .wait_job(&key, id.as_str().unwrap(), Duration::from_secs(60), |j| {
                j["status"] == "completed"
            })
            .await;
        charged += job["credits"].as_i64().unwrap_or_else(|| panic!("{job}"));
        durations.push(job["result"]["duration"].as_f64().unwrap());
        let voice = job["result"]["voiceId"].as_str().unwrap();
        if i != 6 {
            assert_eq!(voice, piper, "{job}");
            continue;
        }
        let voice: Value = app
            .get(&format!("/v1/voices/{voice}"), &key)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            (&voice["engine"], &voice["name"]),
            (&"kokoro".into(), &"Onyx".into()),
            "{voice}"
        );
    }
    let chars = (6 * SENTENCE.len() + "Streaming works too.".len() + "Events too.".len()) as i64;
    // Each format's audio lasts what its job reports (each synthesis is
    // its own: Piper's phoneme lengths vary from run to run); pcm is
    // OpenAI's, 24 kHz s16le.
    for (i, (format, want)) in [
        ("mp3", "mp3"),
        ("opus", "opus"),
        ("aac", "aac"),
        ("flac", "flac"),
        ("wav", "pcm_s16le"),
        ("pcm", ""),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("speech.{format}"));
        let (s, tolerance) = if format == "pcm" {
            let bytes = std::fs::metadata(&path).unwrap().len();
            (bytes as f64 / 2.0 / 24_000.0, 0.02)
        } else {
            assert_eq!(codec(&path), want, "{format}");
            (decoded_seconds(&path), 0.1)
        };
        let reported = durations[i];
        assert!(reported > 1.5, "{reported} s for a sentence");
        assert!(
            (s - reported).abs() < tolerance,
            "{format}: {s} s against {reported} s"
        );
    }
    // FLAC is answered whole: its header says how long it is.
    let header = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "a:0"])
        .args(["-show_entries", "stream=duration", "-of", "csv=p=0"])
        .arg(dir.path().join("speech.flac"))
        .output()
        .unwrap();
    let header = String::from_utf8_lossy(&header.stdout).trim().to_owned();
    let header: f64 = header
        .parse()
        .unwrap_or_else(|_| panic!("no length: {header:?}"));
    assert!(
        (header - durations[3]).abs() < 0.1,
        "{header} s against {}",
        durations[3]
    );
    assert_eq!(charged, chars);
    assert_eq!(
        app.account_view(&key).await["credits"]["balance"],
        10_000 - chars
    );

    // The SDK's own exceptions, with OpenAI's `type` and `param`.
    let errors = &report["errors"];
    assert_errors(
        errors,
        &[
            (
                "voice",
                "NotFoundError",
                404,
                "invalid_request_error",
                "voice",
            ),
            (
                "speed",
                "BadRequestError",
                400,
                "invalid_request_error",
                "speed",
            ),
            (
                "model",
                "BadRequestError",
                400,
                "invalid_request_error",
                "model",
            ),
            (
                "format",
                "BadRequestError",
                400,
                "invalid_request_error",
                "response_format",
            ),
            (
                "stream_format",
                "BadRequestError",
                400,
                "invalid_request_error",
                "stream_format",
            ),
            (
                "long",
                "BadRequestError",
                400,
                "invalid_request_error",
                "input",
            ),
            (
                "key",
                "AuthenticationError",
                401,
                "authentication_error",
                "",
            ),
            (
                "level",
                "PermissionDeniedError",
                403,
                "permission_error",
                "",
            ),
        ],
    );
    // Blank input: our 400, or 422 for text with nothing to say.
    assert_eq!(errors["input"]["param"], "input", "{errors}");
    assert!(errors["input"]["class"]
        .as_str()
        .unwrap()
        .ends_with("Error"));
}
