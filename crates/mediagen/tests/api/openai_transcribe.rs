//! OpenAI's official Python package against the transcription and
//! translation routes (every `response_format`, word timestamps, OpenAI's
//! validation rules, idempotent retries) and against `GET /v1/models` in
//! OpenAI's list shape (docs/compatibility.md).

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{Backend, TestApp};
use crate::sdk::{assert_errors, run_python};
use crate::stt::wer;

const ENGLISH: &str = "The quick brown fox jumps over the lazy dog.";
const SPANISH: &str = "Hola, me llamo Pedro y vivo en Madrid.";

/// Arguments: the server, a write key, the English and the Spanish file,
/// and a real two-person conversation (the pyannote.audio wheel's sample).
/// The formats run on `tiny.en` (ours, the quickest); `whisper-1` runs
/// on the translation and one transcription.
const SCRIPT: &str = r#"
import json, sys
import openai

base, key, english, spanish, conversation = sys.argv[1:6]
client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
stt = client.audio.transcriptions
report = {}

def heard(fmt, model="tiny.en", **kw):
    with open(english, "rb") as f:
        r = stt.with_raw_response.create(model=model, file=f, response_format=fmt, **kw)
    body = r.parse()
    report[fmt + "".join(kw.get("timestamp_granularities", []))] = {
        "body": body if isinstance(body, str) else body.model_dump(exclude_unset=True),
        "content_type": r.headers.get("content-type"),
        "job": r.headers.get("x-job-id"),
        "ignored": r.headers.get("x-mediagen-ignored"),
    }

heard("json", model="whisper-1", temperature=0.2)
for fmt in ["text", "srt", "vtt"]:
    heard(fmt)
heard("verbose_json", timestamp_granularities=["word", "segment"])
heard("verbose_json", timestamp_granularities=["word"])

# A retry with the same Idempotency-Key is answered as the first time,
# charged once.
retry = []
for _ in range(2):
    with open(english, "rb") as f:
        r = stt.with_raw_response.create(model="tiny.en", file=f,
                                         extra_headers={"Idempotency-Key": "openai-retry"})
    retry.append({"job": r.headers.get("x-job-id"), "text": r.parse().text,
                  "replayed": r.headers.get("idempotent-replayed")})
report["retry"] = retry

with open(conversation, "rb") as f:
    r = stt.with_raw_response.create(model="gpt-4o-transcribe-diarize", file=f, language="en",
                                     response_format="diarized_json", chunking_strategy="auto",
                                     extra_body={"known_speaker_names[]": "Diane"})
report["diarized"] = {"body": r.parse().model_dump(), "ignored": r.headers.get("x-mediagen-ignored"),
                      "job": r.headers.get("x-job-id")}

with open(spanish, "rb") as f:
    report["translation"] = client.audio.translations.create(
        model="whisper-1", file=f, response_format="verbose_json").model_dump()

def transcribe(path=english, route=stt, **kw):
    args = {"model": "tiny.en"}
    args.update(kw)
    def call():
        with open(path, "rb") as f:
            route.create(file=f, **args)
    return call

report["errors"] = {
    "model": fails(transcribe(model="whisper-9")),
    "newer_format": fails(transcribe(model="gpt-4o-transcribe", response_format="srt")),
    "diarized_whisper": fails(transcribe(response_format="diarized_json")),
    "granularity_format": fails(transcribe(timestamp_granularities=["word"])),
    "granularity": fails(transcribe(response_format="verbose_json",
                                    extra_body={"timestamp_granularities[]": "char"})),
    "language": fails(transcribe(language="xx")),
    "temperature": fails(transcribe(temperature=1.5)),
    "stream": fails(transcribe(extra_body={"stream": "true"})),
    "not_media": fails(transcribe(path=sys.argv[0])),
    "translation_language": fails(transcribe(route=client.audio.translations,
                                             extra_body={"language": "es"})),
}

models = client.models.list()
report["models"] = [m.model_dump() for m in models.data]
report["whisper"] = client.models.retrieve("whisper-1").model_dump()
report["missing"] = fails(lambda: client.models.retrieve("gpt-9"))
print(json.dumps(report))
"#;

/// `text` spoken by the first voice `GET /v1/voices?{voices}` lists, as
/// WAV, written to `path`.
async fn speech(app: &TestApp, key: &str, voices: &str, text: &str, path: &std::path::Path) {
    let voice = app.first_voice(key, voices).await;
    let body = json!({"text": text, "voiceId": voice, "format": "wav"});
    let job: Value = app
        .post("/v1/text-to-speech", key, body)
        .await
        .json()
        .await
        .unwrap();
    let id = job["id"].as_str().unwrap();
    let job = app
        .wait_job(key, id, Duration::from_secs(60), |j| {
            j["status"] == "completed"
        })
        .await;
    let wav = app
        .download(job["result"]["audioUrl"].as_str().unwrap())
        .await;
    std::fs::write(path, wav).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openais_python_package_transcribes_and_lists_models() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 1.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let (english, spanish) = (dir.path().join("en.wav"), dir.path().join("es.wav"));
    speech(&app, &key, "engine=piper", ENGLISH, &english).await;
    // Kokoro's Spanish: whisper hears espeak-ng's Spanish poorly.
    speech(&app, &key, "engine=kokoro&language=es", SPANISH, &spanish).await;
    let conversation = crate::helpers::models_dir().join("diarize/sample.wav");
    let args = [&app.addr, &key]
        .into_iter()
        .cloned()
        .chain([&english, &spanish, &conversation].map(|p| p.to_str().unwrap().to_owned()))
        .collect();
    // A sync wait of 1 s: these routes answer when the job ends, however
    // long it takes.
    let report = run_python(SCRIPT, dir.path(), args).await;

    // json: the text and the seconds used; temperature taken, not used.
    let json = &report["json"];
    let text = json["body"]["text"].as_str().unwrap();
    assert!(wer(ENGLISH, text) < 0.25, "{text}");
    assert!(
        json["body"]["usage"]["seconds"].as_f64().unwrap() >= 2.0,
        "{json}"
    );
    assert_eq!(json["ignored"], "temperature", "{json}");
    // text, srt and vtt: the bare text, as text/plain.
    for fmt in ["text", "srt", "vtt"] {
        let r = &report[fmt];
        assert_eq!(r["content_type"], "text/plain; charset=utf-8", "{r}");
        let body = r["body"].as_str().unwrap();
        assert!(body.to_lowercase().contains("lazy dog"), "{fmt}: {body}");
        match fmt {
            "srt" => assert!(body.starts_with("1\n00:00:0"), "{body}"),
            "vtt" => assert!(body.starts_with("WEBVTT\n\n00:00:0"), "{body}"),
            _ => assert!(body.ends_with('\n') && !body.contains("-->"), "{body}"),
        }
    }
    // verbose_json: OpenAI's fields, words in order within the audio.
    let both = &report["verbose_jsonwordsegment"]["body"];
    assert_eq!(both["task"], "transcribe", "{both}");
    assert_eq!(both["language"], "english", "{both}");
    let duration = both["duration"].as_f64().unwrap();
    let segments = both["segments"].as_array().unwrap();
    assert!(!segments.is_empty(), "{both}");
    for s in segments {
        for field in [
            "seek",
            "tokens",
            "temperature",
            "avg_logprob",
            "compression_ratio",
        ] {
            assert!(!s[field].is_null(), "{field}: {s}");
        }
        assert!(s["compression_ratio"].as_f64().unwrap() > 0.0, "{s}");
    }
    let words = both["words"].as_array().unwrap();
    assert!(words.len() >= 9, "{both}");
    let mut last = 0.0;
    for w in words {
        let (start, end) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
        assert!(
            start >= last - 0.01 && end >= start && end <= duration + 0.05,
            "{w}"
        );
        last = end;
    }
    let spoken: Vec<&str> = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert!(wer(ENGLISH, &spoken.join(" ")) < 0.25, "{spoken:?}");
    // Words only: no segments, as OpenAI answers.
    let words_only = &report["verbose_jsonword"]["body"];
    assert!(words_only["segments"].is_null() && words_only["words"].is_array());

    // Every request was a job of the account, charged by the second.
    let retry = report["retry"].as_array().unwrap();
    assert_eq!(retry[0]["text"], retry[1]["text"], "{retry:?}");
    assert_eq!(retry[1]["replayed"], "true", "{retry:?}");
    let mut jobs: Vec<&str> = ["json", "text", "srt", "vtt"]
        .iter()
        .map(|f| report[*f]["job"].as_str().unwrap())
        .collect();
    jobs.push(retry[0]["job"].as_str().unwrap());
    let mut charged = 0;
    for id in &jobs {
        let job: Value = app
            .get(&format!("/v1/jobs/{id}"), &key)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(job["status"], "completed", "{job}");
        charged += job["credits"].as_i64().unwrap();
    }
    let per = charged / jobs.len() as i64;
    assert!(per >= 2, "{charged}");
    // Seven transcriptions of one length and one translation, besides the
    // two syntheses that made the audio (one credit a character) and the
    // diarized conversation.
    let account = app.account_view(&key).await;
    let spoken = (ENGLISH.len() + SPANISH.len()) as i64;
    let diarized: Value = app
        .get(
            &format!("/v1/jobs/{}", report["diarized"]["job"].as_str().unwrap()),
            &key,
        )
        .await
        .json()
        .await
        .unwrap();
    let used = 10_000
        - account["credits"]["balance"].as_i64().unwrap()
        - spoken
        - diarized["credits"].as_i64().unwrap();
    assert!(
        used > 6 * per && used < 10 * per,
        "{used} used, {per} a job"
    );

    // diarized_json: the conversation's segments with speakers A and B,
    // OpenAI's segment type; speaker names taken and said to be ignored.
    let d = &report["diarized"];
    let segments = d["body"]["segments"].as_array().unwrap();
    let who: std::collections::BTreeSet<&str> = segments
        .iter()
        .map(|s| s["speaker"].as_str().unwrap())
        .collect();
    assert_eq!(who.into_iter().collect::<Vec<_>>(), ["A", "B"], "{d}");
    assert!(
        segments
            .iter()
            .all(|s| s["type"] == "transcript.text.segment"),
        "{d}"
    );
    assert_eq!(d["body"]["task"], "transcribe");
    assert!(
        d["body"]["text"].as_str().unwrap().contains("Chicago"),
        "{d}"
    );
    assert_eq!(d["ignored"], "known_speaker_names[]", "{d}");

    // Translation: English text from Spanish speech.
    let t = &report["translation"];
    assert_eq!(
        (&t["task"], &t["language"]),
        (&"translate".into(), &"english".into())
    );
    let english_text = t["text"].as_str().unwrap().to_lowercase();
    assert!(
        english_text.contains("madrid") && !english_text.contains("vivo"),
        "{english_text}"
    );

    assert_errors(
        &report["errors"],
        &[
            (
                "model",
                "BadRequestError",
                400,
                "invalid_request_error",
                "model",
            ),
            (
                "newer_format",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "response_format",
            ),
            (
                "diarized_whisper",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "response_format",
            ),
            (
                "granularity_format",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "timestamp_granularities[]",
            ),
            (
                "granularity",
                "BadRequestError",
                400,
                "invalid_request_error",
                "timestamp_granularities[]",
            ),
            (
                "language",
                "BadRequestError",
                400,
                "invalid_request_error",
                "language",
            ),
            (
                "temperature",
                "BadRequestError",
                400,
                "invalid_request_error",
                "temperature",
            ),
            (
                "stream",
                "BadRequestError",
                400,
                "invalid_request_error",
                "stream",
            ),
            (
                "not_media",
                "APIStatusError",
                415,
                "invalid_request_error",
                "file",
            ),
            (
                "translation_language",
                "BadRequestError",
                400,
                "invalid_request_error",
                "language",
            ),
        ],
    );

    // Models in OpenAI's shape: ours and OpenAI's names, ids unique.
    let models = report["models"].as_array().unwrap();
    let ids: Vec<&str> = models.iter().map(|m| m["id"].as_str().unwrap()).collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    for id in [
        "tts-1",
        "tts-1-hd",
        "gpt-4o-mini-tts",
        "whisper-1",
        "dall-e-2",
        "dall-e-3",
        "kokoro",
        "base",
        "tiny.en",
        "embedded-image",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    for m in models {
        assert_eq!(m["object"], "model", "{m}");
        assert!(m["created"].as_i64().unwrap() > 1_700_000_000, "{m}");
        assert!(m["owned_by"].is_string(), "{m}");
    }
    let whisper = &report["whisper"];
    assert_eq!(
        (&whisper["owned_by"], &whisper["aliasOf"]),
        (&"openai".into(), &"base".into()),
        "{whisper}"
    );
    assert_eq!(report["missing"]["status"], 404, "{report}");
    // Our own clients' envelope is still there.
    let ours: Value = app.get("/v1/models", &key).await.json().await.unwrap();
    assert_eq!(ours["object"], "list");
    assert_eq!(
        ours["pagination"]["total"].as_u64(),
        Some(models.len() as u64)
    );
}
