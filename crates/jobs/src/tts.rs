//! A text-to-speech request (`POST /v1/text-to-speech`, also the `tts`
//! job's payload), a cloned voice as it speaks, and what a voice's preview says.

use std::sync::LazyLock;

use mediagen_core::format::AudioFormat;
use mediagen_core::ssml;
use mediagen_core::voice::{styled_speaker, VoiceProfile, CONVERSION_RATE as RATE};
use mediagen_core::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::bounds::Bound;
use crate::catalog::Voices;

/// Longest text accepted, in characters (the spec's rule; `text`'s
/// maxLength in [`TtsBody`]'s schema).
pub static MAX_TEXT: LazyLock<usize> = LazyLock::new(|| Bound::of::<TtsBody>("text").max_length());

/// A validated text-to-speech request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TtsRequest {
    pub text: String,
    pub voice_id: String,
    pub format: AudioFormat,
    pub sample_rate: u32,
    pub speed: f32,
    /// Word timestamps wanted.
    #[serde(default)]
    pub timestamps: bool,
    /// When `voice_id` is a cloned voice: how it is spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloned: Option<ClonedVoice>,
    /// Streamed to the client as it is made (`/v1/text-to-speech/stream`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// The characters as the voice speaks them ([`ssml::priced_characters`]:
    /// SSML read, numbers, money and spelled letters written out): what
    /// the request is priced on.
    #[serde(default)]
    pub priced: usize,
}

impl mediagen_core::JobRequest for TtsRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::Tts;

    /// Characters of the text as it is spoken (numbers, money, ordinals
    /// and spelled letters written out), never fewer than were sent.
    fn units(&self) -> f64 {
        self.priced.max(self.characters()) as f64
    }

    fn media_seconds(&self) -> f64 {
        0.0
    }
}

/// A cloned voice as speech engines speak it: a neural clone's style table
/// in its base voice's language and phonemes, or (a WORLD clone) the
/// catalog voice closest to it converted toward its profile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClonedVoice {
    /// `None` when no catalog voice speaks its language: it can then only
    /// be a conversion target.
    pub base_voice_id: Option<String>,
    /// BCP-47.
    pub language: String,
    pub profile: VoiceProfile,
    /// A neural clone's style table (spoken in its base voice's place).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neural: Option<crate::voice_clone::NeuralStyle>,
}

impl ClonedVoice {
    /// The catalog voice that speaks for it, or 422 naming `voiceId`.
    pub fn base(&self) -> Result<&str, ApiError> {
        self.base_voice_id.as_deref().ok_or_else(|| {
            ApiError::unprocessable(
                "voiceId",
                format!(
                    "no catalog voice speaks `{}`, this cloned voice's language, so it cannot speak text (it can still be the target of the voice changer's convert mode)",
                    self.language
                ),
            )
        })
    }
}

/// The body of `POST /v1/text-to-speech` and `/v1/text-to-speech/stream`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = TextToSpeechRequest)]
pub struct TtsBody {
    /// Not only white space; trimmed, 1–5000 characters (400 otherwise),
    /// with something to say (a letter or a digit in any script; otherwise
    /// 422, as for SSML errors).
    #[schema(min_length = 1, max_length = 5000, pattern = "\\S")]
    pub text: String,
    /// A voice id from `GET /v1/voices`: a catalog voice, or one of the
    /// account's cloned voices (spoken by its `baseVoiceId` and converted
    /// toward its profile; audio at 24 kHz).
    pub voice_id: String,
    /// `mp3` (default, 128 kbit/s), `wav` (16-bit PCM), `ogg` (Opus, 64 kbit/s),
    /// `flac` (16-bit), `pcm` (raw s16le mono, no header), `aac` (AAC-LC
    /// in ADTS, 128 kbit/s).
    #[serde(default)]
    #[schema(schema_with = mediagen_core::schema::audio_format_schema)]
    pub format: Option<String>,
    /// Hz. mp3/wav/flac/pcm/aac: 8000, 16000, 22050, 24000, 32000, 44100, 48000;
    /// ogg: 8000, 12000, 16000, 24000, 48000. Default: the voice's native rate
    /// (or the next allowed rate above it). A rate the format does not
    /// take: 422.
    #[serde(default)]
    #[schema(schema_with = mediagen_core::schema::sample_rate_schema)]
    pub sample_rate: Option<u32>,
    /// 0.5–2.0, default 1.0.
    #[serde(default)]
    #[schema(minimum = 0.5, maximum = 2.0)]
    pub speed: Option<f32>,
    /// `true` adds `result.words: [{word, start, end}]` (seconds), aligned by
    /// the speech recogniser. Not for the streaming endpoint.
    #[serde(default)]
    pub timestamps: bool,
    /// ISO 639-1: the language the text is read in. A neural clone
    /// (`engine: kokoro` in its voice) speaks every language Kokoro has
    /// (en, es, fr, hi, it, ja, pt, zh): its own style table with the phonemes of a
    /// Kokoro voice of that language. Any other voice must speak it already
    /// (422 otherwise). Default: the voice's language.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z]{2}([-_][A-Za-z0-9]+)*$")]
    pub language_code: Option<String>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: mediagen_core::JobFields,
}

impl TtsRequest {
    /// Validates a body against the catalog (and the account's cloned
    /// voice, when `voiceId` names one). Errors name the parameter.
    pub fn parse(
        body: TtsBody,
        catalog: &dyn Voices,
        cloned: Option<ClonedVoice>,
    ) -> Result<Self, ApiError> {
        // Blank as the schema's `\S` means it (ECMAScript white space);
        // the length is counted after trimming.
        let text = mediagen_core::params::trim_spaces(&body.text).to_owned();
        let chars = text.chars().count();
        if chars == 0 {
            return Err(ApiError::invalid_parameter("text", "must not be empty"));
        }
        if chars > *MAX_TEXT {
            return Err(ApiError::invalid_parameter(
                "text",
                format!("must be at most {} characters (got {chars})", *MAX_TEXT),
            ));
        }
        // Something to say: a letter or a digit in any script (or phonemes).
        // Text of only punctuation, emoji or invisible characters would make
        // silence and still be charged. Well-formed text the engine cannot
        // use (this, and SSML errors) is 422; out of the document's bounds,
        // 400.
        let sayable = |t: &str| t.chars().any(char::is_alphanumeric);
        if ssml::is_ssml(&text) {
            let segments = ssml::parse(&text).map_err(|e| {
                ApiError::unprocessable("text", format!("invalid SSML: {}", e.message))
                    .with_detail("position", e.position)
            })?;
            let says = segments.iter().any(|s| match s {
                ssml::Segment::Text { text, .. } => sayable(text),
                ssml::Segment::Phonemes { .. } => true,
                ssml::Segment::Break(_) => false,
            });
            if !says {
                return Err(ApiError::unprocessable(
                    "text",
                    "the SSML has nothing to say",
                ));
            }
        } else if !sayable(&text) {
            return Err(ApiError::unprocessable(
                "text",
                "has nothing to say: no letters or digits",
            ));
        }
        let cloned = match &body.language_code {
            Some(code) => {
                let code = crate::iso_639_1(code, "languageCode")?;
                speaking(catalog, &body.voice_id, cloned, &code)?
            }
            None => cloned,
        };
        let speaker = match &cloned {
            Some(c) => c.base()?,
            None => body.voice_id.as_str(),
        };
        let voice = catalog.voice(speaker).ok_or_else(|| {
            ApiError::new(mediagen_core::ErrorCode::VoiceNotFound)
                .with_message(format!(
                    "No voice with id `{}` exists. List voices with GET /v1/voices.",
                    body.voice_id
                ))
                .with_detail("parameter", "voiceId")
        })?;
        let native = match &cloned {
            Some(c) if c.neural.is_none() => RATE,
            _ => voice.sample_rate,
        };
        let (format, sample_rate) =
            crate::audio_output(body.format.as_deref(), body.sample_rate, native)?;
        let speed = body.speed.unwrap_or(1.0);
        if !(0.5..=2.0).contains(&speed) {
            return Err(ApiError::invalid_parameter(
                "speed",
                "must be from 0.5 to 2.0",
            ));
        }
        let priced = ssml::priced_characters(&text, &voice.language);
        Ok(Self {
            text,
            voice_id: body.voice_id,
            format,
            sample_rate,
            speed,
            timestamps: body.timestamps,
            cloned,
            stream: false,
            priced,
        })
    }

    /// The catalog voice that speaks (a cloned voice's base).
    pub fn speaker(&self) -> &str {
        match &self.cloned {
            Some(c) => c.base_voice_id.as_deref().unwrap_or_default(),
            None => &self.voice_id,
        }
    }

    /// Billable units: characters.
    pub fn characters(&self) -> usize {
        self.text.chars().count()
    }
}

/// The voice `voice_id` (`cloned`, when it is one of the account's)
/// speaking `language`: a neural clone in the place of the styled engine's
/// voice of that language (its phonemes, the clone's style table); any
/// other voice must speak it already (else 422 naming `languageCode`).
fn speaking(
    catalog: &dyn Voices,
    voice_id: &str,
    cloned: Option<ClonedVoice>,
    language: &str,
) -> Result<Option<ClonedVoice>, ApiError> {
    let refused = |speaks: &str| {
        ApiError::unprocessable(
            "languageCode",
            format!(
                "this voice speaks `{speaks}`; only a neural clone speaks other languages (its engine's: see GET /v1/voices?engine=kokoro)"
            ),
        )
    };
    let own = |c: &ClonedVoice| c.language.to_ascii_lowercase().starts_with(language);
    match cloned {
        Some(c) if own(&c) => Ok(Some(c)),
        Some(mut c) if c.neural.is_some() => {
            let voice =
                styled_speaker(catalog.voices(), &c.profile.gender, language).ok_or_else(|| {
                    ApiError::unprocessable(
                        "languageCode",
                        format!("no neural voice speaks `{language}`"),
                    )
                })?;
            c.base_voice_id = Some(voice.id.clone());
            Ok(Some(c))
        }
        Some(c) => Err(refused(&c.language)),
        None => match catalog.voice(voice_id) {
            Some(v)
                if !v
                    .languages
                    .iter()
                    .any(|l| l.to_ascii_lowercase().starts_with(language)) =>
            {
                Err(refused(&v.language))
            }
            _ => Ok(None),
        },
    }
}

impl TtsRequest {
    /// The file name of a job's audio (its URL goes at `/audioUrl`).
    pub fn output_name(&self) -> String {
        format!("speech.{}", self.format.extension())
    }

    /// The job's `result` for `duration` seconds of audio.
    pub fn result(&self, duration: f64) -> Value {
        let mut result = json!({
            "duration": (duration * 1000.0).round() / 1000.0,
            "format": self.format.as_str(),
            "sampleRate": self.sample_rate,
            "characters": self.characters(),
            "voiceId": self.voice_id,
        });
        if self.cloned.is_some() {
            result["baseVoiceId"] = json!(self.speaker());
        }
        result
    }
}

/// The blob key of a catalog voice's preview (made ahead by workers).
pub fn preview_key(voice_id: &str) -> String {
    format!("previews/{voice_id}.mp3")
}

/// What a voice says in its preview: a greeting in its language, or numbers
/// (which espeak-ng reads in every one of its languages).
pub fn preview_text(language: &str) -> &'static str {
    match language.get(..2).unwrap_or("") {
        "en" => "Hello! This is how I sound. I can read anything you write.",
        "es" => "¡Hola! Así suena mi voz. Puedo leer todo lo que escribas.",
        "fr" => "Bonjour ! Voici ma voix. Je peux lire tout ce que vous écrivez.",
        "it" => "Ciao! Questa è la mia voce. Posso leggere tutto quello che scrivi.",
        "pt" => "Olá! Esta é a minha voz. Posso ler tudo o que você escrever.",
        "de" => "Hallo! So klingt meine Stimme. Ich lese alles, was du schreibst.",
        "hi" => "नमस्ते! यह मेरी आवाज़ है।",
        // In kana: eSpeak reads a kanji as its character's name.
        "ja" => "こんにちは。これが わたしの こえです。なんでも よみあげます。",
        "zh" => "你好！这是我的声音。你写的任何内容，我都可以读出来。",
        _ => "1, 2, 3, 4, 5.",
    }
}
