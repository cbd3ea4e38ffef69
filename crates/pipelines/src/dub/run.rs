//! The `dubbing` job: transcribe, translate, speak and time-fit each line,
//! mix, and store the dub with what editing it needs.

use mediagen_core::time::round_ms;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mediagen_core::ErrorCode;
use mediagen_jobs::limits::DUBBING;
use mediagen_media::media::demuxer;
use mediagen_media::pcm::{self, PcmFile};
use mediagen_media::video::{inspect, VideoInfo};
use mediagen_speech::stt::{
    transcribe_stream, Segment, SpeakerCount, SttCatalog, SttError, SttOptions, Transcript,
};
use mediagen_speech::translate::{TranslateError, Translator};
use mediagen_speech::tts::{Foreign, TtsCatalog};
use mediagen_speech::voice::{VoiceProfile, RATE};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::cast::{by_speaker, cast, Cast};
use super::clones::clone_speakers;
use super::sentences::sentences;
use crate::output::{deliver, Delivered};
use crate::respeak::{mix_lines, speak_lines, Ducker, Fit, Line, Spoken};
use crate::stt::{srt, stt_failure, vtt};
use crate::tts::read_styles;
use crate::tts::tts_failure;
use crate::voice_clone::neural::{Maker, StockCache};
use mediagen_jobs::dub::{DubLanguages, Via};
use mediagen_jobs::dub::{DubRequest, DubVoice, DubbedLine};
use mediagen_speakers::diarize::Samples;
use mediagen_speech::stt::speakers::attribute;

pub struct DubPipeline {
    pub tts: Arc<TtsCatalog>,
    pub stt: Arc<SttCatalog>,
    pub translator: Arc<dyn Translator>,
    pub languages: Arc<DubLanguages>,
    /// The stock voices as clones' searches hear them (shared with
    /// `voice.clone`).
    pub stock: Arc<StockCache>,
}

/// A dub before it is mixed: the bed (the original with its speech ducked)
/// and every line as spoken. Kept with the job so lines can be edited.
pub(super) struct Assembled {
    /// A file of samples at [`RATE`].
    pub(super) bed: PcmFile,
    pub(super) lines: Vec<Line>,
    pub(super) sources: Vec<String>,
    pub(super) spoken: Vec<Spoken>,
    /// Who said each line, in which voice.
    pub(super) cast: Cast,
    pub(super) source_language: String,
    /// SubRip of the original's lines.
    pub(super) transcript: String,
    /// The neural clones' tables this job made, by the blob keys the cast
    /// names them by (stored with the dub).
    pub(super) tables: Vec<(String, Vec<f32>)>,
}

/// What is stored beside a dub for editing (`dub/kept.json`; the samples
/// in `dub/bed.f32` and `dub/lines.f32`, little-endian f32 at [`RATE`]).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Kept {
    pub(super) lengths: Vec<usize>,
    /// The profile of a dub of one voice made before dubs had casts.
    #[serde(default)]
    pub(super) toward: Option<VoiceProfile>,
    #[serde(default)]
    pub(super) cast: Option<Cast>,
    pub(super) transcript: String,
}

/// What the blocking part made.
pub(super) struct Dubbed {
    pub(super) delivered: Delivered,
    pub(super) duration: f64,
    pub(super) assembled: Assembled,
    pub(super) lines: Vec<DubbedLine>,
    pub(super) subtitles_srt: String,
    pub(super) subtitles_vtt: String,
}

pub(super) fn cues(lines: &[(f64, f64, &str)]) -> Vec<Segment> {
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
            compression_ratio: 0.0,
            speaker: None,
        })
        .collect()
}

/// Audio as the diarization reads it: every read fails once `stopped` says
/// so (the job was cancelled, or the transcription beside it failed), so
/// the diarization ends at its next read instead of running to its end.
struct UntilStopped<'a> {
    audio: &'a (dyn Samples + Sync),
    stopped: &'a (dyn Fn() -> bool + Sync),
}

impl Samples for UntilStopped<'_> {
    fn total(&self) -> usize {
        self.audio.total()
    }

    fn read(&self, at: usize, max: usize) -> Result<Vec<f32>, String> {
        if (self.stopped)() {
            return Err("stopped".into());
        }
        self.audio.read(at, max)
    }
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
pub(super) fn dub_fit(max_speedup: f64) -> Fit {
    Fit {
        max_speedup,
        min_speedup: 1.0,
        borrow_silence: true,
    }
}

impl DubPipeline {
    /// `named`: the style table of the neural clone the request names.
    fn dub(
        &self,
        req: &DubRequest,
        named: Option<Vec<f32>>,
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
            // Speakers are given to words, and lines cut between them.
            words: by_speaker(req),
            ..SttOptions::default()
        };
        // Who speaks when (so each speaker can have a voice of their own),
        // found on a thread of its own while the recogniser runs: it needs
        // only the audio, and the recogniser leaves the cores idle between
        // its steps.
        let stop = AtomicBool::new(false);
        let stopped = || ctx.is_cancelled() || stop.load(Ordering::Relaxed);
        let (heard, who) = std::thread::scope(|scope| {
            let heard_until = UntilStopped {
                audio: &pcm,
                stopped: &stopped,
            };
            let who = by_speaker(req).then(|| {
                scope.spawn(mediagen_media::process::in_this_scope(move || {
                    self.stt.diarize(&heard_until, SpeakerCount::default())
                }))
            });
            let heard = transcribe_stream(
                model.as_ref(),
                self.stt.gate(),
                self.stt.vad(),
                &opts,
                &pcm,
                &mut hearing(0.0, 15.0),
            );
            // A failed or cancelled transcription needs no speakers.
            stop.store(heard.is_err(), Ordering::Relaxed);
            let who = who.map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(SttError::Failed("diarization panicked".into())))
            });
            (heard, who)
        });
        let mut heard = heard.map_err(stt_failure)?;
        let speakers = match who {
            Some(Ok(d)) => {
                attribute(&mut heard, &d);
                Some(d)
            }
            Some(Err(e)) => {
                tracing::warn!("dubbing with one voice: the speakers were not told apart ({e})");
                None
            }
            None => None,
        };
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
        let spoken_segments = sentences(within(&heard, from, to));
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
                    .map(|(s, t)| {
                        let foreign = (!t.kept.is_empty()).then(|| Foreign {
                            language: source.clone(),
                            words: t.kept,
                        });
                        (
                            Line {
                                start: s.start,
                                end: s.end,
                                text: t.text,
                                foreign,
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
                    self.stt.vad(),
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
                                foreign: None,
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
        let mut cast = cast(
            &self.tts,
            req,
            &lines,
            &original,
            speakers.as_ref(),
            self.stt.encoder().ok(),
        )?;
        let mut tables: Vec<Option<Vec<f32>>> = cast
            .parts
            .iter()
            .map(|p| p.neural.as_ref().and(named.clone()))
            .collect();
        let mut made = Vec::new();
        if req.voice == DubVoice::Clone {
            // Each speaker's own voice, searched for within the time the
            // hold has for it; settled on the time spent.
            let maker = Maker {
                tts: &self.tts,
                stt: &self.stt,
                stock: &self.stock,
                report: &|_| {},
                cancelled: &|| ctx.is_cancelled(),
            };
            let key = |k: usize| ctx.output_key(&format!("dub/speaker_{k}.styles"));
            let cloned = clone_speakers(
                &maker,
                &mut cast,
                &lines,
                &original,
                &source,
                &req.target_language,
                key,
                |share| ctx.set_progress(40 + (share * 10.0) as i64),
            )?;
            ctx.meter_blocking((to - from).max(0.0).ceil() + cloned.seconds.ceil())?;
            for (k, table) in cloned.tables.into_iter().enumerate() {
                if let (Some(table), Some(n)) = (table, &cast.parts[k].neural) {
                    made.push((n.styles_key.clone(), table.clone()));
                    tables[k] = Some(table);
                }
            }
        }
        // Synthesis moves the progress on from where the voices left it.
        let synthesis = if req.voice == DubVoice::Clone { 50 } else { 40 };
        let converted_from = cast.sources(&self.tts)?;
        let voices = cast.voicings(&converted_from, &tables);
        timings["voice"] = json!(round_ms(clock.elapsed().as_secs_f64()));
        let clock = Instant::now();
        let spoken = speak_lines(
            &self.tts,
            &voices,
            &cast.who,
            &lines,
            original.len(),
            &dub_fit(req.max_speedup),
            |done| {
                ctx.set_progress(synthesis + (done * (85 - synthesis) as f64) as i64);
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
            cast,
            source_language: source,
            transcript,
            tables: made,
        };
        finish(req, input, video.as_ref(), scratch, assembled, ctx, timings)
    }
}

/// Mixes the lines over the bed, muxes or encodes, and writes subtitles.
pub(super) fn finish(
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
        .zip(&assembled.cast.who)
        .map(|(((l, source_text), s), &k)| DubbedLine {
            speaker: assembled.cast.parts[k].id.clone(),
            start: round_ms(l.start),
            end: round_ms(l.end),
            source_text: source_text.clone(),
            translated_text: l.text.clone(),
            untranslated: l
                .foreign
                .as_ref()
                .map(|f| f.words.clone())
                .unwrap_or_default(),
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

pub(super) fn f32_bytes(x: &[f32]) -> Vec<u8> {
    x.iter().flat_map(|s| s.to_le_bytes()).collect()
}

pub(super) fn f32_samples(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Stores a dub (its file, subtitles and what editing needs) under the
/// job and answers its result.
pub(super) async fn store(
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
    for (key, table) in &a.tables {
        ctx.blobs
            .put(key, f32_bytes(table).into())
            .await
            .map_err(JobFailure::storage)?;
    }
    let kept = Kept {
        lengths: a.spoken.iter().map(|s| s.samples.len()).collect(),
        toward: None,
        cast: Some(a.cast.clone()),
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
        "voiceId": a.cast.parts[0].voice_id,
        "clone": a.cast.parts[0].clone_kind(),
        "segments": dubbed.lines,
        "timings": timings,
    });
    if a.cast.parts.len() > 1 {
        let seconds = a.cast.seconds(&a.lines);
        result["speakers"] = a
            .cast
            .parts
            .iter()
            .zip(seconds)
            .map(|(p, s)| {
                json!({"id": p.id, "voiceId": p.voice_id, "clone": p.clone_kind(), "seconds": round_ms(s)})
            })
            .collect();
    }
    dubbed.delivered.describe(&mut result);
    Ok(result)
}

#[async_trait::async_trait]
impl RequestPipeline for DubPipeline {
    type Request = DubRequest;

    async fn work(&self, ctx: JobContext, req: DubRequest) -> Result<Value, JobFailure> {
        let (dir, input) = ctx.scratch_with(&req.input, "input").await?;
        let this = Self {
            tts: self.tts.clone(),
            stt: self.stt.clone(),
            translator: self.translator.clone(),
            languages: self.languages.clone(),
            stock: self.stock.clone(),
        };
        let named = match &req.voice {
            DubVoice::Voice {
                cloned: Some(c), ..
            } => read_styles(&ctx, c.neural.as_ref()).await?,
            _ => None,
        };
        let (r, job, scratch) = (req.clone(), ctx.clone(), dir.path().to_owned());
        let (dubbed, timings) = ctx
            .blocking(move || {
                let mut timings = json!({});
                this.dub(&r, named, &input, &scratch, &job, &mut timings)
                    .map(|d| (d, timings))
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        store(&ctx, &req, dubbed, timings).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diarization_reads_nothing_once_stopped() {
        let samples = vec![0.25_f32; 100];
        let audio: &[f32] = &samples;
        let stop = AtomicBool::new(false);
        let stopped = || stop.load(Ordering::Relaxed);
        let heard = UntilStopped {
            audio: &audio,
            stopped: &stopped,
        };
        assert_eq!(heard.total(), 100);
        assert_eq!(heard.read(90, 20).unwrap(), vec![0.25; 10]);
        stop.store(true, Ordering::Relaxed);
        assert!(heard.read(0, 10).is_err(), "a read after the stop fails");
    }
}
