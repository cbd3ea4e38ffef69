//! Job kinds: every kind of work a job does, defined once with its name
//! (what the database, the API and `worker_kinds` call it), the unit it is
//! priced in and its default price, and its time limit. A kind added here
//! without a price or a limit does not compile; the `costs` table of the
//! configuration overrides the prices.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The kind of work a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobKind {
    Tts,
    Stt,
    /// A live transcription session (a WebSocket): its job holds a worker
    /// slot while the session lasts.
    SttRealtime,
    /// Speech from streamed text (a WebSocket): its job holds a worker
    /// slot while the session lasts.
    TtsRealtime,
    VoiceChange,
    VoiceClone,
    /// Three voices made from a description (previews to keep).
    VoiceDesign,
    Dubbing,
    DubbingEdit,
    VideoTrim,
    AvatarExpand,
    AvatarCreate,
    Sound,
    Image,
    /// Sleeps: exists only when the server runs with test jobs on.
    TestSleep,
}

/// What a kind charges: credits per unit by default, and what a unit is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub credits: f64,
    /// What is counted, e.g. `character` or `second of sound`.
    pub unit: &'static str,
}

impl Price {
    const fn of(credits: f64, unit: &'static str) -> Self {
        Self { credits, unit }
    }
}

/// How long one attempt of a job may run: `seconds`, plus
/// `per_media_second` for each second of its input media. The
/// configuration's `job_timeout_seconds` and `timeout_per_media_second` cap
/// both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeLimit {
    pub seconds: f64,
    pub per_media_second: f64,
}

impl TimeLimit {
    const fn of(seconds: f64, per_media_second: f64) -> Self {
        Self {
            seconds,
            per_media_second,
        }
    }
}

impl JobKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [JobKind; 15] = [
        JobKind::Tts,
        JobKind::Stt,
        JobKind::SttRealtime,
        JobKind::TtsRealtime,
        JobKind::VoiceChange,
        JobKind::VoiceClone,
        JobKind::VoiceDesign,
        JobKind::Dubbing,
        JobKind::DubbingEdit,
        JobKind::VideoTrim,
        JobKind::AvatarExpand,
        JobKind::AvatarCreate,
        JobKind::Sound,
        JobKind::Image,
        JobKind::TestSleep,
    ];

    /// The name the database, the API and the configuration use.
    pub const fn name(self) -> &'static str {
        match self {
            JobKind::Tts => "tts",
            JobKind::Stt => "stt",
            JobKind::SttRealtime => "stt.realtime",
            JobKind::TtsRealtime => "tts.realtime",
            JobKind::VoiceChange => "voice.change",
            JobKind::VoiceClone => "voice.clone",
            JobKind::VoiceDesign => "voice.design",
            JobKind::Dubbing => "dubbing",
            JobKind::DubbingEdit => "dubbing.edit",
            JobKind::VideoTrim => "video.trim",
            JobKind::AvatarExpand => "avatar.expand",
            JobKind::AvatarCreate => "avatar.create",
            JobKind::Sound => "sound",
            JobKind::Image => "image",
            JobKind::TestSleep => "test.sleep",
        }
    }

    /// The default price (docs/billing.md explains each unit).
    pub const fn price(self) -> Price {
        match self {
            JobKind::Tts => Price::of(1.0, "character"),
            JobKind::Stt => Price::of(1.0, "second of sound"),
            JobKind::SttRealtime => Price::of(1.0, "second of sound received"),
            JobKind::TtsRealtime => Price::of(1.0, "character spoken"),
            JobKind::VoiceChange => Price::of(1.0, "second of sound"),
            JobKind::VoiceClone => Price::of(1.0, "second of a clone's work"),
            JobKind::VoiceDesign => Price::of(1.0, "character spoken in a preview"),
            JobKind::Dubbing => Price::of(2.0, "second dubbed"),
            JobKind::DubbingEdit => Price::of(2.0, "second spoken again"),
            JobKind::VideoTrim => Price::of(1.0, "second cut"),
            JobKind::AvatarExpand => Price::of(1.0, "second of 720p30 video"),
            // Making an avatar from an upload: its probe, a frame decoded
            // for the poster. Every job that uses a core costs something.
            JobKind::AvatarCreate => Price::of(1.0, "avatar"),
            JobKind::Sound => Price::of(1.0, "second of sound"),
            JobKind::Image => Price::of(1.0, "image per started megapixel"),
            JobKind::TestSleep => Price::of(1.0, "unit"),
        }
    }

    /// The time limit of one attempt.
    pub const fn time_limit(self) -> TimeLimit {
        match self {
            // Text only: its length is bounded by the request's limits.
            JobKind::Tts | JobKind::Image => TimeLimit::of(1800.0, 0.0),
            // At most `best` quality's 480 s of search, and the samples'
            // analysis.
            JobKind::VoiceClone => TimeLimit::of(900.0, 2.0),
            // Three previews, and the stock voices measured once.
            JobKind::VoiceDesign => TimeLimit::of(600.0, 0.0),
            // A session's longest life (its idle timeout is shorter).
            JobKind::SttRealtime | JobKind::TtsRealtime => TimeLimit::of(3600.0, 0.0),
            JobKind::Stt
            | JobKind::AvatarCreate
            | JobKind::VoiceChange
            | JobKind::Dubbing
            | JobKind::DubbingEdit
            | JobKind::VideoTrim
            | JobKind::AvatarExpand
            | JobKind::Sound
            | JobKind::TestSleep => TimeLimit::of(1800.0, 2.0),
        }
    }

    /// Whether its jobs are live sessions: claimed by a worker's session
    /// slots (not its batch slots) and joined by the API over a socket.
    pub const fn is_session(self) -> bool {
        matches!(self, JobKind::SttRealtime | JobKind::TtsRealtime)
    }

    /// The kinds of live sessions.
    pub fn sessions() -> impl Iterator<Item = JobKind> {
        JobKind::ALL.into_iter().filter(|k| k.is_session())
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<JobKind> {
        JobKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Its row of docs/billing.md's table of kinds.
    pub fn doc_row(self) -> String {
        let price = self.price();
        let credits = if price.credits == 0.0 {
            "free".to_owned()
        } else {
            format!("{}", price.credits)
        };
        let limit = self.time_limit();
        let media = if limit.per_media_second > 0.0 {
            format!(" + {} s a second of input", limit.per_media_second)
        } else {
            String::new()
        };
        format!(
            "| `{}` | {} | {credits} | {} s{media} |",
            self.name(),
            price.unit,
            limit.seconds
        )
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for JobKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobKind::parse(s).ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A request for work: the payload of one kind of job. Its kind, and so
/// its price per unit and time limit, come from its type, and it counts its
/// own units and media seconds: the API submits it as that kind for those
/// units, and the pipeline that runs the kind is handed it parsed.
pub trait JobRequest: Serialize + serde::de::DeserializeOwned + Send + 'static {
    const KIND: JobKind;

    /// The units it is priced on, in its kind's [`Price::unit`] (held
    /// before the work, settled on what was done).
    fn units(&self) -> f64;

    /// Seconds of input media: its time limit grows by
    /// [`TimeLimit::per_media_second`] for each.
    fn media_seconds(&self) -> f64;
}

/// A name that is no job kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job kind `{0}`")]
pub struct UnknownKind(pub String);

impl Serialize for JobKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for JobKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        JobKind::parse(&name).ok_or_else(|| serde::de::Error::custom(UnknownKind(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_name() {
        for kind in JobKind::ALL {
            assert_eq!(JobKind::parse(kind.name()), Some(kind));
            assert_eq!(kind.name().parse::<JobKind>(), Ok(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.name())
            );
        }
        let mut names: Vec<_> = JobKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), JobKind::ALL.len());
        assert!(JobKind::parse("video").is_none());
        assert!(serde_json::from_value::<JobKind>(serde_json::json!("ttS")).is_err());
    }

    #[test]
    fn docs_list_every_kind_with_its_price_and_limit() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/billing.md"
        ))
        .unwrap();
        for kind in JobKind::ALL {
            let row = kind.doc_row();
            assert!(
                doc.lines().any(|l| l == row),
                "docs/billing.md lacks: {row}"
            );
        }
        assert_eq!(
            JobKind::AvatarCreate.doc_row(),
            "| `avatar.create` | avatar | 1 | 1800 s + 2 s a second of input |"
        );
    }
}
