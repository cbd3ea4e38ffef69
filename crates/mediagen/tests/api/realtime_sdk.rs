//! The live sessions' dialects driven by their official clients: the
//! `elevenlabs` package's realtime speech-to-text
//! (`speech_to_text.realtime.connect`) and the `openai` package's realtime
//! transcription session (`realtime.connect`) on the real two-person
//! call, the committed text against the batch transcript of the same file.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Backend, TestApp};
use crate::realtime::{batch_transcript, call_pcm, pcm16, LIVE_CALL};
use crate::sdk::run_python;

const ELEVENLABS: &str = r#"
import asyncio, base64, time
from elevenlabs import ElevenLabs
from elevenlabs.realtime.scribe import AudioFormat, CommitStrategy
from elevenlabs.realtime.connection import RealtimeEvents

base, key, read_key, pcm_path = sys.argv[1:5]
pcm = open(pcm_path, "rb").read()
client = ElevenLabs(api_key=key, base_url=base + "/elevenlabs")
report = {}

async def session():
    seen = []
    closed = {}
    options = {
        "model_id": "scribe_v2_realtime",
        "audio_format": AudioFormat.PCM_16000,
        "sample_rate": 16000,
        "commit_strategy": CommitStrategy.VAD,
        "vad_silence_threshold_secs": 0.5,
        "language_code": "en",
        "include_timestamps": True,
    }
    connection = await client.speech_to_text.realtime.connect(options)
    for event in ["session_started", "partial_transcript", "committed_transcript",
                  "committed_transcript_with_timestamps", "error"]:
        connection.on(event, lambda data, event=event: seen.append(data))
    connection.on(RealtimeEvents.CLOSE, lambda info: closed.update(info or {}))
    # 100-ms chunks at three times the speaking pace.
    for i in range(0, len(pcm), 3200):
        await connection.send({"audio_base_64": base64.b64encode(pcm[i:i + 3200]).decode()})
        await asyncio.sleep(0.033)
    await connection.commit()
    # Done once the words of the call's end are committed (a long turn's
    # pieces committed while it goes on end 1.5 s or more behind the sound).
    total = len(pcm) / 32000
    def ended():
        for e in seen:
            words = e.get("words") or []
            if e.get("message_type") == "committed_transcript_with_timestamps" and words \
                    and words[-1]["end"] >= total - 1:
                return True
        return False
    deadline = time.time() + 120
    while time.time() < deadline and not ended():
        await asyncio.sleep(0.1)
    await connection.close()
    return seen, closed

report["events"], report["closed"] = asyncio.run(session())

async def with_token():
    token = client.tokens.single_use.create("realtime_scribe").token
    tokened = ElevenLabs(api_key="", base_url=base + "/elevenlabs")
    first = []
    c = await tokened.speech_to_text.realtime.connect({
        "model_id": "scribe_v2_realtime", "audio_format": AudioFormat.PCM_16000,
        "sample_rate": 16000, "token": token})
    c.on("session_started", lambda data: first.append(data))
    for _ in range(50):
        if first:
            break
        await asyncio.sleep(0.1)
    await c.close()
    again = None
    try:
        await tokened.speech_to_text.realtime.connect({
            "model_id": "scribe_v2_realtime", "audio_format": AudioFormat.PCM_16000,
            "sample_rate": 16000, "token": token})
    except Exception as e:
        again = getattr(getattr(e, "response", None), "status_code", str(e))
    return first, again

report["token_started"], report["token_again"] = asyncio.run(with_token())

async def refused(api_key, **extra):
    c = ElevenLabs(api_key=api_key, base_url=base + "/elevenlabs")
    options = {"model_id": "scribe_v2_realtime", "audio_format": AudioFormat.PCM_16000,
               "sample_rate": 16000, **extra}
    try:
        await c.speech_to_text.realtime.connect(options)
    except Exception as e:
        return getattr(getattr(e, "response", None), "status_code", str(e))
    return None

report["read_key"] = asyncio.run(refused(read_key))
report["silence"] = asyncio.run(refused(key, vad_silence_threshold_secs=5.0))
print(json.dumps(report))
"#;

/// A test server with a write key, and `script` run against it (with a
/// read key and the call as PCM at `rate`): the server, the key, what the
/// script reported and the batch transcript of the call.
async fn drive(script: &str, rate: u32) -> (TestApp, String, Value, String) {
    let _alone = LIVE_CALL.lock().await;
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.account(1_000, "write").await;
    let (_, read_key) = app.account(1_000, "read").await;
    let (wav, pcm) = call_pcm();
    let batch = batch_transcript(&app, &key, wav.clone()).await;
    let pcm = if rate == 16_000 {
        pcm
    } else {
        let audio = mediagen_media::audio::parse_wav(&wav).unwrap();
        pcm16(&mediagen_media::audio::resample(
            &audio.samples,
            16_000,
            rate,
        ))
    };
    let dir = tempfile::tempdir().unwrap();
    let pcm_path = dir.path().join("call.pcm");
    std::fs::write(&pcm_path, &pcm).unwrap();
    let args = vec![
        app.addr.clone(),
        key.clone(),
        read_key,
        pcm_path.to_str().unwrap().to_owned(),
    ];
    let report = run_python(script, dir.path(), args).await;
    (app, key, report, batch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elevenlabs_realtime_client_transcribes_a_live_call() {
    let (app, key, report, batch) = drive(ELEVENLABS, 16_000).await;
    let batch_text = batch.as_str();
    let events = report["events"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["message_type"] == kind)
            .collect()
    };
    let started = of("session_started");
    assert_eq!(started.len(), 1, "{events:?}");
    assert_eq!(started[0]["config"]["sample_rate"], 16000);
    assert!(of("error").is_empty(), "{events:?}");
    assert!(!of("partial_transcript").is_empty(), "{events:?}");
    let committed = of("committed_transcript");
    assert!(committed.len() >= 2, "the pause ends a turn: {committed:?}");
    let live: Vec<&str> = committed
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    crate::realtime::assert_near_batch("ElevenLabs client", &live.join(" "), batch_text);
    // Word times with each committed text, spacing between the words.
    let timed = of("committed_transcript_with_timestamps");
    assert_eq!(timed.len(), committed.len(), "{events:?}");
    assert_eq!(timed[0]["language_code"], "en");
    let words = timed[0]["words"].as_array().unwrap();
    assert!(words.iter().any(|w| w["type"] == "spacing"), "{}", timed[0]);
    // In session seconds, in order.
    let starts: Vec<f64> = words.iter().map(|w| w["start"].as_f64().unwrap()).collect();
    assert!(starts.windows(2).all(|p| p[0] <= p[1]), "{}", timed[0]);
    assert!(
        starts[0] > 6.0 && starts[0] < 7.5,
        "the call begins at 6.4 s: {}",
        timed[0]
    );
    assert_eq!(report["closed"]["code"], 1000, "{report}");
    // A token opens one session, once; a read key and a bad query are
    // refused at the upgrade.
    assert_eq!(
        report["token_started"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(report["token_again"], 401, "{report}");
    assert_eq!(report["read_key"], 403, "{report}");
    assert_eq!(report["silence"], 400, "{report}");
    // Charged for the sound received, as the native session is.
    let jobs = app.get_json("/v1/jobs?kind=stt.realtime", &key).await;
    let data = jobs["data"].as_array().unwrap();
    let longest = data
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    let mut charged = Vec::new();
    for id in longest {
        let job = app.settled(&key, &id, Duration::from_secs(30)).await;
        charged.push(job["credits"].as_i64().unwrap_or(0));
    }
    assert!(charged.contains(&31), "{charged:?}");
}

const OPENAI: &str = r#"
import asyncio, base64, time
from openai import AsyncOpenAI

base, key, read_key, pcm_path = sys.argv[1:5]
pcm = open(pcm_path, "rb").read()
report = {}

async def session():
    client = AsyncOpenAI(api_key=key, base_url=base + "/v1")
    seen = []
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as conn:
        async def read():
            async for event in conn:
                seen.append(event.model_dump())
        reader = asyncio.create_task(read())
        # A rate the session does not take: an error event, the session goes on.
        await conn.session.update(session={"type": "transcription", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}}}}, event_id="bad_rate")
        await conn.session.update(session={"type": "transcription", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 24000},
            "transcription": {"model": "gpt-4o-transcribe", "language": "en"},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 500}}}})
        # 100-ms chunks at three times the speaking pace.
        for i in range(0, len(pcm), 4800):
            await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i:i + 4800]).decode())
            await asyncio.sleep(0.033)
        await conn.input_audio_buffer.commit()
        # Done once the turn that reaches the call's end is completed (a long
        # turn's pieces committed while it goes on end 1.3 s or more behind).
        total_ms = len(pcm) / 48
        def ended():
            last = {e["item_id"] for e in seen if e["type"] == "input_audio_buffer.speech_stopped"
                    and e["audio_end_ms"] >= total_ms - 1000}
            return any(e["type"] == "conversation.item.input_audio_transcription.completed"
                       and e["item_id"] in last for e in seen)
        deadline = time.time() + 120
        while time.time() < deadline and not ended():
            await asyncio.sleep(0.1)
        reader.cancel()
    return seen

report["events"] = asyncio.run(session())

async def refused():
    reader = AsyncOpenAI(api_key=read_key, base_url=base + "/v1")
    try:
        async with reader.realtime.connect(extra_query={"intent": "transcription"}) as conn:
            await conn.recv()
    except Exception as e:
        return getattr(getattr(e, "response", None), "status_code", str(e))
    return None

report["read_key"] = asyncio.run(refused())
print(json.dumps(report))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_realtime_client_transcribes_a_live_call() {
    // OpenAI's sessions take 24-kHz PCM.
    let (app, key, report, batch) = drive(OPENAI, 24_000).await;
    let batch_text = batch.as_str();
    let events = report["events"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    assert_eq!(events[0]["type"], "session.created", "{events:?}");
    assert_eq!(
        events[0]["session"]["audio"]["input"]["format"]["rate"],
        24000
    );
    let errors = of("error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["error"]["param"], "session.audio.input.format");
    assert_eq!(errors[0]["error"]["event_id"], "bad_rate");
    let updated = of("session.updated");
    assert_eq!(updated.len(), 1, "{events:?}");
    let input = &updated[0]["session"]["audio"]["input"];
    assert_eq!(input["transcription"]["language"], "en", "{input}");
    assert_eq!(
        input["turn_detection"]["silence_duration_ms"], 500,
        "{input}"
    );
    let completed = of("conversation.item.input_audio_transcription.completed");
    assert!(completed.len() >= 2, "the pause ends a turn: {completed:?}");
    let live: Vec<&str> = completed
        .iter()
        .map(|e| e["transcript"].as_str().unwrap())
        .collect();
    crate::realtime::assert_near_batch("OpenAI client", &live.join(" "), batch_text);
    // Each turn: its speech start, then its commit; the deltas of an item
    // run ahead of its transcript and agree with it (words compared
    // without case and punctuation, the last one possibly cut).
    assert_eq!(
        of("input_audio_buffer.speech_started").len(),
        completed.len()
    );
    assert_eq!(of("input_audio_buffer.committed").len(), completed.len());
    let words = |t: &str| -> Vec<String> {
        t.split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
                    .to_lowercase()
            })
            .collect()
    };
    let mut streamed = 0;
    for (k, done) in completed.iter().enumerate() {
        let item = &done["item_id"];
        let deltas: String = of("conversation.item.input_audio_transcription.delta")
            .iter()
            .filter(|d| &d["item_id"] == item)
            .map(|d| d["delta"].as_str().unwrap())
            .collect();
        // The deltas are drafts (by a smaller model where one is
        // installed): the words they streamed, against as many of the
        // transcript's, differ by a few at most. (A long turn cut while it
        // goes on completes in items of its pieces: an item's drafts may
        // run on into the next pieces' words.)
        let said = words(&deltas);
        let heard: Vec<String> = completed[k..]
            .iter()
            .flat_map(|c| words(c["transcript"].as_str().unwrap()))
            .collect();
        let prefix = heard[..said.len().min(heard.len())].join(" ");
        let apart = mediagen_speech::stt::wer::word_error_rate(&prefix, &said.join(" "));
        assert!(apart <= 0.25, "{deltas:?} against {heard:?}");
        streamed += said.len();
    }
    assert!(
        streamed > 20,
        "the deltas stream the turns' words: {streamed}"
    );
    assert_eq!(report["read_key"], 403, "{report}");
    let jobs = app.get_json("/v1/jobs?kind=stt.realtime", &key).await;
    let id = jobs["data"][0]["id"].as_str().unwrap().to_owned();
    let job = app.settled(&key, &id, Duration::from_secs(30)).await;
    assert_eq!(job["credits"], 31, "{job}");
}
