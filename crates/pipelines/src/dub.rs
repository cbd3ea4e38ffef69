//! `dubbing`: speech in audio or video re-spoken in another language.
//!
//! Stages (the job's `progress` moves through them): transcribe (0–30),
//! translate (30–40), synthesize and time-fit each line (40–85), mix over
//! the original with its speech ducked (85–90), mux or encode and store the
//! subtitles (90–100).

use mediagen_core::time::round_ms;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::limits::DUBBING;
use mediagen_core::{ApiError, ErrorCode};
use mediagen_engines::media::demuxer;
use mediagen_engines::pcm::{self, PcmFile};
use mediagen_engines::stt::{
    languages as stt_languages, transcribe_stream, Segment, SttCatalog, SttOptions, Transcript,
};
use mediagen_engines::translate::{TranslateError, Translator};
use mediagen_engines::tts::{TtsCatalog, TtsError};
use mediagen_engines::video::{inspect, VideoInfo};
use mediagen_engines::voice::{analyse, VoiceProfile, RATE};
use mediagen_engines::AudioFormat;
use mediagen_worker::{JobContext, JobFailure, Pipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::audio_output;
use crate::output::{deliver, Delivered};
use crate::respeak::{mix_lines, speak_line, speak_lines, Ducker, Fit, Line, Spoken, Toward};
use crate::stt::{srt, stt_failure, vtt};
use crate::tts::ClonedVoice;

/// How a pair is translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// Text translation by the translator (possibly through a pivot).
    Apertium,
    /// Whisper's translate task, from the audio (any language → English).
    Whisper,
}

/// A language pair that works end to end: recognizer × translator × voice.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pair {
    pub source: String,
    pub target: String,
    pub translator: Via,
}

/// The pairs this server can dub.
pub struct DubLanguages {
    pub pairs: Vec<Pair>,
}

impl DubLanguages {
    /// Every pair whose source the recognizer hears, whose translation is
    /// installed (or is whisper's, into English) and whose target a voice
    /// speaks.
    pub fn new(stt: &SttCatalog, tts: &TtsCatalog, translator: &dyn Translator) -> Self {
        let spoken = |lang: &str| {
            tts.voices().iter().any(|v| {
                v.languages
                    .iter()
                    .any(|l| l.to_ascii_lowercase().starts_with(lang))
            })
        };
        let multilingual = stt.model(None).is_some_and(|m| m.multilingual());
        let heard = |lang: &str| stt.model(None).is_some() && (multilingual || lang == "en");
        // Text translation where a route is installed (whisper base's
        // translate task drifts from what was said); whisper's otherwise.
        let mut pairs: Vec<Pair> = translator
            .pairs()
            .into_iter()
            .filter(|(source, target)| heard(source) && spoken(target))
            .map(|(source, target)| Pair {
                source,
                target,
                translator: Via::Apertium,
            })
            .collect();
        if multilingual && spoken("en") {
            for source in stt_languages().into_iter().filter(|l| *l != "en") {
                if !pairs.iter().any(|p| p.source == source && p.target == "en") {
                    pairs.push(Pair {
                        source: source.to_owned(),
                        target: "en".to_owned(),
                        translator: Via::Whisper,
                    });
                }
            }
        }
        pairs.sort_by(|a, b| (&a.source, &a.target).cmp(&(&b.source, &b.target)));
        Self { pairs }
    }

    pub fn find(&self, source: &str, target: &str) -> Option<&Pair> {
        self.pairs
            .iter()
            .find(|p| p.source == source && p.target == target)
    }

    pub fn targets(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self.pairs.iter().map(|p| p.target.as_str()).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// 422 naming the pair and listing what works.
    pub fn unsupported(&self, source: Option<&str>, target: &str) -> ApiError {
        let sources: Vec<&str> = self
            .pairs
            .iter()
            .filter(|p| p.target == target)
            .map(|p| p.source.as_str())
            .collect();
        let message = match source {
            Some(s) if s == target => format!("The file is already in `{target}`; use the voice changer's revoice mode to re-speak it."),
            Some(s) => format!("Dubbing from `{s}` into `{target}` is not supported. Supported pairs: GET /v1/dubbing/languages."),
            None => format!("Dubbing into `{target}` is not supported. Supported pairs: GET /v1/dubbing/languages."),
        };
        ApiError::new(ErrorCode::UnprocessableEntity)
            .with_message(message)
            .with_detail("parameter", "targetLanguage")
            .with_detail("sourceLanguage", source)
            .with_detail("targetLanguage", target)
            .with_detail("supportedSources", sources)
            .with_detail("supportedTargets", self.targets())
    }
}

/// Who speaks the dub.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum DubVoice {
    /// The catalog voice of the target language closest to the speaker.
    Auto,
    /// That voice, converted toward the original speaker's voice profile.
    Clone,
    /// A given voice (catalog or the account's cloned voice).
    #[serde(rename_all = "camelCase")]
    Voice {
        voice_id: String,
        cloned: Option<ClonedVoice>,
    },
}

/// A validated dubbing request (also the job's payload).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubRequest {
    pub input: String,
    pub file_id: String,
    /// ISO 639-1, or `None` to detect.
    pub source_language: Option<String>,
    pub target_language: String,
    pub voice: DubVoice,
    pub keep_background: bool,
    pub start_time: Option<f64>,
    pub end_time: Option<f64>,
    pub max_speedup: f64,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

/// The options of a dubbing request besides the input.
#[derive(Debug, Clone, PartialEq)]
pub struct DubOptions {
    pub source_language: Option<String>,
    pub target_language: String,
    /// `voiceId` when given (resolved by the caller).
    pub voice_id: Option<String>,
    /// `clone` asked instead of `auto`.
    pub clone: bool,
    pub keep_background: bool,
    pub start_time: Option<f64>,
    pub end_time: Option<f64>,
    pub max_speedup: f64,
    pub format: AudioFormat,
    pub sample_rate: u32,
}

fn number(fields: &HashMap<String, String>, key: &str) -> Result<Option<f64>, ApiError> {
    fields
        .get(key)
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| ApiError::invalid_parameter(key, "must be a number"))
        })
        .transpose()
}

fn language(fields: &HashMap<String, String>, key: &str) -> Result<Option<String>, ApiError> {
    match fields.get(key).map(|l| l.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(l) if l.is_empty() || l == "auto" => Ok(None),
        Some(l) => {
            let code = l.split(['-', '_']).next().unwrap_or_default().to_owned();
            if code.len() == 2 && code.chars().all(|c| c.is_ascii_lowercase()) {
                Ok(Some(code))
            } else {
                Err(ApiError::invalid_parameter(
                    key,
                    "must be an ISO 639-1 code such as en or es",
                ))
            }
        }
    }
}

impl DubOptions {
    /// Validates the options (JSON fields or multipart text parts, as
    /// strings) against the supported pairs. Errors name the parameter.
    pub fn parse(
        fields: &HashMap<String, String>,
        languages: &DubLanguages,
        duration: f64,
    ) -> Result<Self, ApiError> {
        const KNOWN: [&str; 12] = [
            "targetLanguage",
            "sourceLanguage",
            "voiceId",
            "voiceMode",
            "keepBackground",
            "startTime",
            "endTime",
            "maxSpeedup",
            "format",
            "sampleRate",
            "fileId",
            "dryRun",
        ];
        if let Some(key) = fields.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ApiError::invalid_parameter(key, "unknown parameter"));
        }
        let target_language = language(fields, "targetLanguage")?
            .ok_or_else(|| ApiError::invalid_parameter("targetLanguage", "required"))?;
        let source_language = language(fields, "sourceLanguage")?;
        match &source_language {
            Some(s) if languages.find(s, &target_language).is_none() => {
                return Err(languages.unsupported(Some(s), &target_language))
            }
            None if !languages.targets().contains(&target_language.as_str()) => {
                return Err(languages.unsupported(None, &target_language))
            }
            _ => {}
        }
        let voice_id = fields
            .get("voiceId")
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty());
        let clone = match fields.get("voiceMode").map(String::as_str) {
            None | Some("auto") => false,
            Some("clone") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "voiceMode",
                    "must be auto or clone",
                ))
            }
        };
        if clone && voice_id.is_some() {
            return Err(ApiError::invalid_parameter(
                "voiceMode",
                "give either voiceId or voiceMode, not both",
            ));
        }
        let keep_background = mediagen_core::params::boolean(fields, "keepBackground", true)?;
        let start_time = number(fields, "startTime")?;
        let end_time = number(fields, "endTime")?;
        let (from, to) = (start_time.unwrap_or(0.0), end_time.unwrap_or(duration));
        if from < 0.0 || to <= from || (duration > 0.0 && from >= duration) {
            return Err(ApiError::unprocessable(
                "startTime",
                format!(
                    "startTime and endTime must give a part of the file (0 ≤ start < end, start before {duration:.3} s)"
                ),
            ));
        }
        let max_speedup = number(fields, "maxSpeedup")?.unwrap_or(1.3);
        if !(1.0..=2.0).contains(&max_speedup) {
            return Err(ApiError::invalid_parameter(
                "maxSpeedup",
                "must be from 1.0 to 2.0",
            ));
        }
        let rate = match fields.get("sampleRate") {
            None => None,
            Some(r) => Some(
                r.parse()
                    .map_err(|_| ApiError::invalid_parameter("sampleRate", "must be an integer"))?,
            ),
        };
        let (format, sample_rate) =
            audio_output(fields.get("format").map(String::as_str), rate, RATE)?;
        Ok(Self {
            source_language,
            target_language,
            voice_id,
            clone,
            keep_background,
            start_time,
            end_time,
            max_speedup,
            format,
            sample_rate,
        })
    }

    /// Seconds of the file that are dubbed (billed).
    pub fn seconds(&self, duration: f64) -> f64 {
        let end = self.end_time.unwrap_or(duration).min(duration);
        (end - self.start_time.unwrap_or(0.0)).max(0.0)
    }

    /// The job's payload; `cloned` is the resolved `voiceId` when it names
    /// a cloned voice.
    pub fn with(self, input: String, file_id: String, cloned: Option<ClonedVoice>) -> DubRequest {
        let voice = match self.voice_id {
            Some(voice_id) => DubVoice::Voice { voice_id, cloned },
            None if self.clone => DubVoice::Clone,
            None => DubVoice::Auto,
        };
        DubRequest {
            input,
            file_id,
            source_language: self.source_language,
            target_language: self.target_language,
            voice,
            keep_background: self.keep_background,
            start_time: self.start_time,
            end_time: self.end_time,
            max_speedup: self.max_speedup,
            format: self.format,
            sample_rate: self.sample_rate,
        }
    }
}

pub struct DubPipeline {
    pub tts: Arc<TtsCatalog>,
    pub stt: Arc<SttCatalog>,
    pub translator: Arc<dyn Translator>,
    pub languages: Arc<DubLanguages>,
}

/// A dubbed line as the result lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubbedLine {
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub end: f64,
    pub source_text: String,
    pub translated_text: String,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub spoken_start: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub spoken_end: f64,
    pub speedup: f64,
    #[serde(serialize_with = "mediagen_core::time::seconds")]
    pub overrun: f64,
}

/// A dub before it is mixed: the bed (the original with its speech ducked)
/// and every line as spoken. Kept with the job so lines can be edited.
struct Assembled {
    /// A file of samples at [`RATE`].
    bed: PcmFile,
    lines: Vec<Line>,
    sources: Vec<String>,
    spoken: Vec<Spoken>,
    /// The catalog voice that spoke.
    speaker: String,
    /// The profile the speaker was converted toward, if any.
    toward: Option<VoiceProfile>,
    source_language: String,
    /// SubRip of the original's lines.
    transcript: String,
}

/// What is stored beside a dub for editing (`dub/kept.json`; the samples
/// in `dub/bed.f32` and `dub/lines.f32`, little-endian f32 at [`RATE`]).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    lengths: Vec<usize>,
    toward: Option<VoiceProfile>,
    transcript: String,
}

/// What the blocking part made.
struct Dubbed {
    delivered: Delivered,
    duration: f64,
    assembled: Assembled,
    lines: Vec<DubbedLine>,
    subtitles_srt: String,
    subtitles_vtt: String,
}

fn tts_failure(e: TtsError) -> JobFailure {
    match e {
        TtsError::Cancelled => JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled."),
        e => JobFailure::abort(ErrorCode::SynthesisFailed, e.to_string()),
    }
}

fn cues(lines: &[(f64, f64, &str)]) -> Vec<Segment> {
    lines
        .iter()
        .enumerate()
        .map(|(id, (start, end, text))| Segment {
            id,
            start: *start,
            end: *end,
            text: (*text).to_owned(),
            avg_logprob: 0.0,
            no_speech_prob: 0.0,
        })
        .collect()
}

/// The segments whose middle lies within `[from, to]`, with text.
fn within(t: &Transcript, from: f64, to: f64) -> Vec<Segment> {
    t.segments
        .iter()
        .filter(|s| {
            let mid = (s.start + s.end) / 2.0;
            mid >= from && mid <= to && s.text.chars().any(char::is_alphanumeric)
        })
        .cloned()
        .collect()
}

/// Speech line fitting for dubs: the following silence is borrowed before
/// speeding up; a short line keeps its natural pace (the rest of its slot
/// stays quiet) rather than being drawn out.
fn dub_fit(max_speedup: f64) -> Fit {
    Fit {
        max_speedup,
        min_speedup: 1.0,
        borrow_silence: true,
    }
}

impl DubPipeline {
    fn dub(
        &self,
        req: &DubRequest,
        input: &std::path::Path,
        scratch: &std::path::Path,
        ctx: &JobContext,
        timings: &mut Value,
    ) -> Result<Dubbed, JobFailure> {
        let unreadable = |e: &dyn std::fmt::Display| {
            JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string())
        };
        let video = inspect(input).map_err(|e| unreadable(&e))?;
        let max = DUBBING.max_seconds + 1.0;
        let demuxer = match &video {
            Some(v) => v.demuxer,
            None => demuxer(input).map_err(|e| unreadable(&e))?,
        };
        // Both decoded to files, read window by window from there.
        let original = pcm::decode(input, demuxer, &scratch.join("original.f32"), RATE, max)
            .map_err(|e| unreadable(&e))?;
        if original.is_empty() {
            return Err(JobFailure::abort(
                ErrorCode::NoAudio,
                "the file has no sound",
            ));
        }
        let total = original.duration();
        let (from, to) = (
            req.start_time.unwrap_or(0.0),
            req.end_time.unwrap_or(total).min(total),
        );
        // Charged for the part dubbed as decoded, not the header's estimate
        // (a hold too small is raised before the work, or the job stops).
        ctx.meter_blocking((to - from).max(0.0))?;
        let pcm = pcm::decode(input, demuxer, &scratch.join("heard.f32"), 16_000, max)
            .map_err(|e| unreadable(&e))?;
        let model = self.stt.model(None).ok_or_else(|| {
            JobFailure::abort(
                ErrorCode::EngineUnavailable,
                "dubbing needs a speech-to-text model",
            )
        })?;
        // Progress of a pass of the recogniser, from `from` by `share`.
        let hearing = |from: f64, share: f64| {
            move |done: f64| {
                ctx.set_progress((from + done * share) as i64);
                !ctx.is_cancelled()
            }
        };

        // Transcribe.
        let clock = Instant::now();
        let opts = SttOptions {
            language: req.source_language.clone(),
            ..SttOptions::default()
        };
        let heard = transcribe_stream(
            model.as_ref(),
            self.stt.gate(),
            &opts,
            &pcm,
            &mut hearing(0.0, 15.0),
        )
        .map_err(stt_failure)?;
        let source = heard.language.clone();
        let pair = self
            .languages
            .find(&source, &req.target_language)
            .cloned()
            .ok_or_else(|| {
                let e = self
                    .languages
                    .unsupported(Some(&source), &req.target_language);
                JobFailure::abort(ErrorCode::UnsupportedLanguagePair, e.message)
            })?;
        let spoken_segments = within(&heard, from, to);
        if spoken_segments.is_empty() {
            return Err(JobFailure::abort(
                ErrorCode::NoSpeech,
                "No speech was heard in the part of the file to dub.",
            ));
        }
        timings["transcribe"] = json!(round_ms(clock.elapsed().as_secs_f64()));
        ctx.set_progress(30);

        // Translate.
        let clock = Instant::now();
        let (lines, sources): (Vec<Line>, Vec<String>) = match pair.translator {
            Via::Apertium => {
                let texts: Vec<String> = spoken_segments
                    .iter()
                    .map(|s| s.text.trim().to_owned())
                    .collect();
                let translated = self
                    .translator
                    .translate(&source, &req.target_language, &texts)
                    .map_err(|e| match e {
                        TranslateError::Unsupported(..) => {
                            JobFailure::abort(ErrorCode::UnsupportedLanguagePair, e.to_string())
                        }
                        TranslateError::Failed(m) => {
                            JobFailure::retry(ErrorCode::TranslationFailed, m)
                        }
                    })?;
                spoken_segments
                    .iter()
                    .zip(translated)
                    .map(|(s, text)| {
                        (
                            Line {
                                start: s.start,
                                end: s.end,
                                text,
                            },
                            s.text.trim().to_owned(),
                        )
                    })
                    .unzip()
            }
            Via::Whisper => {
                let opts = SttOptions {
                    language: Some(source.clone()),
                    translate: true,
                    ..SttOptions::default()
                };
                let english = transcribe_stream(
                    model.as_ref(),
                    self.stt.gate(),
                    &opts,
                    &pcm,
                    &mut hearing(15.0, 15.0),
                )
                .map_err(stt_failure)?;
                within(&english, from, to)
                    .into_iter()
                    .map(|e| {
                        let said: Vec<&str> = spoken_segments
                            .iter()
                            .filter(|s| {
                                let mid = (s.start + s.end) / 2.0;
                                mid >= e.start && mid <= e.end
                            })
                            .map(|s| s.text.trim())
                            .collect();
                        (
                            Line {
                                start: e.start,
                                end: e.end,
                                text: e.text.trim().to_owned(),
                            },
                            said.join(" "),
                        )
                    })
                    .unzip()
            }
        };
        let keep: Vec<bool> = lines
            .iter()
            .map(|l| l.text.chars().any(char::is_alphanumeric))
            .collect();
        let (lines, sources): (Vec<Line>, Vec<String>) = lines
            .into_iter()
            .zip(sources)
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(p, _)| p)
            .unzip();
        if lines.is_empty() {
            return Err(JobFailure::abort(
                ErrorCode::NoSpeech,
                "Nothing was left to say after translation.",
            ));
        }
        timings["translate"] = json!(round_ms(clock.elapsed().as_secs_f64()));
        ctx.set_progress(40);

        // Synthesize, fitted into the slots.
        let clock = Instant::now();
        let speaker_profile = || {
            // The original speaker, measured on up to 30 s of its lines.
            let mut speech = Vec::new();
            for l in &lines {
                let (a, b) = (
                    (l.start * f64::from(RATE)) as usize,
                    (l.end * f64::from(RATE)) as usize,
                );
                speech.extend(original.read_at(a, b.saturating_sub(a)).ok()?);
                if speech.len() > 30 * RATE as usize {
                    break;
                }
            }
            analyse(&[speech]).ok()
        };
        let target = &req.target_language;
        let closest = |profile: &mediagen_engines::voice::VoiceProfile| {
            self.tts.closest(profile, target).map(|v| v.id.clone())
        };
        let first_voice = || {
            self.tts
                .voices()
                .iter()
                .find(|v| {
                    v.languages
                        .iter()
                        .any(|l| l.to_ascii_lowercase().starts_with(target.as_str()))
                })
                .map(|v| v.id.clone())
        };
        let no_voice = || {
            JobFailure::abort(
                ErrorCode::VoiceNotFound,
                format!("no voice speaks `{target}`"),
            )
        };
        let (speaker, convert_to) = match &req.voice {
            DubVoice::Voice {
                voice_id,
                cloned: None,
            } => (voice_id.clone(), None),
            DubVoice::Voice {
                cloned: Some(c), ..
            } => (
                closest(&c.profile).ok_or_else(no_voice)?,
                Some(c.profile.clone()),
            ),
            DubVoice::Auto => {
                let voice = match speaker_profile() {
                    Some(p) => closest(&p),
                    None => first_voice(),
                };
                (voice.ok_or_else(no_voice)?, None)
            }
            DubVoice::Clone => {
                let p = speaker_profile().ok_or_else(|| {
                    JobFailure::abort(
                        ErrorCode::NoSpeech,
                        "the speaker's voice could not be measured",
                    )
                })?;
                (closest(&p).ok_or_else(no_voice)?, Some(p))
            }
        };
        let base_profile = match &convert_to {
            Some(_) => Some(self.tts.profile(&speaker).map_err(tts_failure)?),
            None => None,
        };
        let toward = match (&convert_to, &base_profile) {
            (Some(target), Some(source)) => Some(Toward { target, source }),
            _ => None,
        };
        timings["voice"] = json!(round_ms(clock.elapsed().as_secs_f64()));
        let clock = Instant::now();
        let spoken = speak_lines(
            &self.tts,
            &speaker,
            toward,
            &lines,
            original.len(),
            &dub_fit(req.max_speedup),
            |done| {
                ctx.set_progress(40 + (done * 45.0) as i64);
                !ctx.is_cancelled()
            },
        )
        .map_err(tts_failure)?;
        timings["synthesize"] = json!(round_ms(clock.elapsed().as_secs_f64()));

        // The bed: the original with its speech ducked (or dropped),
        // window by window.
        let (a, b) = (
            (from * f64::from(RATE)) as usize,
            (to * f64::from(RATE)) as usize,
        );
        let mut ducker = Ducker::default();
        let bed = original
            .map_windows(&scratch.join("bed.f32"), |at, window| {
                if req.keep_background {
                    ducker.duck(window, at, &lines);
                } else {
                    let end = at + window.len();
                    for i in a.max(at)..b.min(end) {
                        window[i - at] = 0.0;
                    }
                }
            })
            .map_err(JobFailure::storage)?;
        let transcript = srt(&cues(
            &spoken_segments
                .iter()
                .map(|s| (s.start, s.end, s.text.trim()))
                .collect::<Vec<_>>(),
        ));
        let assembled = Assembled {
            bed,
            lines,
            sources,
            spoken,
            speaker,
            toward: convert_to,
            source_language: source,
            transcript,
        };
        finish(req, input, video.as_ref(), scratch, assembled, ctx, timings)
    }
}

/// Mixes the lines over the bed, muxes or encodes, and writes subtitles.
fn finish(
    req: &DubRequest,
    input: &std::path::Path,
    video: Option<&VideoInfo>,
    scratch: &std::path::Path,
    assembled: Assembled,
    ctx: &JobContext,
    timings: &mut Value,
) -> Result<Dubbed, JobFailure> {
    let clock = Instant::now();
    let audio = assembled
        .bed
        .map_windows(&scratch.join("mixed.f32"), |at, window| {
            mix_lines(window, at, &assembled.spoken)
        })
        .map_err(JobFailure::storage)?;
    timings["mix"] = json!(round_ms(clock.elapsed().as_secs_f64()));
    ctx.set_progress(90);
    let clock = Instant::now();
    let delivered = deliver(
        input,
        video,
        &audio,
        (req.format, req.sample_rate),
        scratch,
        "dubbed",
    )?;
    timings["mux"] = json!(round_ms(clock.elapsed().as_secs_f64()));
    let subtitle_cues = cues(
        &assembled
            .lines
            .iter()
            .zip(&assembled.spoken)
            .map(|(l, s)| (s.placed.start, s.placed.end, l.text.as_str()))
            .collect::<Vec<_>>(),
    );
    let lines = assembled
        .lines
        .iter()
        .zip(&assembled.sources)
        .zip(&assembled.spoken)
        .map(|((l, source_text), s)| DubbedLine {
            start: round_ms(l.start),
            end: round_ms(l.end),
            source_text: source_text.clone(),
            translated_text: l.text.clone(),
            spoken_start: s.placed.start,
            spoken_end: s.placed.end,
            speedup: s.placed.speedup,
            overrun: s.placed.overrun,
        })
        .collect();
    Ok(Dubbed {
        delivered,
        duration: audio.duration(),
        assembled,
        lines,
        subtitles_srt: srt(&subtitle_cues),
        subtitles_vtt: vtt(&subtitle_cues),
    })
}

fn f32_bytes(x: &[f32]) -> Vec<u8> {
    x.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn f32_samples(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Stores a dub (its file, subtitles and what editing needs) under the
/// job and answers its result.
async fn store(
    ctx: &JobContext,
    req: &DubRequest,
    mut dubbed: Dubbed,
    timings: Value,
) -> Result<Value, JobFailure> {
    dubbed.delivered.store(ctx).await?;
    let a = &dubbed.assembled;
    ctx.blobs
        .put_file(&ctx.output_key("dub/bed.f32"), a.bed.path())
        .await
        .map_err(JobFailure::storage)?;
    let kept = Kept {
        lengths: a.spoken.iter().map(|s| s.samples.len()).collect(),
        toward: a.toward.clone(),
        transcript: a.transcript.clone(),
    };
    let lines: Vec<f32> = a
        .spoken
        .iter()
        .flat_map(|s| s.samples.iter().copied())
        .collect();
    let target = &req.target_language;
    let files = [
        (
            ctx.output_key("transcript.srt"),
            a.transcript.clone().into_bytes(),
        ),
        (
            ctx.output_key(&format!("{target}.srt")),
            std::mem::take(&mut dubbed.subtitles_srt).into_bytes(),
        ),
        (
            ctx.output_key(&format!("{target}.vtt")),
            std::mem::take(&mut dubbed.subtitles_vtt).into_bytes(),
        ),
        (ctx.output_key("dub/lines.f32"), f32_bytes(&lines)),
        (
            ctx.output_key("dub/kept.json"),
            serde_json::to_vec(&kept).unwrap_or_default(),
        ),
    ];
    // The dubbed file and the subtitles are the dub's outputs; the rest is
    // its working state, kept for edits and never given a URL.
    let fields = [
        Some("/transcriptUrl"),
        Some("/translatedSubtitlesUrl"),
        Some("/translatedVttUrl"),
        None,
        None,
    ];
    for ((k, bytes), field) in files.into_iter().zip(fields) {
        let size = bytes.len() as u64;
        ctx.blobs
            .put(&k, bytes.into())
            .await
            .map_err(JobFailure::storage)?;
        if let Some(field) = field {
            ctx.register_output(field, &k, size);
        }
    }
    let mut result = json!({
        "duration": round_ms(dubbed.duration),
        "fileId": req.file_id,
        "sourceLanguage": a.source_language,
        "targetLanguage": target,
        "voiceId": a.speaker,
        "segments": dubbed.lines,
        "timings": timings,
    });
    dubbed.delivered.describe(&mut result);
    Ok(result)
}

#[async_trait::async_trait]
impl Pipeline for DubPipeline {
    fn kind(&self) -> &'static str {
        "dubbing"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let req: DubRequest = ctx.payload()?;
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let input = ctx
            .blobs
            .readable_file(&req.input, &dir.path().join("input"))
            .await
            .map_err(JobFailure::storage)?;
        let this = Self {
            tts: self.tts.clone(),
            stt: self.stt.clone(),
            translator: self.translator.clone(),
            languages: self.languages.clone(),
        };
        let (r, job, scratch) = (req.clone(), ctx.clone(), dir.path().to_owned());
        let (dubbed, timings) = tokio::task::spawn_blocking(move || {
            let mut timings = json!({});
            this.dub(&r, &input, &scratch, &job, &mut timings)
                .map(|d| (d, timings))
        })
        .await
        .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        store(&ctx, &req, dubbed, timings).await
    }
}

/// A new text for one line of a dub.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LineEdit {
    pub index: usize,
    pub translated_text: String,
}

/// An edit of a finished dub (also the job's payload): only the edited
/// lines are spoken again; the rest is taken from the dub as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DubEdit {
    /// The job whose dub is edited (its stored bed and lines are read).
    pub source_job: String,
    pub request: DubRequest,
    pub source_language: String,
    /// The catalog voice that spoke the dub.
    pub voice_id: String,
    pub segments: Vec<DubbedLine>,
    pub edits: Vec<LineEdit>,
}

/// Longest edited line, in characters.
const MAX_LINE: usize = 1000;

impl DubEdit {
    /// Validates `edits` against a finished dub's job (`kind`, `payload`
    /// and `result` as stored). Errors name the parameter.
    pub fn parse(
        source_job: &str,
        kind: &str,
        payload: &Value,
        result: &Value,
        mut edits: Vec<LineEdit>,
    ) -> Result<Self, ApiError> {
        let request: DubRequest = match kind {
            "dubbing" => serde_json::from_value(payload.clone()),
            _ => serde_json::from_value(payload["request"].clone()),
        }
        .map_err(|_| ApiError::unprocessable("jobId", "not a dubbing job"))?;
        let segments: Vec<DubbedLine> = serde_json::from_value(result["segments"].clone())
            .map_err(|_| ApiError::unprocessable("jobId", "the dub has no lines"))?;
        if edits.is_empty() {
            return Err(ApiError::invalid_parameter(
                "segments",
                "give at least one line to change",
            ));
        }
        // What the dub holds is not the document's to say: a well-formed
        // edit naming lines it lacks (or one twice) is 422.
        if edits.len() > segments.len() {
            return Err(ApiError::unprocessable(
                "segments",
                format!("give 1 to {} lines to change", segments.len()),
            ));
        }
        edits.sort_by_key(|e| e.index);
        for e in edits.iter_mut() {
            if e.index >= segments.len() {
                return Err(ApiError::unprocessable(
                    "segments",
                    format!(
                        "index {} is past the last line ({})",
                        e.index,
                        segments.len() - 1
                    ),
                ));
            }
            e.translated_text = e.translated_text.trim().to_owned();
            let chars = e.translated_text.chars().count();
            if chars == 0 || chars > MAX_LINE {
                return Err(ApiError::invalid_parameter(
                    "segments",
                    format!(
                        "line {}: translatedText must be 1 to {MAX_LINE} characters",
                        e.index
                    ),
                ));
            }
        }
        if edits.windows(2).any(|w| w[0].index == w[1].index) {
            return Err(ApiError::unprocessable(
                "segments",
                "each line may be changed once per call",
            ));
        }
        Ok(Self {
            source_job: source_job.to_owned(),
            request,
            source_language: result["sourceLanguage"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            voice_id: result["voiceId"].as_str().unwrap_or_default().to_owned(),
            segments,
            edits,
        })
    }

    /// Seconds of the edited lines' slots (billed).
    pub fn seconds(&self) -> f64 {
        self.edits
            .iter()
            .map(|e| {
                let s = &self.segments[e.index];
                (s.end - s.start).max(0.0)
            })
            .sum()
    }
}

/// `dubbing.edit`: the edited lines of a dub spoken again and mixed anew.
pub struct DubEditPipeline {
    pub tts: Arc<TtsCatalog>,
}

impl DubEditPipeline {
    #[allow(clippy::too_many_arguments)]
    fn edit(
        &self,
        e: &DubEdit,
        input: &std::path::Path,
        scratch: &std::path::Path,
        bed: PcmFile,
        lines: Vec<f32>,
        kept: Kept,
        ctx: &JobContext,
        timings: &mut Value,
    ) -> Result<Dubbed, JobFailure> {
        let unreadable = |e: &dyn std::fmt::Display| {
            JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string())
        };
        let video = inspect(input).map_err(|e| unreadable(&e))?;
        if kept.lengths.len() != e.segments.len()
            || kept.lengths.iter().sum::<usize>() != lines.len()
        {
            return Err(JobFailure::abort(
                ErrorCode::DubUnavailable,
                "the stored dub does not match its lines",
            ));
        }
        // The lines as they were spoken.
        let mut at = 0;
        let mut spoken: Vec<Spoken> = Vec::with_capacity(e.segments.len());
        for (s, n) in e.segments.iter().zip(&kept.lengths) {
            spoken.push(Spoken {
                placed: crate::respeak::Placed {
                    start: s.spoken_start,
                    end: s.spoken_end,
                    speedup: s.speedup,
                    overrun: s.overrun,
                },
                samples: lines[at..at + n].to_vec(),
            });
            at += n;
        }
        let mut texts: Vec<Line> = e
            .segments
            .iter()
            .map(|s| Line {
                start: s.start,
                end: s.end,
                text: s.translated_text.clone(),
            })
            .collect();
        let base_profile = match &kept.toward {
            Some(_) => Some(self.tts.profile(&e.voice_id).map_err(tts_failure)?),
            None => None,
        };
        let toward = match (&kept.toward, &base_profile) {
            (Some(target), Some(source)) => Some(Toward { target, source }),
            _ => None,
        };
        let clock = Instant::now();
        let total = bed.duration();
        for (done, edit) in e.edits.iter().enumerate() {
            let i = edit.index;
            texts[i].text = edit.translated_text.clone();
            let cursor = if i == 0 {
                0.0
            } else {
                spoken[i - 1].placed.end + crate::respeak::MIN_GAP
            };
            let next = e.segments.get(i + 1).map_or(total, |s| s.start);
            spoken[i] = speak_line(
                &self.tts,
                &e.voice_id,
                toward,
                &texts[i],
                cursor,
                next,
                &dub_fit(e.request.max_speedup),
            )
            .map_err(tts_failure)?;
            ctx.set_progress(((done + 1) * 80 / e.edits.len()) as i64);
            if ctx.is_cancelled() {
                return Err(JobFailure::abort(
                    ErrorCode::Cancelled,
                    "The job was cancelled.",
                ));
            }
        }
        timings["synthesize"] = json!(round_ms(clock.elapsed().as_secs_f64()));
        let assembled = Assembled {
            bed,
            lines: texts,
            sources: e.segments.iter().map(|s| s.source_text.clone()).collect(),
            spoken,
            speaker: e.voice_id.clone(),
            toward: kept.toward,
            source_language: e.source_language.clone(),
            transcript: kept.transcript,
        };
        finish(
            &e.request,
            input,
            video.as_ref(),
            scratch,
            assembled,
            ctx,
            timings,
        )
    }
}

#[async_trait::async_trait]
impl Pipeline for DubEditPipeline {
    fn kind(&self) -> &'static str {
        "dubbing.edit"
    }

    async fn run(&self, ctx: JobContext) -> Result<Value, JobFailure> {
        let edit: DubEdit = ctx.payload()?;
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let input = ctx
            .blobs
            .readable_file(&edit.request.input, &dir.path().join("input"))
            .await
            .map_err(JobFailure::storage)?;
        let stored = |name: &str| format!("jobs/{}/dub/{name}", edit.source_job);
        let gone = |e: mediagen_store::BlobError| {
            JobFailure::abort(
                ErrorCode::DubUnavailable,
                format!("the dub's stored lines are gone: {e}"),
            )
        };
        let bed = ctx
            .blobs
            .readable_file(&stored("bed.f32"), &dir.path().join("bed.f32"))
            .await
            .map_err(gone)
            .and_then(|path| PcmFile::open(&path, RATE).map_err(JobFailure::storage))?;
        let lines = f32_samples(
            &ctx.blobs
                .get_bytes(&stored("lines.f32"))
                .await
                .map_err(gone)?,
        );
        let kept: Kept = serde_json::from_slice(
            &ctx.blobs
                .get_bytes(&stored("kept.json"))
                .await
                .map_err(gone)?,
        )
        .map_err(|e| JobFailure::abort(ErrorCode::DubUnavailable, e.to_string()))?;
        let this = Self {
            tts: self.tts.clone(),
        };
        let (e, job, scratch) = (edit.clone(), ctx.clone(), dir.path().to_owned());
        let (dubbed, timings) = tokio::task::spawn_blocking(move || {
            let mut timings = json!({});
            this.edit(&e, &input, &scratch, bed, lines, kept, &job, &mut timings)
                .map(|d| (d, timings))
        })
        .await
        .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        let mut result = store(&ctx, &edit.request, dubbed, timings).await?;
        result["sourceJobId"] = json!(edit.source_job);
        result["editedSegments"] = json!(edit.edits.iter().map(|e| e.index).collect::<Vec<_>>());
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn languages() -> DubLanguages {
        DubLanguages {
            pairs: vec![
                Pair {
                    source: "en".into(),
                    target: "es".into(),
                    translator: Via::Apertium,
                },
                Pair {
                    source: "es".into(),
                    target: "en".into(),
                    translator: Via::Whisper,
                },
            ],
        }
    }

    #[test]
    fn options_are_validated() {
        let l = languages();
        let ok = DubOptions::parse(&f(&[("targetLanguage", "es")]), &l, 10.0).unwrap();
        assert_eq!(ok.max_speedup, 1.3);
        assert!(ok.keep_background && !ok.clone);
        assert_eq!(ok.seconds(10.0), 10.0);
        let part = DubOptions::parse(
            &f(&[
                ("targetLanguage", "ES-es"),
                ("startTime", "2"),
                ("endTime", "5.5"),
            ]),
            &l,
            10.0,
        )
        .unwrap();
        assert_eq!(
            (part.target_language.as_str(), part.seconds(10.0)),
            ("es", 3.5)
        );
        for (fields, param) in [
            (f(&[]), "targetLanguage"),
            (f(&[("targetLanguage", "spanish")]), "targetLanguage"),
            (
                f(&[("targetLanguage", "es"), ("maxSpeedup", "3")]),
                "maxSpeedup",
            ),
            (
                f(&[("targetLanguage", "es"), ("voiceMode", "x")]),
                "voiceMode",
            ),
            (
                f(&[("targetLanguage", "es"), ("keepBackground", "1")]),
                "keepBackground",
            ),
            (
                f(&[("targetLanguage", "es"), ("startTime", "x")]),
                "startTime",
            ),
            (f(&[("targetLanguage", "es"), ("speed", "2")]), "speed"),
        ] {
            let e = DubOptions::parse(&fields, &l, 10.0).unwrap_err();
            assert_eq!(e.details["parameter"], param, "{fields:?}");
        }
        // Unsupported pairs are 422 and list what works.
        let e = DubOptions::parse(&f(&[("targetLanguage", "de")]), &l, 10.0).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnprocessableEntity);
        assert_eq!(e.details["supportedTargets"], json!(["en", "es"]));
        let e = DubOptions::parse(
            &f(&[("targetLanguage", "en"), ("sourceLanguage", "fr")]),
            &l,
            10.0,
        )
        .unwrap_err();
        assert_eq!(e.details["supportedSources"], json!(["es"]));
        // A part past the end.
        let e = DubOptions::parse(
            &f(&[("targetLanguage", "es"), ("startTime", "12")]),
            &l,
            10.0,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::UnprocessableEntity);
    }
}
