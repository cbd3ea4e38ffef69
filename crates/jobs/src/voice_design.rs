//! `voice.design`: voices made from a description (`POST /v1/voices/design`,
//! ElevenLabs' text-to-voice). The description is read here into
//! attributes (gender, age, accent and language, pitch, pace, timbre); a
//! worker makes three previews from them, each a different style table
//! blended from stock voices whose measured profiles fit, spoken at pitch,
//! formant and pace factors as clones are. A preview is kept as a voice of
//! the account with `POST /v1/voices {designId}`.

use mediagen_core::{ApiError, ErrorCode, JobFields, JobId, JobKind, JobRequest};
use serde::{Deserialize, Serialize};

use crate::bounds::Bound;
use crate::catalog::Voices;

/// How many previews one design makes.
pub const PREVIEWS: usize = 3;

/// The body of `POST /v1/voices/design`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = VoiceDesignRequest)]
pub struct DesignBody {
    /// What the voice sounds like, in English words: gender (a man, a
    /// woman), age (young, middle-aged, old), accent or language (British,
    /// American, Spanish, French, Italian, Portuguese, Hindi, Japanese,
    /// Chinese), pitch (deep, low, high), pace (slowly, quickly) and timbre
    /// (warm, bright, husky, breathy, soft, crisp…). 1–1000 characters;
    /// words it does not use come back as `ignoredTerms`; nothing it
    /// understands: 422 `unsupported_prompt`.
    #[schema(min_length = 1, max_length = 1000, pattern = "\\S")]
    pub description: String,
    /// What the previews say: plain text of 1–1000 characters, not markup
    /// (its first character other than space is not `<`: SSML is read by
    /// text to speech, not here); default: a sentence in the voice's
    /// language. Priced as each preview speaks it.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 1000, pattern = "^\\s*[^\\s<]")]
    pub text: Option<String>,
    /// The same seed and description make the same three voices.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub seed: Option<u64>,
    // The members every job request takes (`dryRun`, `webhookUrl`).
    #[serde(flatten)]
    #[schema(inline)]
    pub job: JobFields,
}

/// What a description asks for, as the designer reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attributes {
    /// `female` or `male`; `None`: either.
    pub gender: Option<String>,
    /// `young`, `middle-aged` or `old`.
    pub age: Option<String>,
    /// BCP-47: the language and accent it speaks (`en-US` unless said).
    pub language: String,
    /// From -1 (the lowest) to 1 (the highest); 0: as the voices are.
    pub pitch: f32,
    /// From -1 (slowest) to 1 (quickest).
    pub pace: f32,
    /// From -1 (dark: deep, warm) to 1 (bright: crisp, thin).
    pub brightness: f32,
    /// From 0 (clear) to 1 (husky, breathy, raspy).
    pub rough: f32,
    /// The words it used, as they were written.
    pub understood: Vec<String>,
    /// The words it did not use (small words such as "a" or "with" aside).
    pub ignored: Vec<String>,
}

/// One word's part of a description.
#[derive(Debug, Clone, Copy)]
enum Says {
    Gender(&'static str),
    Age(&'static str),
    /// A person of an age and a gender (`grandmother`).
    Person(&'static str, &'static str),
    Language(&'static str),
    Pitch(f32),
    Pace(f32),
    Bright(f32),
    Rough(f32),
    /// A word that moves two things (`calm`: slower and darker).
    Both(&'static Says, &'static Says),
    /// Makes the next word stronger (or weaker, below 1).
    Degree(f32),
}

/// The words a description is read by.
const WORDS: &[(&str, Says)] = &[
    ("man", Says::Gender("male")),
    ("male", Says::Gender("male")),
    ("guy", Says::Gender("male")),
    ("gentleman", Says::Gender("male")),
    ("he", Says::Gender("male")),
    ("his", Says::Gender("male")),
    ("boy", Says::Person("young", "male")),
    ("woman", Says::Gender("female")),
    ("female", Says::Gender("female")),
    ("lady", Says::Gender("female")),
    ("she", Says::Gender("female")),
    ("her", Says::Gender("female")),
    ("girl", Says::Person("young", "female")),
    ("grandfather", Says::Person("old", "male")),
    ("grandmother", Says::Person("old", "female")),
    ("young", Says::Age("young")),
    ("youthful", Says::Age("young")),
    ("teenage", Says::Age("young")),
    ("teenager", Says::Age("young")),
    ("middle-aged", Says::Age("middle-aged")),
    ("adult", Says::Age("middle-aged")),
    ("mature", Says::Age("middle-aged")),
    ("old", Says::Age("old")),
    ("older", Says::Age("old")),
    ("elderly", Says::Age("old")),
    ("aged", Says::Age("old")),
    ("senior", Says::Age("old")),
    ("british", Says::Language("en-GB")),
    ("english", Says::Language("en-GB")),
    ("uk", Says::Language("en-GB")),
    ("london", Says::Language("en-GB")),
    ("american", Says::Language("en-US")),
    ("us", Says::Language("en-US")),
    ("spanish", Says::Language("es")),
    ("french", Says::Language("fr")),
    ("italian", Says::Language("it")),
    ("portuguese", Says::Language("pt-BR")),
    ("brazilian", Says::Language("pt-BR")),
    ("hindi", Says::Language("hi")),
    ("indian", Says::Language("hi")),
    ("japanese", Says::Language("ja")),
    ("chinese", Says::Language("zh")),
    ("mandarin", Says::Language("zh")),
    ("deep", Says::Both(&Says::Pitch(-0.8), &Says::Bright(-0.4))),
    ("low", Says::Pitch(-0.6)),
    ("low-pitched", Says::Pitch(-0.6)),
    ("bass", Says::Pitch(-1.0)),
    ("baritone", Says::Pitch(-0.5)),
    (
        "booming",
        Says::Both(&Says::Pitch(-0.7), &Says::Bright(-0.3)),
    ),
    ("high", Says::Pitch(0.7)),
    ("high-pitched", Says::Pitch(0.8)),
    ("squeaky", Says::Pitch(1.0)),
    ("slow", Says::Pace(-0.7)),
    ("slowly", Says::Pace(-0.7)),
    ("unhurried", Says::Pace(-0.5)),
    ("measured", Says::Pace(-0.4)),
    ("calm", Says::Both(&Says::Pace(-0.4), &Says::Bright(-0.2))),
    ("relaxed", Says::Pace(-0.4)),
    (
        "soothing",
        Says::Both(&Says::Pace(-0.4), &Says::Bright(-0.3)),
    ),
    ("fast", Says::Pace(0.7)),
    ("quick", Says::Pace(0.7)),
    ("quickly", Says::Pace(0.7)),
    ("rapid", Says::Pace(0.8)),
    ("rapidly", Says::Pace(0.8)),
    (
        "energetic",
        Says::Both(&Says::Pace(0.5), &Says::Bright(0.3)),
    ),
    ("excited", Says::Both(&Says::Pace(0.5), &Says::Pitch(0.3))),
    ("lively", Says::Both(&Says::Pace(0.4), &Says::Bright(0.3))),
    ("bright", Says::Bright(0.7)),
    ("crisp", Says::Bright(0.5)),
    ("clear", Says::Bright(0.3)),
    ("thin", Says::Bright(0.6)),
    ("sharp", Says::Bright(0.6)),
    ("warm", Says::Bright(-0.5)),
    ("rich", Says::Bright(-0.4)),
    ("dark", Says::Bright(-0.7)),
    ("mellow", Says::Bright(-0.5)),
    ("soft", Says::Both(&Says::Bright(-0.3), &Says::Rough(0.2))),
    ("gentle", Says::Both(&Says::Bright(-0.3), &Says::Pace(-0.2))),
    ("smooth", Says::Rough(-0.3)),
    ("husky", Says::Both(&Says::Rough(0.7), &Says::Pitch(-0.2))),
    ("breathy", Says::Rough(0.6)),
    ("raspy", Says::Rough(0.8)),
    (
        "gravelly",
        Says::Both(&Says::Rough(0.9), &Says::Pitch(-0.3)),
    ),
    ("hoarse", Says::Rough(0.8)),
    ("very", Says::Degree(1.5)),
    ("really", Says::Degree(1.5)),
    ("extremely", Says::Degree(1.8)),
    ("quite", Says::Degree(1.2)),
    ("slightly", Says::Degree(0.5)),
    ("somewhat", Says::Degree(0.6)),
    ("little", Says::Degree(0.5)),
];

/// Small words that carry nothing a voice is made of: neither used nor
/// reported.
const SMALL: &[&str] = &[
    "a",
    "an",
    "the",
    "with",
    "and",
    "of",
    "in",
    "voice",
    "voiced",
    "speaking",
    "speaks",
    "speaker",
    "who",
    "that",
    "sounds",
    "sounding",
    "is",
    "has",
    "accent",
    "tone",
    "bit",
    "person",
    "narrator",
    "to",
    "for",
    "like",
    "but",
    "not",
    "too",
    "or",
    "at",
    "it",
    "its",
    "character",
    "talking",
    "talks",
    "reading",
    "reads",
    "pitch",
    "pitched",
    "pace",
];

/// Reads a description into what it asks for.
pub fn read(description: &str) -> Attributes {
    let mut out = Attributes {
        language: "en-US".to_owned(),
        ..Attributes::default()
    };
    let mut degree = 1.0_f32;
    let lowered = description.to_lowercase();
    for word in lowered
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\''))
        .map(|w| w.trim_matches(|c| c == '-' || c == '\''))
        .filter(|w| !w.is_empty())
    {
        let Some((_, says)) = WORDS.iter().find(|(w, _)| *w == word) else {
            if !SMALL.contains(&word) && !out.ignored.iter().any(|i| i == word) {
                out.ignored.push(word.to_owned());
            }
            continue;
        };
        if let Says::Degree(d) = says {
            degree = *d;
            continue;
        }
        apply(&mut out, *says, degree);
        degree = 1.0;
        if !out.understood.iter().any(|u| u == word) {
            out.understood.push(word.to_owned());
        }
    }
    for x in [&mut out.pitch, &mut out.pace, &mut out.brightness] {
        *x = x.clamp(-1.0, 1.0);
    }
    out.rough = out.rough.clamp(0.0, 1.0);
    out
}

fn apply(out: &mut Attributes, says: Says, degree: f32) {
    match says {
        Says::Gender(g) => out.gender = Some(g.to_owned()),
        Says::Age(a) => out.age = Some(a.to_owned()),
        Says::Person(a, g) => {
            out.age = Some(a.to_owned());
            out.gender = Some(g.to_owned());
        }
        Says::Language(l) => out.language = l.to_owned(),
        Says::Pitch(x) => out.pitch += x * degree,
        Says::Pace(x) => out.pace += x * degree,
        Says::Bright(x) => out.brightness += x * degree,
        Says::Rough(x) => out.rough += x * degree,
        Says::Both(a, b) => {
            apply(out, *a, degree);
            apply(out, *b, degree);
        }
        Says::Degree(_) => {}
    }
}

/// Every word the designer reads, for `details.understood`.
pub fn vocabulary() -> Vec<&'static str> {
    WORDS
        .iter()
        .filter(|(_, s)| !matches!(s, Says::Degree(_)))
        .map(|(w, _)| *w)
        .collect()
}

/// A validated design request: the job's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DesignRequest {
    pub description: String,
    pub attributes: Attributes,
    /// What the previews say.
    pub text: String,
    pub seed: u64,
}

impl DesignRequest {
    /// Validates a body against the voices installed: the description is
    /// read (nothing understood: 422 `unsupported_prompt` with
    /// `details.understood`), and a voice table of its language must be
    /// installed to blend (422 naming `description` otherwise).
    pub fn parse(body: DesignBody, voices: &dyn Voices) -> Result<Self, ApiError> {
        let description = mediagen_core::params::trim_spaces(&body.description).to_owned();
        let most = Bound::of::<DesignBody>("description").max_length();
        if description.is_empty() || description.chars().count() > most {
            return Err(ApiError::invalid_parameter(
                "description",
                format!("must be 1 to {most} characters, not only spaces"),
            ));
        }
        let attributes = read(&description);
        if attributes.understood.is_empty() {
            return Err(ApiError::new(ErrorCode::UnsupportedPrompt)
                .with_message(
                    "Nothing in the description says what the voice sounds like; `details.understood` lists the words the designer reads.",
                )
                .with_detail("parameter", "description")
                .with_detail("understood", vocabulary())
                .with_detail("ignoredTerms", attributes.ignored.clone()));
        }
        let language = &attributes.language;
        let designable = voices.voices().iter().any(|v| {
            v.engine == mediagen_core::voice::STYLED_ENGINE && speaks(&v.language, language)
        });
        if !designable {
            return Err(ApiError::unprocessable(
                "description",
                format!("no voice of `{language}` is installed to design from"),
            ));
        }
        let most = Bound::of::<DesignBody>("text").max_length();
        let text = match body.text.as_deref().map(mediagen_core::params::trim_spaces) {
            None => crate::tts::preview_text(language).to_owned(),
            Some(t) if t.is_empty() || t.chars().count() > most => {
                return Err(ApiError::invalid_parameter(
                    "text",
                    format!("must be 1 to {most} characters, not only spaces"),
                ))
            }
            // Read as words: markup (SSML) is not a preview's to carry.
            Some(t) if t.starts_with('<') => {
                return Err(ApiError::invalid_parameter(
                    "text",
                    "must be plain text (SSML is read by text to speech, not here)",
                ))
            }
            Some(t) => t.to_owned(),
        };
        Ok(Self {
            description,
            attributes,
            text,
            seed: body.seed.unwrap_or_else(|| rand::random::<u32>().into()),
        })
    }
}

/// Whether a voice of BCP-47 `voice` speaks `wanted`: the same language,
/// and the same region where `wanted` names one.
pub fn speaks(voice: &str, wanted: &str) -> bool {
    let (v, w) = (voice.to_ascii_lowercase(), wanted.to_ascii_lowercase());
    if w.contains('-') {
        v == w
    } else {
        v.split('-').next() == Some(w.as_str())
    }
}

impl JobRequest for DesignRequest {
    const KIND: JobKind = JobKind::VoiceDesign;

    /// Priced on the speech it makes: each preview says the text.
    fn units(&self) -> f64 {
        (PREVIEWS * mediagen_core::ssml::spoken_characters(&self.text)) as f64
    }

    fn media_seconds(&self) -> f64 {
        0.0
    }
}

/// A preview of a design: the `n`th voice its job made
/// (`design_<the job's id><n>`), kept by `POST /v1/voices {designId}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesignId {
    pub job: JobId,
    pub index: usize,
}

impl DesignId {
    pub const PREFIX: &'static str = "design";

    /// The id as the API writes it.
    pub fn as_string(&self) -> String {
        let job: &str = self.job.as_ref();
        let body = job.strip_prefix("job_").unwrap_or(job);
        format!("{}_{body}{}", Self::PREFIX, self.index)
    }

    /// The design a client names: 404 `not_found` for anything this
    /// service did not make.
    pub fn parse(id: &str) -> Result<Self, ApiError> {
        let not_found = || ApiError::not_found("design", id);
        let rest = id
            .strip_prefix("design_")
            .filter(|r| r.len() == 21 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
            .ok_or_else(not_found)?;
        let (body, index) = rest.split_at(20);
        let index: usize = index.parse().map_err(|_| not_found())?;
        let job = JobId::parse(&format!("job_{body}")).ok_or_else(not_found)?;
        if index >= PREVIEWS {
            return Err(not_found());
        }
        Ok(Self { job, index })
    }
}

impl DesignId {
    /// Where its table is kept: beside its job's files
    /// (`jobs/<job>/…`, swept with the job).
    pub fn styles_key(&self) -> String {
        format!("jobs/{}/design-{}.styles", self.job, self.index)
    }

    /// The name of its preview among its job's files.
    pub fn preview_name(&self) -> String {
        format!("design-{}.mp3", self.index)
    }
}

/// The body of `POST /v1/voices` that keeps a designed voice.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = VoiceFromDesign)]
pub struct KeepBody {
    /// A preview's `designId` from `POST /v1/voices/design` (of this
    /// account; kept while its job is).
    #[schema(min_length = 1)]
    pub design_id: String,
    /// 1–100 characters (not only spaces).
    #[schema(min_length = 1, max_length = 100, pattern = "\\S")]
    pub name: String,
    /// At most 500 characters (default: the design's description).
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// At most 20 labels of at most 40 characters.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub labels: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_become_attributes() {
        let a = read("A calm older man with a deep British voice, speaking slowly");
        assert_eq!(a.gender.as_deref(), Some("male"));
        assert_eq!(a.age.as_deref(), Some("old"));
        assert_eq!(a.language, "en-GB");
        assert!(a.pitch < -0.5, "{a:?}");
        assert!(a.pace < -0.8, "{a:?}");
        assert!(a.brightness < 0.0, "{a:?}");
        assert!(a.ignored.is_empty(), "{a:?}");
        let b = read("a very high-pitched young woman who talks quickly, bright and crisp");
        assert_eq!(
            (b.gender.as_deref(), b.age.as_deref()),
            (Some("female"), Some("young"))
        );
        assert!(
            b.pitch >= 1.0 && b.pace > 0.5 && b.brightness > 0.5,
            "{b:?}"
        );
        assert_eq!(b.language, "en-US");
        let c = read("Un narrateur FRENCH, husky and zorgly");
        assert_eq!(c.language, "fr");
        assert!(c.rough > 0.5);
        assert_eq!(c.ignored, ["un", "narrateur", "zorgly"]);
        assert_eq!(c.understood, ["french", "husky"]);
    }

    #[test]
    fn design_ids_name_their_job_and_preview() {
        let id = DesignId {
            job: JobId::random(),
            index: 2,
        };
        let text = id.as_string();
        assert!(text.starts_with("design_") && text.len() == 28, "{text}");
        assert_eq!(DesignId::parse(&text).unwrap(), id);
        for bad in [
            "design_",
            "voice_abc",
            &text.replace('2', "3"),
            &format!("{text}0"),
            "design_../../etc/passwd0000000",
        ] {
            assert!(DesignId::parse(bad).is_err(), "{bad}");
        }
    }
}
