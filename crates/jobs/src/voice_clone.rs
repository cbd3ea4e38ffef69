//! A voice clone (`POST /v1/voices`, the `voice.clone` job's payload),
//! and a cloned voice as it is stored.

use mediagen_core::form::FilePart;
use mediagen_core::voice::VoiceProfile;
use mediagen_core::{ApiError, VoiceId};
use serde::{Deserialize, Serialize};

/// Total seconds of samples a cloned voice needs, and takes at most.
pub const MIN_SAMPLE_SECONDS: f64 = 10.0;
pub const MAX_SAMPLE_SECONDS: f64 = 300.0;

/// The refusal of samples that are too short or too long in total.
pub fn samples_out_of_range(seconds: f64) -> ApiError {
    ApiError::unprocessable(
        "files",
        format!("the samples must last {MIN_SAMPLE_SECONDS} s to {MAX_SAMPLE_SECONDS} s in total (these: {seconds:.1} s)"),
    )
    .with_detail("limit", "max_seconds")
    .with_detail("maximum", MAX_SAMPLE_SECONDS)
}

/// A cloned voice's stored profile and the catalog voice chosen for it
/// (the `profile` column of a voice).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredVoice {
    #[serde(flatten)]
    pub profile: VoiceProfile,
    #[serde(default)]
    pub base_voice_id: Option<String>,
    /// How alike the voice's speech and its samples are, measured when it
    /// was made (absent for voices made before, or without the encoder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<VoiceSimilarity>,
    /// A neural clone's style table (absent: a WORLD clone, spoken as its
    /// base voice converted toward the profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neural: Option<NeuralStyle>,
}

/// A neural clone: a Kokoro style table of its own, kept in the blob store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NeuralStyle {
    /// The blob key of the table ([`cloned_styles_key`]).
    pub styles_key: String,
    /// The factor the pitch its table predicts is spoken at (1: as
    /// predicted; voices made before have none).
    #[serde(default = "unit", skip_serializing_if = "is_unit")]
    pub pitch: f32,
    /// The factor its formants are spoken at (1: as its table speaks;
    /// voices made before have none).
    #[serde(default = "unit", skip_serializing_if = "is_unit")]
    pub formant: f32,
    /// The factor its pace is spoken at (1: as its table speaks; a
    /// designed voice's "slowly" is below 1).
    #[serde(default = "unit", skip_serializing_if = "is_unit")]
    pub pace: f32,
    /// The samples' recording colour the clone is spoken through: an
    /// equaliser curve of (Hz, dB) points (empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub colour: Colour,
}

fn unit() -> f32 {
    1.0
}

fn is_unit(x: &f32) -> bool {
    *x == 1.0
}

/// An equaliser curve: (Hz, dB) points in rising frequency.
pub type Colour = Vec<(f32, f32)>;

/// How a voice is cloned (`method` of `POST /v1/voices`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CloneMethod {
    /// A Kokoro style table searched for from the samples.
    #[default]
    Neural,
    /// A catalog voice converted toward the samples' pitch and formants
    /// with the WORLD vocoder (how voices were cloned before).
    World,
}

/// How long a neural clone's search may run (`quality` of `POST
/// /v1/voices`); the price is per second of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CloneQuality {
    Fast,
    #[default]
    Standard,
    Best,
}

impl CloneQuality {
    pub const ALL: [(&'static str, CloneQuality); 3] = [
        ("fast", CloneQuality::Fast),
        ("standard", CloneQuality::Standard),
        ("best", CloneQuality::Best),
    ];

    /// The whole clone job's wall time on two cores, seconds: the search
    /// gets what the other steps leave of it.
    pub fn seconds(self) -> f64 {
        match self {
            CloneQuality::Fast => 90.0,
            CloneQuality::Standard => 170.0,
            CloneQuality::Best => 480.0,
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == raw)
            .map(|(_, q)| *q)
    }
}

/// The blob key of a neural clone's style table.
pub fn cloned_styles_key(account_id: &str, voice_id: &str) -> String {
    format!("voices/{account_id}/{voice_id}.styles")
}

/// Cosine similarities of GE2E speaker embeddings (1: the same direction;
/// 0.9 and more is the same voice, 0.5–0.65 different people).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceSimilarity {
    /// The cloned voice's speech against the samples.
    pub samples: f32,
    /// The base catalog voice, unconverted, against the samples.
    pub base: f32,
    /// A neural clone's likeness judged on samples its search did not use,
    /// beside the best stock voice's and the WORLD clone's on the same
    /// sentences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
}

/// Likeness to the held-out samples (sentences none of the search heard).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldOut {
    /// The neural clone.
    pub clone: f32,
    /// The stock voice most alike to the samples, and its likeness.
    pub best_stock_voice_id: String,
    pub best_stock: f32,
    /// The WORLD clone (its base voice converted toward the profile).
    pub world: f32,
    /// Whether the clone is spoken through the samples' recording colour
    /// (kept only where it made the clone more alike here).
    #[serde(default)]
    pub coloured: bool,
    /// The factor the clone's pitch is spoken at (chosen by likeness to
    /// the samples the search heard; 1: as its table predicts).
    #[serde(default = "unit")]
    pub pitch: f32,
    /// The factor the clone's formants are spoken at (found the same way;
    /// 1: as its table speaks).
    #[serde(default = "unit")]
    pub formant: f32,
    /// Seconds of samples searched with, and held out.
    pub search_seconds: f64,
    pub held_out_seconds: f64,
}

/// The blob key of a cloned voice's preview.
pub fn cloned_preview_key(account_id: &str, voice_id: &str) -> String {
    format!("voices/{account_id}/{voice_id}.mp3")
}

// The form of `POST /v1/voices`: the samples, the speaker's consent and
// what the voice is called.
/// `POST /v1/voices`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoiceCloneForm {
    /// 1–100 characters.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 100, pattern = "\\S")]
    pub name: Option<String>,
    /// Samples of the speaker: audio or video, 10 s to 5 min in all.
    #[serde(default)]
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1, required = true)]
    pub files: FilePart,
    /// `true`: the speaker agreed to having their voice cloned (required).
    #[schema(schema_with = consent, required = true)]
    pub consent: Option<bool>,
    /// At most 500 characters.
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// Comma-separated or a JSON list: at most 20 labels of at most 40
    /// characters (the schema shows one label).
    #[schema(max_length = 40, pattern = "^[^,\\[]*$")]
    pub labels: Option<String>,
    /// A BCP-47 tag (`en`, `es-ES`) or `auto` (default).
    #[schema(pattern = "^[A-Za-z0-9-]{1,35}$")]
    pub language: Option<String>,
    /// `neural` (default): a Kokoro style table searched for from the
    /// samples; `world`: the closest catalog voice converted toward the
    /// samples' pitch and formants (free).
    #[schema(schema_with = clone_method)]
    pub method: Option<String>,
    /// A neural clone's time on two cores, and its price at
    /// `costs."voice.clone"` credits a second (default 1): `fast` 90 s,
    /// `standard` (default) 170 s, `best` 480 s.
    #[schema(schema_with = clone_quality)]
    pub quality: Option<String>,
}

fn clone_method() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["neural", "world"])
}

fn clone_quality() -> utoipa::openapi::schema::Object {
    mediagen_core::schema::one_of_strings(&["fast", "standard", "best"])
}

fn consent() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .enum_values(Some([true]))
        .build()
}

/// What a clone form asks for besides its samples and names, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CloneOptions {
    /// BCP-47; `None`: heard by the recogniser.
    pub language: Option<String>,
    pub method: CloneMethod,
    pub quality: CloneQuality,
}

impl VoiceCloneForm {
    /// The speaker's consent (400 unless `true`), the language (a BCP-47
    /// tag or `auto`), the method and the quality; 400 naming the field.
    pub fn options(&self) -> Result<CloneOptions, ApiError> {
        if self.consent != Some(true) {
            return Err(ApiError::invalid_parameter(
                "consent",
                "required: `true`, confirming the speaker agreed to having their voice cloned",
            ));
        }
        let language = match self.language.as_deref().map(str::trim) {
            None | Some("") | Some("auto") => None,
            Some(l)
                if l.len() <= 35 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                Some(l.to_owned())
            }
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "language",
                    "must be a BCP-47 tag such as en or es-ES, or auto",
                ))
            }
        };
        let method = match self.method.as_deref().map(str::trim) {
            None | Some("") | Some("neural") => CloneMethod::Neural,
            Some("world") => CloneMethod::World,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "method",
                    "must be neural or world",
                ))
            }
        };
        let quality = match self.quality.as_deref().map(str::trim) {
            None | Some("") => CloneQuality::default(),
            Some(q) => CloneQuality::parse(q).ok_or_else(|| {
                ApiError::invalid_parameter("quality", "must be fast, standard or best")
            })?,
        };
        Ok(CloneOptions {
            language,
            method,
            quality,
        })
    }
}

/// What a clone job is asked for (validated by the API; the id is chosen
/// there, so a retried job makes the same voice once).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloneRequest {
    pub voice_id: VoiceId,
    pub name: String,
    pub description: String,
    pub labels: Vec<String>,
    /// BCP-47; `None`: heard by the recogniser on the first sample.
    pub language: Option<String>,
    /// Blob keys of the samples (account files), in the order sent.
    pub samples: Vec<String>,
    #[serde(default)]
    pub method: CloneMethod,
    #[serde(default)]
    pub quality: CloneQuality,
    /// Seconds of the samples together, as probed.
    #[serde(default)]
    pub sample_seconds: f64,
}

/// What a WORLD clone of `sample_seconds` of samples costs: 20 units for
/// what every clone does (the speech check, the speaker's measurements, the
/// likeness and the preview, some 14 s of a core on the ceilings bench for
/// 12 s of samples), and a fifth of a unit a second of samples analysed:
/// no clone that uses a core is free.
pub fn world_units(sample_seconds: f64) -> f64 {
    (20.0 + sample_seconds / 5.0).ceil()
}

impl crate::MediaRequest for CloneRequest {
    const LIMITS: crate::limits::MediaLimits = crate::limits::VOICE_SAMPLE;
}

impl mediagen_core::JobRequest for CloneRequest {
    const KIND: mediagen_core::JobKind = mediagen_core::JobKind::VoiceClone;

    /// Seconds of a neural clone's search (its quality's); a WORLD clone
    /// its [`world_units`].
    fn units(&self) -> f64 {
        match self.method {
            CloneMethod::Neural => self.quality.seconds(),
            CloneMethod::World => world_units(self.sample_seconds),
        }
    }

    fn media_seconds(&self) -> f64 {
        self.sample_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::NeuralStyle;

    #[test]
    fn a_clone_made_before_pitch_speaks_at_its_own() {
        let old: NeuralStyle =
            serde_json::from_str(r#"{"stylesKey": "voices/a/v.styles"}"#).unwrap();
        assert_eq!((old.pitch, old.formant), (1.0, 1.0));
        let json = serde_json::to_string(&old).unwrap();
        assert!(
            !json.contains("pitch") && !json.contains("formant"),
            "{json}"
        );
        let new = NeuralStyle {
            pitch: 1.2,
            formant: 0.9,
            ..old
        };
        let back: NeuralStyle =
            serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back, new);
    }
}
