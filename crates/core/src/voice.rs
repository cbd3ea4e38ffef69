//! Voices as the API and the engines both know them: a catalog voice's
//! listing, and the measured profile of a speaker (a cloned voice).

/// A voice as the catalog lists it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceInfo {
    /// Stable opaque id (20 characters), derived from engine and key.
    pub id: String,
    /// The engine's own name for the voice.
    #[serde(skip)]
    pub key: String,
    pub name: String,
    /// BCP-47 tag, e.g. `en-US`.
    pub language: String,
    /// Every language the voice speaks (BCP-47).
    pub languages: Vec<String>,
    /// `male`, `female` or `neutral`.
    pub gender: String,
    pub accent: Option<String>,
    pub engine: &'static str,
    /// `high` (neural, best), `medium` (neural, fast), `low` (formant).
    pub quality: &'static str,
    /// The engine's native rate, Hz.
    pub sample_rate: u32,
    pub description: String,
    /// The espeak-ng voice used for text normalisation and phonemes.
    #[serde(skip)]
    pub espeak_voice: String,
}

/// What a converter needs to know of a speaker.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceProfile {
    /// Median pitch of the voiced frames, Hz.
    pub pitch_median: f64,
    /// Standard deviation of the natural log of the pitch (intonation range).
    pub pitch_spread: f64,
    /// Spectral centroid (0–5 kHz) of the voiced frames' envelopes, Hz.
    pub centroid: f64,
    /// Syllable-like loudness peaks per second of speech.
    pub speaking_rate: f64,
    /// `female` or `male`, from the pitch (a guess, as every such estimate).
    pub gender: String,
    /// Seconds of audio analysed.
    pub seconds: f64,
}

/// The rate voices are analysed and converted at: a cloned voice speaks at it.
pub const CONVERSION_RATE: u32 = 24_000;

/// How many catalog voices [`candidates`] offers (and are measured to
/// choose the closest one).
pub const CANDIDATES: usize = 4;

/// The engine whose voices are style tables a neural clone takes the place
/// of (Kokoro).
pub const STYLED_ENGINE: &str = "kokoro";

/// The catalog voice whose language and phonemes a neural clone (a style
/// table of [`STYLED_ENGINE`]) speaks `language` (BCP-47 prefix) with:
/// the first of [`candidates`] of that engine, of `gender` where the
/// language has one. `None` when no voice of the engine speaks it.
pub fn styled_speaker<'a>(
    voices: &'a [VoiceInfo],
    gender: &str,
    language: &str,
) -> Option<&'a VoiceInfo> {
    let styled = voices.iter().filter(|v| v.engine == STYLED_ENGINE);
    candidates(styled, gender, language).first().copied()
}

/// The languages a neural clone speaks: every one a voice of
/// [`STYLED_ENGINE`] speaks (ISO 639-1, in order).
pub fn styled_languages(voices: &[VoiceInfo]) -> Vec<String> {
    let mut out: Vec<String> = voices
        .iter()
        .filter(|v| v.engine == STYLED_ENGINE)
        .flat_map(|v| v.languages.iter())
        .filter_map(|l| l.get(..2).map(str::to_ascii_lowercase))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The catalog voices that may speak for a voice of `gender` in
/// `language` (BCP-47 prefix): the best-quality voices of the language,
/// of the same gender where there are any, the first few by name (so
/// the choice is stable), at most [`CANDIDATES`]. Nothing is measured: cheap.
pub fn candidates<'a>(
    voices: impl IntoIterator<Item = &'a VoiceInfo>,
    gender: &str,
    language: &str,
) -> Vec<&'a VoiceInfo> {
    let prefix = language.get(..2).unwrap_or(language).to_ascii_lowercase();
    let speaks = |v: &&VoiceInfo| {
        v.languages
            .iter()
            .any(|l| l.to_ascii_lowercase().starts_with(&prefix))
    };
    let rank = |q: &str| match q {
        "high" => 0,
        "medium" => 1,
        _ => 2,
    };
    let voices: Vec<&VoiceInfo> = voices.into_iter().collect();
    let Some(best) = voices
        .iter()
        .copied()
        .filter(speaks)
        .map(|v| rank(v.quality))
        .min()
    else {
        return Vec::new();
    };
    let mut tier: Vec<&VoiceInfo> = voices
        .into_iter()
        .filter(speaks)
        .filter(|v| rank(v.quality) == best)
        .collect();
    if tier.iter().any(|v| v.gender == gender) {
        tier.retain(|v| v.gender == gender);
    }
    tier.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    tier.truncate(CANDIDATES);
    tier
}
