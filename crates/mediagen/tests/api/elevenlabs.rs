//! ElevenLabs' official Python package (`elevenlabs` from PyPI,
//! unmodified) against `/elevenlabs/v1`: text to speech (whole, streamed,
//! with timestamps), voices, speech to text, sound effects, text to voice
//! (a designed voice kept) and the subscription, with `xi-api-key` (docs/compatibility.md). Other
//! accounts' voices and files stay out of reach here too: `attacks.rs`.

use crate::helpers::{Backend, TestApp};
use crate::sdk::run_python;
use crate::stt::wer;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

/// Arguments: the server, a write key, a directory, a voice id of ours, a
/// read key.
const SCRIPT: &str = r#"
import base64
from elevenlabs import ElevenLabs
from elevenlabs.core.api_error import ApiError

base, key, out, voice, read_key = sys.argv[1:6]
client = ElevenLabs(api_key=key, base_url=base + "/elevenlabs")
sentence = "The quick brown fox jumps over the lazy dog."
report = {}

audio = b"".join(client.text_to_speech.convert(
    voice, text=sentence, model_id="eleven_multilingual_v2", output_format="mp3_44100_128",
    voice_settings={"stability": 0.5, "similarity_boost": 0.75}))
open(f"{out}/speech.mp3", "wb").write(audio)
streamed = b"".join(client.text_to_speech.stream(voice, text="Streaming works.",
                                                 output_format="pcm_16000"))
open(f"{out}/streamed.pcm", "wb").write(streamed)

timed = client.text_to_speech.convert_with_timestamps(voice, text=sentence)
open(f"{out}/timed.mp3", "wb").write(base64.b64decode(timed.audio_base_64))
report["alignment"] = timed.alignment.model_dump()

george = b"".join(client.text_to_speech.convert("JBFqnCBsd6RMkjVDRZzb", text="Hello."))
report["george"] = len(george)

voices = client.voices.get_all().voices
report["voices"] = len(voices)
report["voice"] = client.voices.get(voice).model_dump()
report["premade"] = client.voices.get("JBFqnCBsd6RMkjVDRZzb").model_dump()

with open(f"{out}/speech.mp3", "rb") as f:
    heard = client.speech_to_text.convert(file=f, model_id="scribe_v1",
                                          timestamps_granularity="character", tag_audio_events=True)
report["stt"] = heard.model_dump()

with open(f"{out}/conversation.wav", "rb") as f:
    talk = client.speech_to_text.convert(file=f, model_id="scribe_v1", language_code="en",
                                         diarize=True, num_speakers=2)
report["diarized"] = talk.model_dump()

effect = b"".join(client.text_to_sound_effects.convert(text="rain on a window", duration_seconds=2.0))
open(f"{out}/effect.mp3", "wb").write(effect)

design = client.text_to_voice.design(
    voice_description="a calm older man with a deep British voice, speaking slowly",
    text="The quick brown fox jumps over the lazy dog near the old stone bridge.")
report["design"] = {"text": design.text, "previews": [
    {"id": p.generated_voice_id, "media_type": p.media_type, "duration": p.duration_secs,
     "bytes": len(base64.b64decode(p.audio_base_64)), "language": p.language}
    for p in design.previews]}
kept = client.text_to_voice.create(voice_name="Designed", voice_description="a calm narrator",
                                   generated_voice_id=design.previews[0].generated_voice_id)
report["kept"] = kept.model_dump()

report["subscription"] = client.user.subscription.get().model_dump()

def status(call):
    try:
        call()
    except ApiError as e:
        return {"status": e.status_code, "body": e.body}
    return None

reader = ElevenLabs(api_key=read_key, base_url=base + "/elevenlabs")
report["errors"] = {
    "voice": status(lambda: b"".join(client.text_to_speech.convert("nobody", text="Hi."))),
    "format": status(lambda: b"".join(client.text_to_speech.convert(voice, text="Hi.",
                                                                   output_format="ulaw_8000"))),
    "key": status(lambda: ElevenLabs(api_key="mg_live_nope", base_url=base + "/elevenlabs").voices.get_all()),
    "level": status(lambda: b"".join(reader.text_to_speech.convert(voice, text="Hi."))),
}
print(json.dumps(report))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elevenlabs_python_package_speaks_lists_and_transcribes() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 30.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let (_, read_key) = app.account(100, "read").await;
    let piper = app.first_voice(&key, "engine=piper").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    // A real two-person conversation (the pyannote.audio wheel's sample).
    std::fs::copy(
        crate::helpers::models_dir().join("diarize/sample.wav"),
        dir.path().join("conversation.wav"),
    )
    .unwrap();
    let args = vec![app.addr.clone(), key.clone(), out, piper.clone(), read_key];
    let report = run_python(SCRIPT, dir.path(), args).await;

    let seconds = |name: &str| crate::helpers::probe_seconds(&dir.path().join(name));
    assert!(seconds("speech.mp3") > 1.5, "{}", seconds("speech.mp3"));
    assert!(seconds("timed.mp3") > 1.5);
    assert!(seconds("effect.mp3") > 1.5);
    // pcm_16000: raw 16-bit samples at 16 kHz.
    let pcm = std::fs::metadata(dir.path().join("streamed.pcm"))
        .unwrap()
        .len();
    assert!(pcm > 16_000 && pcm.is_multiple_of(2), "{pcm} bytes");
    assert!(report["george"].as_u64().unwrap() > 1000, "{report}");

    // Every character of the text, timed in order within the audio.
    let a = &report["alignment"];
    let chars: Vec<&str> = a["characters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(chars.concat(), SENTENCE);
    let ends = a["character_end_times_seconds"].as_array().unwrap();
    let last = ends.last().unwrap().as_f64().unwrap();
    assert!(last > 1.0 && last <= seconds("timed.mp3") + 0.1, "{a}");

    assert!(report["voices"].as_u64().unwrap() > 100, "{report}");
    assert_eq!(report["voice"]["voice_id"], piper.as_str());
    assert_eq!(report["premade"]["voice_id"], "JBFqnCBsd6RMkjVDRZzb");
    assert_eq!(report["premade"]["name"], "George", "{}", report["premade"]);

    // The transcript: the sentence, words with spacing and characters.
    let stt = &report["stt"];
    let text = stt["text"].as_str().unwrap();
    assert!(wer(SENTENCE, text) < 0.25, "{text}");
    assert_eq!(stt["language_code"], "en", "{stt}");
    let words = stt["words"].as_array().unwrap();
    let spoken: Vec<&str> = words
        .iter()
        .filter(|w| w["type"] == "word")
        .map(|w| w["text"].as_str().unwrap())
        .collect();
    assert!(wer(SENTENCE, &spoken.join(" ")) < 0.25, "{spoken:?}");
    assert!(words.iter().any(|w| w["type"] == "spacing"), "{stt}");
    assert!(
        words[0]["characters"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{stt}"
    );

    // Diarized: every word and spacing says who speaks it, two speakers.
    let talk = report["diarized"]["words"].as_array().unwrap();
    let who: std::collections::BTreeSet<&str> = talk
        .iter()
        .map(|w| {
            w["speaker_id"]
                .as_str()
                .expect("every entry has its speaker")
        })
        .collect();
    assert_eq!(
        who.into_iter().collect::<Vec<_>>(),
        ["speaker_0", "speaker_1"],
        "{}",
        report["diarized"]
    );

    // Text to voice: three previews of the description, one kept as a
    // voice of the account.
    let design = &report["design"];
    let previews = design["previews"].as_array().unwrap();
    assert_eq!(previews.len(), 3, "{design}");
    for p in previews {
        assert!(p["id"].as_str().unwrap().starts_with("design_"), "{p}");
        assert_eq!(p["media_type"], "audio/mpeg", "{p}");
        assert!(
            p["bytes"].as_u64().unwrap() > 5_000 && p["duration"].as_f64().unwrap() > 2.0,
            "{p}"
        );
        assert_eq!(p["language"], "en");
    }
    let kept = &report["kept"];
    assert_eq!(
        (kept["name"].as_str(), kept["category"].as_str()),
        (Some("Designed"), Some("cloned")),
        "{kept}"
    );
    let voice = app
        .get_json(
            &format!("/v1/voices/{}", kept["voice_id"].as_str().unwrap()),
            &key,
        )
        .await;
    assert_eq!(voice["language"], "en-GB", "{voice}");

    // The subscription reports the credits: used and held against the limit.
    let s = &report["subscription"];
    let account = app.account_view(&key).await;
    let balance = account["credits"]["balance"].as_i64().unwrap();
    let count = s["character_count"].as_i64().unwrap();
    assert!(count > 2 * SENTENCE.len() as i64, "{s}");
    assert_eq!(
        s["character_limit"].as_i64().unwrap() - count,
        balance,
        "{s}"
    );

    let e = &report["errors"];
    assert_eq!(e["voice"]["status"], 404, "{e}");
    assert_eq!(e["format"]["status"], 422, "{e}");
    assert_eq!(e["key"]["status"], 401, "{e}");
    assert_eq!(e["level"]["status"], 403, "{e}");
}
