//! The checks that read the installed engines, each against the fake
//! catalog ([`crate::fake`]) and no model: what each accepts, what each
//! refuses and how the refusal names the parameter.

use std::collections::HashMap;

use mediagen_core::{ApiError, ErrorCode};
use serde_json::{json, Value};

use crate::fake::{catalog, ENGLISH, SPANISH};

/// A body of `T` from JSON (its defaults for what is left out).
fn body<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a body of the documented shape")
}

fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The code and the parameter named.
fn refusal(e: ApiError) -> (ErrorCode, String) {
    let param = e.details.get("parameter").and_then(Value::as_str);
    (e.code, param.unwrap_or_default().to_owned())
}

fn is(code: ErrorCode, param: &str) -> (ErrorCode, String) {
    (code, param.to_owned())
}

#[test]
fn speech_is_checked_against_the_voices() {
    use crate::tts::{TtsBody, TtsRequest};
    let c = catalog();
    let ok = TtsRequest::parse(
        body::<TtsBody>(json!({"text": "Hello there.", "voiceId": ENGLISH})),
        c.voices.as_ref(),
        None,
    )
    .unwrap();
    // The voice's native rate, mp3 by default.
    assert_eq!((ok.sample_rate, ok.format.as_str()), (24_000, "mp3"));
    let refused = |v: Value| {
        refusal(TtsRequest::parse(body::<TtsBody>(v), c.voices.as_ref(), None).unwrap_err())
    };
    assert_eq!(
        refused(json!({"text": "Hi.", "voiceId": "nobody"})),
        is(ErrorCode::VoiceNotFound, "voiceId")
    );
    assert_eq!(
        refused(json!({"text": "   ", "voiceId": ENGLISH})),
        is(ErrorCode::InvalidParameter, "text")
    );
    assert_eq!(
        refused(json!({"text": "…!", "voiceId": ENGLISH})),
        is(ErrorCode::UnprocessableEntity, "text")
    );
    let long = "a".repeat(*crate::tts::MAX_TEXT + 1);
    assert_eq!(
        refused(json!({"text": long, "voiceId": ENGLISH})),
        is(ErrorCode::InvalidParameter, "text")
    );
    assert_eq!(
        refused(json!({"text": "Hi.", "voiceId": ENGLISH, "speed": 3.0})),
        is(ErrorCode::InvalidParameter, "speed")
    );
    // A catalog voice speaks its own language only.
    assert_eq!(
        refused(json!({"text": "Hola.", "voiceId": ENGLISH, "languageCode": "es"})),
        is(ErrorCode::UnprocessableEntity, "languageCode")
    );
}

#[test]
fn transcription_is_checked_against_the_recognisers() {
    use crate::stt::SttRequest;
    let c = catalog();
    let r = c.recognisers.as_ref();
    let ok = SttRequest::parse(&fields(&[("language", "de")]), r).unwrap();
    assert_eq!(ok.language.as_deref(), Some("de"));
    let e = SttRequest::parse(&fields(&[("model", "large")]), r).unwrap_err();
    assert!(e.message.contains("base, tiny.en"), "{}", e.message);
    assert_eq!(refusal(e), is(ErrorCode::InvalidParameter, "model"));
    let e = SttRequest::parse(&fields(&[("language", "xx")]), r).unwrap_err();
    assert_eq!(refusal(e).1, "language");
    // An English-only recogniser hears nothing else.
    let e = SttRequest::parse(&fields(&[("model", "tiny.en"), ("language", "es")]), r);
    assert_eq!(refusal(e.unwrap_err()).1, "language");
}

#[test]
fn a_live_transcription_is_checked_as_a_file_is() {
    use crate::stt_realtime::LiveSttRequest;
    let c = catalog();
    let q = LiveSttRequest::query(&fields(&[("language", "en")])).unwrap();
    LiveSttRequest::parse(q, c.recognisers.as_ref(), 30.0).unwrap();
    let q = LiveSttRequest::query(&fields(&[("model", "large")])).unwrap();
    let e = LiveSttRequest::parse(q, c.recognisers.as_ref(), 30.0).unwrap_err();
    assert_eq!(refusal(e).1, "model");
}

#[test]
fn a_live_speech_session_is_checked_as_a_request_is() {
    use crate::tts_realtime::LiveTtsRequest;
    let c = catalog();
    let q = LiveTtsRequest::query(&fields(&[("voiceId", SPANISH)])).unwrap();
    LiveTtsRequest::parse(q, c.voices.as_ref(), None, 30.0).unwrap();
    let q = LiveTtsRequest::query(&fields(&[("voiceId", "nobody")])).unwrap();
    let e = LiveTtsRequest::parse(q, c.voices.as_ref(), None, 30.0).unwrap_err();
    assert_eq!(refusal(e), is(ErrorCode::VoiceNotFound, "voiceId"));
}

#[test]
fn a_sound_is_priced_by_the_generator_s_reading() {
    use crate::sound::{SoundBody, SoundRequest};
    let g = catalog().generators;
    let ok = SoundRequest::parse(body::<SoundBody>(json!({"prompt": "rain"})), g.as_ref()).unwrap();
    assert_eq!(ok.duration, 6.0);
    let e = SoundRequest::parse(body::<SoundBody>(json!({"prompt": "a tuba"})), g.as_ref());
    assert_eq!(
        refusal(e.unwrap_err()),
        is(ErrorCode::UnsupportedPrompt, "prompt")
    );
    let e = SoundRequest::parse(
        body::<SoundBody>(json!({"prompt": "rain", "duration": 1000.0})),
        g.as_ref(),
    );
    assert_eq!(refusal(e.unwrap_err()).1, "duration");
    // No neural sound model is installed: the names listed are the embedded one.
    let e = SoundRequest::parse(
        body::<SoundBody>(json!({"prompt": "rain", "model": "audioldm"})),
        g.as_ref(),
    )
    .unwrap_err();
    assert_eq!(refusal(e), is(ErrorCode::UnprocessableEntity, "model"));
}

#[test]
fn an_image_is_checked_against_what_can_draw_it() {
    use crate::image::{ImageBody, ImageRequest};
    let g = catalog().generators;
    ImageRequest::parse(body::<ImageBody>(json!({"prompt": "a cat"})), g.as_ref()).unwrap();
    let e = ImageRequest::parse(
        body::<ImageBody>(json!({"prompt": "a cat", "negativePrompt": "cat"})),
        g.as_ref(),
    );
    assert_eq!(
        refusal(e.unwrap_err()),
        is(ErrorCode::UnsupportedPrompt, "prompt")
    );
    // A neural model on disk draws anything; one not on disk is listed.
    ImageRequest::parse(
        body::<ImageBody>(json!({"prompt": "a tuba", "model": "tiny-sd"})),
        g.as_ref(),
    )
    .unwrap();
    let e = ImageRequest::parse(
        body::<ImageBody>(json!({"prompt": "a cat", "model": "big-sd"})),
        g.as_ref(),
    )
    .unwrap_err();
    assert!(e.message.contains("tiny-sd"), "{}", e.message);
    let e = ImageRequest::parse(
        body::<ImageBody>(json!({"prompt": "a cat", "steps": 4})),
        g.as_ref(),
    );
    assert_eq!(
        refusal(e.unwrap_err()),
        is(ErrorCode::UnprocessableEntity, "steps")
    );
}

#[test]
fn dubbing_is_checked_against_its_pairs() {
    use crate::dub::DubOptions;
    let c = catalog();
    let pairs = c.translation.dubbing();
    let ok = fields(&[("targetLanguage", "es"), ("sourceLanguage", "en")]);
    DubOptions::parse(&ok, pairs, 10.0).unwrap();
    let e = DubOptions::parse(&fields(&[("targetLanguage", "fr")]), pairs, 10.0).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnprocessableEntity, "{}", e.message);
}

#[test]
fn openai_speech_maps_its_voices_and_models() {
    use crate::openai::speech::SpeechBody;
    let c = catalog();
    let speech = body::<SpeechBody>(json!({"model": "tts-1", "input": "Hi.", "voice": "alloy"}))
        .parse(&c)
        .unwrap();
    // alloy stands for a Kokoro voice; where it is missing, an English one.
    assert_eq!(speech.body.voice_id, ENGLISH);
    let e = body::<SpeechBody>(json!({"model": "tts-9", "input": "Hi.", "voice": "alloy"}))
        .parse(&c)
        .unwrap_err();
    assert_eq!(refusal(e).1, "model");
}

#[test]
fn openai_transcription_names_the_models_there_are() {
    use crate::openai::transcription::{Task, Transcription};
    let c = catalog();
    let form = fields(&[("model", "whisper-1")]);
    Transcription::parse(Task::Transcribe, &form, c.recognisers.as_ref()).unwrap();
    let form = fields(&[("model", "large")]);
    let e = Transcription::parse(Task::Translate, &form, c.recognisers.as_ref()).unwrap_err();
    assert!(
        e.message.contains("whisper-1, base, tiny.en"),
        "{}",
        e.message
    );
}

#[test]
fn elevenlabs_bodies_take_its_models_and_premade_voices() {
    use crate::elevenlabs::{SoundEffectBody, SpeechBody};
    let c = catalog();
    let speech = |model: &str| {
        body::<SpeechBody>(json!({"text": "Hi.", "model_id": model})).parse(
            "21m00Tcm4TlvDq8ikWAM",
            None,
            false,
            &c,
        )
    };
    let (ours, _) = speech("eleven_multilingual_v2").unwrap();
    // A premade voice stands for a catalog voice of ours.
    assert_eq!(ours.voice_id, ENGLISH);
    speech("kokoro").unwrap();
    assert_eq!(refusal(speech("gpt").unwrap_err()).1, "model_id");
    let sound = |model: &str| {
        body::<SoundEffectBody>(json!({"text": "rain", "model_id": model}))
            .parse(None, c.models.as_ref())
    };
    sound("eleven_text_to_sound_v2").unwrap();
    assert_eq!(refusal(sound("kokoro").unwrap_err()).1, "model_id");
}

#[test]
fn openai_model_aliases_follow_what_is_installed() {
    let aliases = crate::openai::models::aliases(&catalog());
    let serves = |id: &str| {
        let alias = aliases.iter().find(|a| a.id == id).expect(id);
        alias.serves.clone()
    };
    assert_eq!(serves("tts-1").as_deref(), Some("kokoro"));
    assert_eq!(serves("whisper-1").as_deref(), Some("whisper"));
    // No image engine is installed here.
    assert_eq!(serves("dall-e-2"), None);
}

#[test]
fn openai_images_map_its_models_to_ours() {
    use crate::openai::image::ImagesBody;
    let g = catalog().generators;
    let images = |v: Value| body::<ImagesBody>(v).parse(g.as_ref());
    images(json!({"prompt": "a cat", "size": "256x256"})).unwrap();
    // dall-e-2 takes no 1792-wide picture.
    let e = images(json!({"prompt": "a cat", "size": "1792x1024"})).unwrap_err();
    assert_eq!(refusal(e).1, "size");
    // Our embedded engine's refusal, in OpenAI's names.
    let e = images(json!({"prompt": "a tuba", "size": "256x256"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnsupportedPrompt);
}

#[test]
fn live_sessions_of_the_dialects_take_the_recognisers_there_are() {
    use crate::elevenlabs::realtime::ScribeSession;
    use crate::elevenlabs::Transcription as Scribe;
    use crate::openai::realtime::TranscriptionSession;
    let c = catalog();
    let r = c.recognisers.as_ref();
    TranscriptionSession::parse(&fields(&[("intent", "transcription")]), r, 30.0).unwrap();
    let e = TranscriptionSession::parse(&fields(&[("intent", "chat")]), r, 30.0);
    assert_eq!(refusal(e.err().unwrap()).1, "intent");
    let pairs = |model: &str| vec![("model_id".to_owned(), model.to_owned())];
    ScribeSession::parse(&pairs("scribe_v2_realtime"), r, 30.0).unwrap();
    ScribeSession::parse(&pairs("base"), r, 30.0).unwrap();
    let e = ScribeSession::parse(&pairs("large"), r, 30.0);
    assert_eq!(refusal(e.err().unwrap()).1, "model_id");
    Scribe::parse(&fields(&[("model_id", "scribe_v1")]), r).unwrap();
    let e = Scribe::parse(&fields(&[("model_id", "large")]), r).unwrap_err();
    assert_eq!(refusal(e).1, "model_id");
}

#[test]
fn elevenlabs_stream_input_takes_its_premade_voices() {
    use crate::elevenlabs::stream_input::StreamInputQuery;
    let c = catalog();
    let asked = StreamInputQuery::parse("21m00Tcm4TlvDq8ikWAM", &fields(&[]), &c).unwrap();
    assert_eq!(asked.query.voice_id, ENGLISH);
    let e = StreamInputQuery::parse(ENGLISH, &fields(&[("model_id", "gpt")]), &c);
    assert_eq!(refusal(e.err().unwrap()).1, "model_id");
    let e = StreamInputQuery::parse(ENGLISH, &fields(&[("output_format", "wav_44100")]), &c);
    assert_eq!(refusal(e.err().unwrap()).1, "output_format");
}

#[test]
fn a_design_is_read_and_checked_against_the_voices() {
    use crate::voice_design::{DesignBody, DesignRequest};
    let c = catalog();
    let ok = DesignRequest::parse(
        body::<DesignBody>(json!({"description": "a deep voice", "seed": 3})),
        c.voices.as_ref(),
    )
    .unwrap();
    assert_eq!((ok.seed, ok.attributes.language.as_str()), (3, "en-US"));
    assert!(ok.attributes.pitch < 0.0);
    let refused = |v: Value| {
        refusal(DesignRequest::parse(body::<DesignBody>(v), c.voices.as_ref()).unwrap_err())
    };
    assert_eq!(
        refused(json!({"description": "qwzx"})),
        is(ErrorCode::UnsupportedPrompt, "description")
    );
    assert_eq!(
        refused(json!({"description": "a deep voice", "text": " "})),
        is(ErrorCode::InvalidParameter, "text")
    );
    // A language no voice table of the catalog speaks.
    assert_eq!(
        refused(json!({"description": "a Japanese woman"})),
        is(ErrorCode::UnprocessableEntity, "description")
    );
}

#[test]
fn a_clone_form_names_what_it_refuses() {
    use crate::voice_clone::{CloneMethod, CloneQuality, VoiceCloneForm};
    let form = |pairs: &[(&str, &str)]| -> VoiceCloneForm {
        mediagen_core::form::from_fields(&fields(pairs)).unwrap()
    };
    let ok = form(&[
        ("name", "A"),
        ("consent", "true"),
        ("method", "world"),
        ("language", "es-ES"),
    ])
    .options()
    .unwrap();
    assert_eq!(
        (ok.method, ok.language.as_deref()),
        (CloneMethod::World, Some("es-ES"))
    );
    assert_eq!(ok.quality, CloneQuality::default());
    for (pairs, param) in [
        (&[("name", "A")][..], "consent"),
        (&[("consent", "false")][..], "consent"),
        (
            &[("consent", "true"), ("language", "en us")][..],
            "language",
        ),
        (&[("consent", "true"), ("method", "magic")][..], "method"),
        (&[("consent", "true"), ("quality", "max")][..], "quality"),
    ] {
        let e = form(pairs).options().unwrap_err();
        assert_eq!(
            refusal(e),
            is(ErrorCode::InvalidParameter, param),
            "{pairs:?}"
        );
    }
}

/// Every bound a check reads from a schema is there, with the value the
/// document has always published (a bound moved or dropped from its
/// attribute fails here, not at a client's request).
#[test]
fn every_bound_a_check_reads_is_in_its_schema() {
    use crate::bounds::Bound;
    use crate::image::ImageBody;
    use crate::sound::SoundBody;
    assert_eq!(*crate::tts::MAX_TEXT, 5000);
    assert_eq!(
        (
            crate::sound::SECONDS.minimum(),
            crate::sound::SECONDS.maximum()
        ),
        (0.5, 30.0)
    );
    assert_eq!(*crate::avatar::MAX_SECONDS, 600.0);
    let most = |b: Bound| b.max_length();
    assert_eq!(most(Bound::of::<SoundBody>("prompt")), 1000);
    assert_eq!(most(Bound::of::<ImageBody>("prompt")), 1000);
    assert_eq!(
        most(Bound::of::<crate::voice_design::DesignBody>("description")),
        1000
    );
    assert_eq!(
        most(Bound::of::<crate::voice_design::DesignBody>("text")),
        1000
    );
    assert_eq!(
        most(Bound::of::<crate::openai::speech::SpeechBody>("input")),
        4096
    );
    for side in ["width", "height"] {
        let b = Bound::of::<ImageBody>(side);
        assert_eq!(
            (b.min_count(), b.max_count(), b.multiple_of),
            (64, 2048, Some(8.0))
        );
    }
    assert_eq!(Bound::of::<ImageBody>("n").max_count(), 4);
    for name in ["numSpeakers", "minSpeakers", "maxSpeakers"] {
        let b = Bound::of::<crate::stt::SpeechToTextForm>(name);
        assert_eq!((b.min_count(), b.max_count()), (1, 32), "{name}");
    }
    // Image and sound generation bound the neural members alike.
    assert_eq!(Bound::of::<ImageBody>("steps").max_count(), 150);
    assert_eq!(Bound::of::<ImageBody>("guidanceScale").maximum(), 30.0);
    assert_eq!(
        format!("{:?}", crate::neural::NeuralBounds::of::<ImageBody>()),
        format!("{:?}", crate::neural::NeuralBounds::of::<SoundBody>())
    );
}
