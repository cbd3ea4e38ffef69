//! `voice.change`: the voice in an audio file (or a video's sound track)
//! changed toward a target voice: converted (words, timing and intonation
//! kept) or resynthesized (transcribed, then said again by the target
//! voice in each line's time slot).

use mediagen_core::ErrorCode;
use std::sync::Arc;

use mediagen_jobs::limits::VOICE_CHANGER;
use std::path::Path;

use mediagen_media::media::demuxer;
use mediagen_media::pcm::{self, PcmFile};
use mediagen_media::video::inspect;
use mediagen_speech::stt::{languages as stt_languages, transcribe_stream, SttCatalog, SttOptions};
use mediagen_speech::tts::TtsCatalog;
use mediagen_speech::voice::{median_pitch_of, VoiceConverter, WorldConverter, RATE};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

use crate::output::deliver;
use crate::respeak::{clear_lines, mix_lines, speak_lines, Fit, Line, Toward, Voicing};
use crate::stt::stt_failure;
use crate::tts::{load_styles, tts_failure, voiceprint, Sound, Styled};
use mediagen_core::voice::styled_speaker;

pub use mediagen_jobs::voice::*;

pub struct VoiceChangePipeline {
    pub tts: Arc<TtsCatalog>,
    pub stt: Arc<SttCatalog>,
}

fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

/// What changing the voice made: a track at [`RATE`] and what to report.
struct Changed {
    track: PcmFile,
    pitch_before: f64,
    pitch_after: f64,
    target_pitch: Option<f64>,
    extra: Value,
}

/// Re-speaking in `resynthesize` mode uses slots as they were: a line may be at
/// most 50 % faster or 20 % slower than the voice says it.
const RESYNTHESIZE_FIT: Fit = Fit {
    max_speedup: 1.5,
    min_speedup: 0.8,
    borrow_silence: false,
};

/// How much of the input and the output is compared with the target voice.
const SIMILARITY_SECONDS: usize = 30;

impl VoiceChangePipeline {
    /// How alike the target voice and the input (`before`) and the output
    /// (`after`) are: cosine similarities of speaker embeddings of their
    /// first 30 s, the target heard saying its preview sentence (a catalog
    /// voice as it speaks, a cloned voice as its base voice converted
    /// toward it speaks).
    fn similarity(
        &self,
        req: &ChangeRequest,
        styles: Option<&[f32]>,
        original: &PcmFile,
        track: &PcmFile,
    ) -> Result<Value, String> {
        let encoder = self.stt.encoder()?;
        let target = match &req.cloned {
            Some(c) => {
                let base = c.base().map_err(|e| e.message)?;
                let sound = match (&c.neural, styles) {
                    (Some(n), Some(styles)) => Sound::Styled(Styled::of(styles, n)),
                    _ => Sound::Converted(&c.profile),
                };
                voiceprint(&self.tts, encoder, base, sound, &c.language)?
            }
            None => {
                let language = self.tts.voice(&req.voice_id).map(|v| v.language.clone());
                let language = language.as_deref().unwrap_or("en");
                voiceprint(&self.tts, encoder, &req.voice_id, Sound::Own, language)?
            }
        };
        let embed =
            |audio: &[f32], rate: u32| encoder.embed_at(audio, rate).map_err(|e| e.to_string());
        let first = |pcm: &PcmFile| {
            pcm.read_at(0, SIMILARITY_SECONDS * pcm.rate() as usize)
                .map_err(|e| e.to_string())
        };
        let before = embed(&first(original)?, original.rate())?;
        let after = embed(&first(track)?, track.rate())?;
        Ok(json!({
            "before": round(f64::from(before.similarity(&target)), 3),
            "after": round(f64::from(after.similarity(&target)), 3),
        }))
    }

    fn convert(
        &self,
        req: &ChangeRequest,
        original: &PcmFile,
        scratch: &Path,
        ctx: &JobContext,
    ) -> Result<Changed, JobFailure> {
        let target = match &req.cloned {
            Some(c) => c.profile.clone(),
            None => self.tts.profile(&req.voice_id).map_err(tts_failure)?,
        };
        let mut track =
            PcmFile::create(&scratch.join("changed.f32"), RATE).map_err(JobFailure::storage)?;
        let stop = || ctx.is_cancelled();
        let (pitch_before, pitch_after) = WorldConverter
            .convert_file(original, &target, &mut track, &stop)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::Interrupted => {
                    JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled.")
                }
                _ => JobFailure::storage(e),
            })?;
        Ok(Changed {
            track,
            pitch_before,
            pitch_after,
            target_pitch: Some(target.pitch_median),
            extra: json!({ "converter": WorldConverter.name() }),
        })
    }

    /// `styles`: the target's style table when it is a neural clone.
    #[allow(clippy::too_many_arguments)]
    fn resynthesize(
        &self,
        req: &ChangeRequest,
        styles: Option<&[f32]>,
        original: &PcmFile,
        heard: &PcmFile,
        scratch: &Path,
        ctx: &JobContext,
    ) -> Result<Changed, JobFailure> {
        let base = match &req.cloned {
            Some(c) => c
                .base()
                .map_err(|e| JobFailure::abort(ErrorCode::VoiceCannotSpeak, e.message))?,
            None => req.voice_id.as_str(),
        };
        let voice = self.tts.voice(base).ok_or_else(|| {
            JobFailure::abort(
                ErrorCode::VoiceNotFound,
                format!("voice {base} is no longer available"),
            )
        })?;
        let model = self.stt.model(None).ok_or_else(|| {
            JobFailure::abort(
                ErrorCode::EngineUnavailable,
                "resynthesize needs a speech-to-text model (none is installed)",
            )
        })?;
        // A neural clone speaks every language its engine has: the file is
        // heard in its own (detected). Any other voice hears it in the
        // language it speaks.
        let neural = match (&req.cloned, styles) {
            (Some(c), Some(styles)) => c.neural.as_ref().map(|n| (styles, n)),
            _ => None,
        };
        let code = voice.language.get(..2).unwrap_or("en").to_ascii_lowercase();
        let language =
            (model.multilingual() && neural.is_none() && stt_languages().contains(&code.as_str()))
                .then_some(code);
        let opts = SttOptions {
            language,
            ..SttOptions::default()
        };
        let speech = heard;
        let heard = transcribe_stream(
            model.as_ref(),
            self.stt.gate(),
            self.stt.vad(),
            &opts,
            speech,
            &mut |d| {
                ctx.set_progress((d * 40.0) as i64);
                !ctx.is_cancelled()
            },
        )
        .map_err(stt_failure)?;
        ctx.set_progress(40);
        let lines: Vec<Line> = heard
            .segments
            .iter()
            .filter(|s| s.text.chars().any(char::is_alphanumeric))
            .map(|s| Line {
                start: s.start,
                end: s.end,
                text: s.text.trim().to_owned(),
                foreign: None,
            })
            .collect();
        if lines.is_empty() {
            return Err(JobFailure::abort(
                ErrorCode::NoSpeech,
                "No speech was heard in the file, so there is nothing to re-speak.",
            ));
        }
        let source;
        let (speaker, toward, styled) = match (&req.cloned, neural) {
            (Some(c), Some((styles, n))) => {
                let speaker = styled_speaker(self.tts.voices(), &c.profile.gender, &heard.language)
                    .map_or(base, |v| v.id.as_str());
                (speaker, None, Some(Styled::of(styles, n)))
            }
            (Some(c), None) => {
                source = self.tts.profile(base).map_err(tts_failure)?;
                let toward = Toward {
                    target: &c.profile,
                    source: &source,
                };
                (base, Some(toward), None)
            }
            (None, _) => (base, None, None),
        };
        let spoken = speak_lines(
            &self.tts,
            &[Voicing {
                speaker,
                toward,
                styled,
            }],
            &[],
            &lines,
            original.len(),
            &RESYNTHESIZE_FIT,
            |done| {
                ctx.set_progress(40 + (done * 55.0) as i64);
                !ctx.is_cancelled()
            },
        )
        .map_err(tts_failure)?;
        // Speech replaced where it was; silences and other sound kept.
        let track = original
            .map_windows(&scratch.join("changed.f32"), |at, window| {
                clear_lines(window, at, &lines);
                mix_lines(window, at, &spoken);
            })
            .map_err(JobFailure::storage)?;
        let segments: Vec<Value> = lines
            .iter()
            .zip(spoken.iter().map(|s| &s.placed))
            .map(|(l, p)| {
                json!({
                    "start": round(l.start, 3), "end": round(l.end, 3), "text": l.text,
                    "spokenStart": p.start, "spokenEnd": p.end,
                    "speedup": p.speedup, "overrun": p.overrun,
                })
            })
            .collect();
        Ok(Changed {
            pitch_before: median_pitch_of(original).map_err(JobFailure::storage)?,
            pitch_after: median_pitch_of(&track).map_err(JobFailure::storage)?,
            target_pitch: req.cloned.as_ref().map(|c| c.profile.pitch_median),
            track,
            extra: json!({
                "speakerVoiceId": speaker,
                "language": heard.language,
                "text": heard.text,
                "segments": segments,
            }),
        })
    }
}

#[async_trait::async_trait]
impl RequestPipeline for VoiceChangePipeline {
    type Request = ChangeRequest;

    async fn work(&self, ctx: JobContext, req: ChangeRequest) -> Result<Value, JobFailure> {
        let (dir, input) = ctx.scratch_with(&req.input, "input").await?;
        let scratch = dir.path().to_owned();
        let styles = load_styles(&ctx, req.cloned.as_ref()).await?;
        let r = req.clone();
        let this = Self {
            tts: self.tts.clone(),
            stt: self.stt.clone(),
        };
        let job = ctx.clone();
        let (delivered, changed, seconds, similarity) = ctx
            .blocking(move || {
                let unreadable = |e: &dyn std::fmt::Display| {
                    JobFailure::abort(ErrorCode::UnreadableMedia, e.to_string())
                };
                let video = inspect(&input).map_err(|e| unreadable(&e))?;
                let demuxer = match &video {
                    Some(v) => v.demuxer,
                    None => demuxer(&input).map_err(|e| unreadable(&e))?,
                };
                let max = VOICE_CHANGER.max_seconds;
                let original =
                    pcm::decode(&input, demuxer, &scratch.join("original.f32"), RATE, max)
                        .map_err(|e| unreadable(&e))?;
                if original.is_empty() {
                    return Err(JobFailure::abort(
                        ErrorCode::NoAudio,
                        "the file has no sound",
                    ));
                }
                // Charged for the sound decoded, not the header's estimate (a
                // hold too small is raised before the work, or the job stops).
                job.meter_blocking(original.duration())?;
                let changed = match r.mode {
                    ChangeMode::Convert => this.convert(&r, &original, &scratch, &job)?,
                    ChangeMode::Resynthesize => {
                        let heard =
                            pcm::decode(&input, demuxer, &scratch.join("heard.f32"), 16_000, max)
                                .map_err(|e| unreadable(&e))?;
                        let styles = styles.as_deref();
                        this.resynthesize(&r, styles, &original, &heard, &scratch, &job)?
                    }
                };
                let delivered = deliver(
                    &input,
                    video.as_ref(),
                    &changed.track,
                    (r.format, r.sample_rate),
                    &scratch,
                    "changed",
                )?;
                let seconds = changed.track.duration();
                let similarity = this
                    .similarity(&r, styles.as_deref(), &original, &changed.track)
                    .map_err(|e| tracing::warn!("voice similarity not measured: {e}"))
                    .ok();
                Ok((delivered, changed, seconds, similarity))
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        delivered.store(&ctx).await?;
        let mut result = json!({
            "duration": round(seconds, 3),
            "voiceId": req.voice_id,
            "fileId": req.file_id,
            "mode": req.mode.as_str(),
            "pitchBefore": round(changed.pitch_before, 1),
            "pitchAfter": round(changed.pitch_after, 1),
            "targetPitch": changed.target_pitch.map(|p| round(p, 1)),
            "similarity": similarity,
        });
        if let (Some(out), Some(extra)) = (result.as_object_mut(), changed.extra.as_object()) {
            out.extend(extra.clone());
        }
        delivered.describe(&mut result);
        Ok(result)
    }
}
