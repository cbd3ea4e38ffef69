//! The multipart forms of the endpoints that take media, for the OpenAPI
//! document: every part, its type and its bounds. The handlers read them
//! as text parts (see `media_input` and each pipeline's options parser);
//! a number or boolean is sent as its text. The forms named in
//! [`BY_FILE_ID`] are also accepted as JSON naming an uploaded file by
//! `fileId` instead of the `file` part: `contract` writes that alternative
//! into the document from the form.
//!
//! Checks the schema cannot state (which models, voices and languages this
//! server has, times against the file's length, rules joining two fields)
//! answer 422, or 404 for an id.
#![allow(dead_code)]

use utoipa::ToSchema;

/// The forms that may name an uploaded file (`fileId`) in a JSON body
/// instead of carrying a `file` part.
pub const BY_FILE_ID: [&str; 5] = [
    "SpeechToTextForm",
    "VideoTrimForm",
    "VoiceChangerForm",
    "DubbingForm",
    "AvatarExpansionForm",
];

/// `POST /v1/files`.
#[derive(ToSchema)]
pub struct FileUploadForm {
    /// Audio or video (probed; anything else: 415).
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// `POST /v1/speech-to-text`.
#[derive(ToSchema)]
pub struct SpeechToTextForm {
    /// Speech in any accepted audio or video container.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// A model listed by `GET /v1/models` (kind `stt`); default: the
    /// server's. One it lacks: 422.
    #[schema(min_length = 1)]
    model: Option<String>,
    /// ISO 639-1, or `auto` (detected). A code the model does not know: 422.
    #[schema(pattern = "^([A-Za-z]{2}|auto)$")]
    language: Option<String>,
    /// `transcribe` (default) or `translate` (into English).
    #[schema(schema_with = tasks)]
    task: Option<String>,
    /// Words to expect (names, terms), at most 1000 characters.
    #[schema(max_length = 1000)]
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `vtt`, `verbose_json`.
    #[schema(rename = "responseFormat", schema_with = transcript_formats)]
    response_format: Option<String>,
    /// `segment` (default), `word`, or both comma-separated; `word` needs
    /// `verbose_json` (422 otherwise).
    #[schema(rename = "timestampGranularities", schema_with = granularities)]
    timestamp_granularities: Option<String>,
    /// `true`: who speaks when. Every segment and word gets `speaker`
    /// (`speaker_0`, `speaker_1`, … by first speaking), segments are cut
    /// where the speaker changes, `speakers` lists each with their
    /// speaking time, and srt/vtt show them (`[speaker_0]`, `<v speaker_0>`).
    diarize: Option<bool>,
    /// How many speakers there are, when known (1–32); needs `diarize`
    /// (400 otherwise). Without it the number is found from the audio.
    #[schema(rename = "numSpeakers", minimum = 1, maximum = 32)]
    num_speakers: Option<u32>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

/// `POST /v1/audio/transcriptions` (OpenAI's form).
#[derive(ToSchema)]
pub struct OpenAiTranscriptionForm {
    /// Speech in any accepted audio or video container.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// `whisper-1` (our default recogniser), `gpt-4o-transcribe` or
    /// `gpt-4o-mini-transcribe` (the same, with OpenAI's rules for them:
    /// json or text only), or a speech-to-text model of `GET /v1/models`.
    #[schema(min_length = 1)]
    model: String,
    /// ISO 639-1; omitted: detected.
    #[schema(pattern = "^[A-Za-z]{2}$")]
    language: Option<String>,
    /// Words to expect (names, terms), at most 1000 characters.
    #[schema(max_length = 1000)]
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json`, `vtt`.
    #[schema(schema_with = openai_transcript_formats)]
    response_format: Option<String>,
    /// 0–1; taken, not used (decoding is greedy): a value other than 0 is
    /// named in `X-Mediagen-Ignored`.
    #[schema(minimum = 0.0, maximum = 1.0)]
    temperature: Option<f64>,
    /// `segment` (default) and/or `word`, one part each; needs
    /// `verbose_json` and `whisper-1` (or our model names).
    #[schema(rename = "timestamp_granularities[]", schema_with = openai_granularities)]
    timestamp_granularities: Option<Vec<String>>,
    /// `false` only: streamed transcriptions are not supported (400).
    stream: Option<bool>,
}

/// `POST /v1/audio/translations` (OpenAI's form).
#[derive(ToSchema)]
pub struct OpenAiTranslationForm {
    /// Speech in any accepted audio or video container.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// `whisper-1` (our default recogniser) or a multilingual
    /// speech-to-text model of `GET /v1/models`.
    #[schema(min_length = 1)]
    model: String,
    /// Words to expect, in English, at most 1000 characters.
    #[schema(max_length = 1000)]
    prompt: Option<String>,
    /// `json` (default), `text`, `srt`, `verbose_json`, `vtt`.
    #[schema(schema_with = openai_transcript_formats)]
    response_format: Option<String>,
    /// 0–1; taken, not used (see transcriptions).
    #[schema(minimum = 0.0, maximum = 1.0)]
    temperature: Option<f64>,
}

/// One range to keep, in seconds.
#[derive(ToSchema)]
pub struct TrimRange {
    #[schema(minimum = 0.0)]
    start: f64,
    #[schema(minimum = 0.0)]
    end: f64,
}

/// `POST /v1/video/trim`.
#[derive(ToSchema)]
pub struct VideoTrimForm {
    /// A video in an accepted container.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// The ranges to keep, in order (a JSON list in a multipart part):
    /// each `start < end` within the video (422 otherwise).
    #[schema(min_items = 1)]
    ranges: Vec<TrimRange>,
    /// `accurate` (default, frame-exact) or `fast` (stream copy from
    /// keyframes).
    #[schema(schema_with = trim_modes)]
    mode: Option<String>,
    /// `mp4` (default), `webm`, `mov`, `mkv`.
    #[schema(schema_with = containers)]
    format: Option<String>,
    /// `true`: ranges past the end are cut at the end.
    clamp: Option<bool>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

/// `POST /v1/voice-changer`.
#[derive(ToSchema)]
pub struct VoiceChangerForm {
    /// Speech in any accepted audio or video container.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// The target voice: a catalog or cloned voice id (unknown: 404).
    #[schema(rename = "voiceId", min_length = 1, pattern = "\\S")]
    voice_id: String,
    /// `convert` (default) or `resynthesize` (`revoice`, its name before,
    /// is still taken).
    #[schema(schema_with = change_modes)]
    mode: Option<String>,
    #[schema(schema_with = crate::routes::audio_format_schema)]
    format: Option<String>,
    /// A rate the format takes (another: 422).
    #[schema(rename = "sampleRate", schema_with = crate::routes::sample_rate_schema)]
    sample_rate: Option<u32>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

/// `POST /v1/dubbing`.
#[derive(ToSchema)]
pub struct DubbingForm {
    /// Speech in any accepted audio or video container.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// ISO 639-1 (a pair the server lacks: 422, see `GET
    /// /v1/dubbing/languages`).
    #[schema(
        rename = "targetLanguage",
        pattern = "^[A-Za-z]{2}([-_][A-Za-z0-9]+)*$"
    )]
    target_language: String,
    /// ISO 639-1, or `auto` (default).
    #[schema(
        rename = "sourceLanguage",
        pattern = "^([A-Za-z]{2}([-_][A-Za-z0-9]+)*|auto)$"
    )]
    source_language: Option<String>,
    /// One voice for every line (not with `voiceMode: clone`: 422).
    #[schema(rename = "voiceId", min_length = 1, pattern = "\\S")]
    voice_id: Option<String>,
    /// `auto` (default: for each speaker, a catalog voice near them) or
    /// `clone` (each speaker's own voice: a neural clone searched from
    /// their lines, or that voice converted toward theirs).
    #[schema(rename = "voiceMode", schema_with = voice_modes)]
    voice_mode: Option<String>,
    /// Keep the music and noise under the dub (default `true`).
    #[schema(rename = "keepBackground")]
    keep_background: Option<bool>,
    /// Seconds; the part dubbed starts here (before the end: 422).
    #[schema(rename = "startTime", minimum = 0.0)]
    start_time: Option<f64>,
    /// Seconds; after `startTime` (422 otherwise).
    #[schema(rename = "endTime", minimum = 0.0)]
    end_time: Option<f64>,
    /// How much a line may be sped up to fit, 1.0–2.0 (default 1.3).
    #[schema(rename = "maxSpeedup", minimum = 1.0, maximum = 2.0)]
    max_speedup: Option<f64>,
    #[schema(schema_with = crate::routes::audio_format_schema)]
    format: Option<String>,
    /// A rate the format takes (another: 422).
    #[schema(rename = "sampleRate", schema_with = crate::routes::sample_rate_schema)]
    sample_rate: Option<u32>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

/// `POST /v1/avatars`.
#[derive(ToSchema)]
pub struct AvatarUploadForm {
    /// A video of a person or character, 1 s to 5 min.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// 1–100 characters.
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    name: String,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    description: Option<String>,
    #[schema(schema_with = crate::routes::gender_schema)]
    gender: Option<String>,
    /// Comma-separated or a JSON list: at most 20 labels of at most 40
    /// characters (the schema shows one label).
    #[schema(max_length = 40, pattern = "^[^,\\[]*$")]
    labels: Option<String>,
}

/// `POST /v1/voices`.
#[derive(ToSchema)]
pub struct VoiceCloneForm {
    /// 1–100 characters.
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    name: String,
    /// Samples of the speaker: audio or video, 10 s to 5 min in all.
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1)]
    files: Vec<Vec<u8>>,
    /// `true`: the speaker agreed to having their voice cloned (required).
    #[schema(schema_with = consent)]
    consent: bool,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    description: Option<String>,
    /// Comma-separated or a JSON list: at most 20 labels of at most 40
    /// characters (the schema shows one label).
    #[schema(max_length = 40, pattern = "^[^,\\[]*$")]
    labels: Option<String>,
    /// A BCP-47 tag (`en`, `es-ES`) or `auto` (default).
    #[schema(pattern = "^[A-Za-z0-9-]{1,35}$")]
    language: Option<String>,
    /// `neural` (default): a Kokoro style table searched for from the
    /// samples; `world`: the closest catalog voice converted toward the
    /// samples' pitch and formants (free).
    #[schema(schema_with = clone_method)]
    method: Option<String>,
    /// A neural clone's time on two cores, and its price at
    /// `costs."voice.clone"` credits a second (default 1): `fast` 90 s,
    /// `standard` (default) 170 s, `best` 480 s.
    #[schema(schema_with = clone_quality)]
    quality: Option<String>,
}

fn clone_method() -> Object {
    enumerated(&["neural", "world"])
}

fn clone_quality() -> Object {
    enumerated(&["fast", "standard", "best"])
}

fn enumerated(values: &[&str]) -> Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// `POST /v1/avatar-expansion` (as JSON, `avatarId` or `fileId` instead of
/// the `file` part).
#[derive(ToSchema)]
pub struct AvatarExpansionForm {
    /// A video to expand (or send `avatarId`; exactly one of them, else 422).
    #[schema(value_type = String, format = Binary)]
    file: Option<Vec<u8>>,
    /// A catalog or uploaded avatar (unknown: 404).
    #[schema(rename = "avatarId", min_length = 1)]
    avatar_id: Option<String>,
    /// Seconds of output, more than 0 and at most 600 (or send
    /// `audioFileId`; exactly one of them, else 422).
    #[schema(exclusive_minimum = 0.0, maximum = 600.0)]
    duration: Option<f64>,
    /// An uploaded sound whose length sets the duration (a talking
    /// presenter speaks it).
    #[schema(rename = "audioFileId", min_length = 1)]
    audio_file_id: Option<String>,
    /// `seamless` (default), `pingpong`, `loop`, `freeze`.
    #[schema(schema_with = expansion_modes)]
    mode: Option<String>,
    /// `mp4` (default), `webm`, `mov`, `mkv`.
    #[schema(schema_with = containers)]
    format: Option<String>,
    #[schema(minimum = 0)]
    seed: Option<u64>,
    /// Validate and price only.
    #[schema(rename = "dryRun")]
    dry_run: Option<bool>,
    #[schema(rename = "webhookUrl", schema_with = crate::routes::webhook_url_schema)]
    webhook_url: Option<String>,
}

use crate::routes::one_of_strings as choices;
use utoipa::openapi::schema::Object;

fn tasks() -> Object {
    choices(&["transcribe", "translate"])
}
fn transcript_formats() -> Object {
    choices(&mediagen_jobs::stt::FORMATS)
}
fn openai_transcript_formats() -> Object {
    choices(&mediagen_jobs::openai::transcription::FORMATS)
}
fn openai_granularities() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(choices(&["segment", "word"]))
        .max_items(Some(2))
        .build()
}
fn granularities() -> Object {
    choices(&["segment", "word", "segment,word", "word,segment"])
}
fn trim_modes() -> Object {
    choices(&["accurate", "fast"])
}
fn containers() -> Object {
    choices(&["mp4", "webm", "mov", "mkv"])
}
fn change_modes() -> Object {
    choices(&["convert", "resynthesize", "revoice"])
}
fn voice_modes() -> Object {
    choices(&["auto", "clone"])
}
fn expansion_modes() -> Object {
    choices(&["seamless", "pingpong", "loop", "freeze"])
}
fn consent() -> Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .enum_values(Some([true]))
        .build()
}
