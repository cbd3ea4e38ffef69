//! OpenAI's official npm package (`openai`, unmodified) against the
//! OpenAI-compatible routes: speech, a transcription of that speech with
//! word timestamps, an image, the model list and a typed error.

use crate::helpers::{Backend, TestApp};
use crate::sdk::run_node;
use crate::stt::wer;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

/// Arguments: the server, a write key, a directory, a voice id of ours.
const SCRIPT: &str = r#"
const fs = require("node:fs");
const { OpenAI, APIError } = require("openai");

async function main() {
  const [base, key, dir, voice] = process.argv.slice(2);
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
  const report = {};
  const speech = await client.audio.speech.create({
    model: "tts-1", voice, input: "The quick brown fox jumps over the lazy dog.",
    response_format: "wav",
  });
  const wav = dir + "/node.wav";
  fs.writeFileSync(wav, Buffer.from(await speech.arrayBuffer()));
  report.speechJob = speech.headers.get("x-job-id");

  const heard = await client.audio.transcriptions.create({
    model: "whisper-1", file: fs.createReadStream(wav),
    response_format: "verbose_json", timestamp_granularities: ["word", "segment"],
  });
  report.text = heard.text;
  report.language = heard.language;
  report.words = heard.words.map((w) => w.word);
  report.segments = heard.segments.length;
  const srt = await client.audio.transcriptions.create({
    model: "tiny.en", file: fs.createReadStream(wav), response_format: "srt",
  });
  report.srt = srt;

  const image = await client.images.generate({
    model: "dall-e-2", prompt: "a red apple", size: "256x256", response_format: "b64_json",
  });
  report.image = Buffer.from(image.data[0].b64_json, "base64").subarray(0, 8).toString("hex");

  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  report.models = models;

  try {
    await client.audio.speech.create({ model: "tts-1", voice: "nobody", input: "Hi." });
  } catch (e) {
    report.error = { class: e.constructor.name, isApiError: e instanceof APIError,
                     status: e.status, type: e.type, param: e.param, code: e.code };
  }
  console.log(JSON.stringify(report));
}
main().catch((e) => { console.error(e); process.exit(1); });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openais_npm_package_speaks_transcribes_and_draws() {
    // Speech streams once a worker begins it (within the sync wait).
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 30.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let piper = app.first_voice(&key, "engine=piper").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    let report = run_node(
        SCRIPT,
        dir.path(),
        vec![app.addr.clone(), key.clone(), out, piper],
    )
    .await;

    // The speech was real: the recogniser hears the sentence in it, word
    // by word.
    assert!(
        std::fs::metadata(dir.path().join("node.wav"))
            .unwrap()
            .len()
            > 40_000
    );
    let text = report["text"].as_str().unwrap();
    assert!(wer(SENTENCE, text) < 0.25, "{text}");
    assert_eq!(report["language"], "english", "{report}");
    let words: Vec<&str> = report["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(wer(SENTENCE, &words.join(" ")) < 0.25, "{words:?}");
    assert!(report["segments"].as_u64().unwrap() >= 1, "{report}");
    let srt = report["srt"].as_str().unwrap();
    assert!(
        srt.starts_with("1\n00:00:0") && srt.contains(" --> "),
        "{srt}"
    );
    assert_eq!(report["image"], "89504e470d0a1a0a", "a PNG: {report}");
    let models: Vec<&str> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    for id in ["tts-1", "whisper-1", "dall-e-3", "kokoro"] {
        assert!(models.contains(&id), "{id}: {models:?}");
    }
    let e = &report["error"];
    assert_eq!(
        (&e["class"], &e["isApiError"], &e["status"], &e["param"]),
        (
            &"NotFoundError".into(),
            &true.into(),
            &404.into(),
            &"voice".into()
        ),
        "{e}"
    );
    assert_eq!(e["type"], "invalid_request_error", "{e}");
}
