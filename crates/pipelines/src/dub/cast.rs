//! Who says each line of a dub, and in which voice: one voice for all
//! (a voice the request names), or, in `auto` and `clone` modes, one per
//! speaker the diarization finds in the original: the catalog voice of the
//! target language nearest to that speaker in pitch, formants and speaker
//! embedding (a different one for each, where the language has enough), or
//! that voice converted toward the speaker's own profile (`clone`; a neural
//! clone of the speaker replaces it where one can be made, see `clones`).

use mediagen_core::voice::{styled_speaker, VoiceProfile};
use mediagen_core::ErrorCode;
use mediagen_jobs::dub::{DubRequest, DubVoice};
use mediagen_jobs::voice_clone::NeuralStyle;
use mediagen_media::pcm::PcmFile;
use mediagen_speakers::diarize::Diarization;
use mediagen_speakers::encoder::SpeakerEncoder;
use mediagen_speech::tts::{Likeness, TtsCatalog};
use mediagen_speech::voice::{analyse, RATE};
use mediagen_worker::{JobContext, JobFailure};
use serde::{Deserialize, Serialize};

use crate::respeak::{Line, Toward, Voicing};
use crate::tts::tts_failure;
use crate::tts::{read_styles, Styled};

/// One speaker's part in a dub.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// `speaker_0`, … when the original's speakers were told apart.
    pub id: Option<String>,
    /// The catalog voice that speaks the part.
    pub voice_id: String,
    /// The profile that voice is converted toward (`clone` mode, or a
    /// WORLD clone named by the request).
    pub toward: Option<VoiceProfile>,
    /// A neural clone's style table spoken in that voice's place (its
    /// language and phonemes, the clone's sound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neural: Option<NeuralStyle>,
}

impl Part {
    /// How the part sounds like a clone: `neural` (a clone's style table),
    /// `world` (converted toward a profile), or `None` (a catalog voice as
    /// it is).
    pub fn clone_kind(&self) -> Option<&'static str> {
        match (&self.neural, &self.toward) {
            (Some(_), _) => Some("neural"),
            (None, Some(_)) => Some("world"),
            (None, None) => None,
        }
    }
}

/// The parts, and which one says each line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cast {
    pub parts: Vec<Part>,
    /// For each line, its part.
    pub who: Vec<usize>,
}

impl Cast {
    /// One part saying every line.
    pub(super) fn single(
        voice_id: String,
        toward: Option<VoiceProfile>,
        neural: Option<NeuralStyle>,
        lines: usize,
    ) -> Self {
        Cast {
            parts: vec![Part {
                id: None,
                voice_id,
                toward,
                neural,
            }],
            who: vec![0; lines],
        }
    }

    /// Each part's neural style table, read from the blob store (`None`
    /// for a part spoken by a catalog voice or a WORLD clone).
    pub async fn styles(&self, ctx: &JobContext) -> Result<Vec<Option<Vec<f32>>>, JobFailure> {
        let mut out = Vec::with_capacity(self.parts.len());
        for p in &self.parts {
            out.push(read_styles(ctx, p.neural.as_ref()).await?);
        }
        Ok(out)
    }

    /// For each part, the profile of the catalog voice that is converted
    /// toward another (`None` for a part spoken as it is).
    pub fn sources(&self, tts: &TtsCatalog) -> Result<Vec<Option<VoiceProfile>>, JobFailure> {
        self.parts
            .iter()
            .map(|p| match &p.toward {
                Some(_) => tts.profile(&p.voice_id).map(Some).map_err(tts_failure),
                None => Ok(None),
            })
            .collect()
    }

    /// How each part speaks, given its [`Cast::sources`] and
    /// [`Cast::styles`].
    pub fn voicings<'a>(
        &'a self,
        sources: &'a [Option<VoiceProfile>],
        styles: &'a [Option<Vec<f32>>],
    ) -> Vec<Voicing<'a>> {
        self.parts
            .iter()
            .zip(sources)
            .zip(styles)
            .map(|((p, source), table)| Voicing {
                speaker: &p.voice_id,
                toward: match (&p.toward, source) {
                    (Some(target), Some(source)) => Some(Toward { target, source }),
                    _ => None,
                },
                styled: match (&p.neural, table) {
                    (Some(n), Some(styles)) => Some(Styled::of(styles, n)),
                    _ => None,
                },
            })
            .collect()
    }

    /// Seconds of the original each part's lines take.
    pub fn seconds(&self, lines: &[Line]) -> Vec<f64> {
        let mut out = vec![0.0; self.parts.len()];
        for (line, &k) in lines.iter().zip(&self.who) {
            out[k] += (line.end - line.start).max(0.0);
        }
        out
    }
}

/// Seconds of a speaker's lines their profile is measured on: pitch and
/// formant medians settle well within it.
const PROFILE_SECONDS: f64 = 15.0;

/// The speech of `lines` in `original` (at [`RATE`]), one piece a line,
/// until there are `max_seconds` of it.
pub(super) fn speech_of<'a>(
    original: &PcmFile,
    lines: impl Iterator<Item = &'a Line>,
    max_seconds: f64,
) -> Vec<Vec<f32>> {
    let at = |t: f64| (t.max(0.0) * f64::from(RATE)) as usize;
    let (mut out, mut total) = (Vec::new(), 0);
    for l in lines {
        let (a, b) = (at(l.start), at(l.end));
        let Ok(piece) = original.read_at(a, b.saturating_sub(a)) else {
            continue;
        };
        total += piece.len();
        out.push(piece);
        if total as f64 >= max_seconds * f64::from(RATE) {
            break;
        }
    }
    out
}

/// Part `k`'s lines (`who` says each line's part).
pub(super) fn lines_of<'a>(
    lines: &'a [Line],
    who: &'a [usize],
    k: usize,
) -> impl Iterator<Item = &'a Line> {
    lines
        .iter()
        .zip(who)
        .filter(move |(_, &w)| w == k)
        .map(|(l, _)| l)
}

/// The profile of the speech of `lines` in `original` (at [`RATE`]),
/// measured on up to [`PROFILE_SECONDS`] of it.
fn profile_of<'a>(
    original: &PcmFile,
    lines: impl Iterator<Item = &'a Line>,
) -> Option<VoiceProfile> {
    analyse(&[speech_of(original, lines, PROFILE_SECONDS).concat()]).ok()
}

/// Whether the request lets the dub give each speaker a voice of their own
/// (`auto` and `clone` modes): the original is then diarized.
pub fn by_speaker(req: &DubRequest) -> bool {
    matches!(req.voice, DubVoice::Auto | DubVoice::Clone)
}

/// Casts the dub's `lines`: `original` at [`RATE`] is measured, and
/// `speakers` (the original's diarization, when it was made) says who says
/// each line; with the `encoder` that made it, a speaker's voice is also
/// matched by how it sounds to the encoder.
pub fn cast(
    tts: &TtsCatalog,
    req: &DubRequest,
    lines: &[Line],
    original: &PcmFile,
    speakers: Option<&Diarization>,
    encoder: Option<&SpeakerEncoder>,
) -> Result<Cast, JobFailure> {
    let target = &req.target_language;
    let no_voice = || {
        JobFailure::abort(
            ErrorCode::VoiceNotFound,
            format!("no voice speaks `{target}`"),
        )
    };
    let clone = match &req.voice {
        DubVoice::Voice {
            voice_id,
            cloned: None,
        } => return Ok(Cast::single(voice_id.clone(), None, None, lines.len())),
        DubVoice::Voice {
            cloned: Some(c), ..
        } => {
            // A neural clone speaks the target language with its own table
            // where Kokoro speaks it; else (and a WORLD clone) the closest
            // voice of the target converted toward its profile.
            let styled = styled_speaker(tts.voices(), &c.profile.gender, target);
            if let (Some(neural), Some(voice)) = (&c.neural, styled) {
                return Ok(Cast::single(
                    voice.id.clone(),
                    None,
                    Some(neural.clone()),
                    lines.len(),
                ));
            }
            let voice = tts.closest(&c.profile, target).ok_or_else(no_voice)?;
            return Ok(Cast::single(
                voice.id.clone(),
                Some(c.profile.clone()),
                None,
                lines.len(),
            ));
        }
        DubVoice::Auto => false,
        DubVoice::Clone => true,
    };
    // Who says each line: the speaker who speaks most during it.
    let who: Vec<usize> = match speakers {
        Some(d) if d.voices.len() > 1 => lines
            .iter()
            .map(|l| {
                let at = |t: f64| (t * mediagen_speakers::RATE as f64) as usize;
                d.speaker_of(at(l.start)..at(l.end).max(at(l.start) + 1))
                    .unwrap_or(0)
            })
            .collect(),
        _ => vec![0; lines.len()],
    };
    // Speakers numbered by their first line (one with no line has no part).
    let mut order: Vec<usize> = Vec::new();
    for &k in &who {
        if !order.contains(&k) {
            order.push(k);
        }
    }
    let who: Vec<usize> = who
        .iter()
        .map(|k| order.iter().position(|o| o == k).unwrap_or(0))
        .collect();
    let many = order.len() > 1;
    let mut parts: Vec<Part> = Vec::with_capacity(order.len());
    for (k, &speaker) in order.iter().enumerate() {
        let profile = profile_of(original, lines_of(lines, &who, k));
        let taken: Vec<String> = parts.iter().map(|p| p.voice_id.clone()).collect();
        // How the speaker sounds to the encoder: the diarization's centroid.
        let print = match (speakers, encoder) {
            (Some(d), Some(encoder)) => d.voices.get(speaker).map(|e| (e, encoder)),
            _ => None,
        };
        let voice = match &profile {
            Some(profile) => tts
                .closest_except(&Likeness { profile, print }, target, &taken)
                .map(|v| v.id.clone()),
            None if clone => {
                return Err(JobFailure::abort(
                    ErrorCode::NoSpeech,
                    "the speaker's voice could not be measured",
                ))
            }
            None => tts
                .voices()
                .iter()
                .find(|v| {
                    !taken.contains(&v.id)
                        && v.languages
                            .iter()
                            .any(|l| l.to_ascii_lowercase().starts_with(target.as_str()))
                })
                .map(|v| v.id.clone()),
        };
        parts.push(Part {
            id: many.then(|| format!("speaker_{k}")),
            voice_id: voice.ok_or_else(no_voice)?,
            toward: if clone { profile } else { None },
            neural: None,
        });
    }
    Ok(Cast { parts, who })
}
