//! `voice.clone`: a cloned voice made from its samples by a worker. The
//! API probes the samples and keeps them as account files; the worker
//! decodes and checks each one, analyses them into a voice profile, hears
//! the language (when not given), searches for a Kokoro style table that
//! sounds like them ([`neural`]; a WORLD clone, the closest catalog voice
//! converted toward the profile, when asked for or when no Kokoro voice
//! speaks the language), writes its preview and records the voice. The
//! API process runs none of this.

pub mod neural;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mediagen_core::{ApiError, ErrorCode};
use mediagen_media::audio::resample;
use mediagen_media::media::{decode_mono, encode, probe};
use mediagen_media::{Audio, AudioFormat};
use mediagen_speakers::encoder::Embedding;
use mediagen_speech::stt::{detect_language, SttCatalog};
use mediagen_speech::tts::TtsCatalog;
use mediagen_speech::voice::{analyse, check_sample, check_speech, VoiceProfile, RATE};

use crate::tts::{preview_text, speak_neural, voiceprint, Sound};
use mediagen_store::{Db, VoiceRecord};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

pub use mediagen_jobs::voice_clone::*;

#[derive(Clone)]
pub struct VoiceClonePipeline {
    pub tts: Arc<TtsCatalog>,
    pub stt: Arc<SttCatalog>,
    pub db: Db,
    /// What the stock voices sound like, heard once per process.
    pub stock: Arc<neural::StockCache>,
}

impl VoiceClonePipeline {
    pub fn new(
        tts: Arc<TtsCatalog>,
        stt: Arc<SttCatalog>,
        db: Db,
        stock: Arc<neural::StockCache>,
    ) -> Self {
        Self {
            tts,
            stt,
            db,
            stock,
        }
    }
}

/// What the samples make, before it is stored.
struct Made {
    profile: VoiceProfile,
    preview: Vec<u8>,
    language: String,
    base_voice_id: Option<String>,
    similarity: Option<VoiceSimilarity>,
    /// A neural clone.
    neural: Option<neural::NeuralVoice>,
}

impl VoiceClonePipeline {
    /// Decodes and checks every sample (blocking). A sample that cannot be
    /// used is refused naming it (`details.index`).
    fn decode(&self, paths: &[PathBuf]) -> Result<Vec<Vec<f32>>, JobFailure> {
        let mut samples = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            let cannot = |e: &dyn std::fmt::Display| {
                tracing::info!(index = i, error = %e, "a voice sample did not decode");
                JobFailure::refused(
                    ApiError::unprocessable("files", format!("sample {i} cannot be decoded"))
                        .with_detail("index", i),
                )
            };
            // Probed again here: the demuxer is forced to what the probe found.
            let probed = probe(path).map_err(|e| cannot(&e))?;
            let decoded = decode_mono(path, probed.demuxer, RATE, probed.duration + 0.5)
                .map_err(|e| cannot(&e))?;
            let checked =
                check_sample(&decoded).and_then(|()| check_speech(&decoded, self.stt.vad()));
            if let Err(problem) = checked {
                return Err(JobFailure::refused(
                    ApiError::new(ErrorCode::UnprocessableEntity)
                        .with_message(format!("Sample {i}: {problem}."))
                        .with_detail("parameter", "files")
                        .with_detail("index", i)
                        .with_detail("reason", problem.to_string()),
                ));
            }
            samples.push(decoded);
        }
        Ok(samples)
    }

    /// The voice the samples make (blocking), by `deadline` for a neural
    /// clone.
    fn make(
        &self,
        paths: &[PathBuf],
        req: &CloneRequest,
        deadline: Instant,
        ctx: &JobContext,
    ) -> Result<Made, JobFailure> {
        let samples = self.decode(paths)?;
        let seconds: f64 = samples
            .iter()
            .map(|s| s.len() as f64 / f64::from(RATE))
            .sum();
        if !(MIN_SAMPLE_SECONDS..=MAX_SAMPLE_SECONDS).contains(&seconds) {
            return Err(JobFailure::refused(samples_out_of_range(seconds)));
        }
        // The analysis first: it is what refuses samples (too little voiced
        // speech), so a refusal comes before the slower steps.
        let profile = analyse(&samples)
            .map_err(|p| JobFailure::refused(ApiError::unprocessable("files", p.to_string())))?;
        // The language is heard on the first 30 s of the first sample.
        let first = &samples[0];
        let language = match req.language.clone() {
            Some(l) => l,
            None => self.hear_language(&first[..first.len().min(30 * RATE as usize)])?,
        };
        let world_base = self.tts.closest(&profile, &language).map(|v| v.id.clone());
        let made = match req.method {
            CloneMethod::Neural => {
                let report = |share: f32| ctx.set_progress(10 + (share * 80.0) as i64);
                let cancelled = || ctx.is_cancelled();
                let maker = neural::Maker {
                    tts: &self.tts,
                    stt: &self.stt,
                    stock: &self.stock,
                    report: &report,
                    cancelled: &cancelled,
                };
                maker.make(
                    &samples,
                    &profile,
                    &language,
                    world_base.as_deref(),
                    None,
                    deadline,
                )?
            }
            CloneMethod::World => None,
        };
        if made.is_none() && req.method == CloneMethod::Neural {
            // No Kokoro voice speaks the language: a WORLD clone is made
            // instead of the neural one the hold was for, at its own price.
            ctx.meter_blocking(world_units(req.sample_seconds))?;
        }
        if let Some(voice) = made {
            // A neural clone's preview is the clone speaking.
            let spoken = speak_neural(
                &self.tts,
                &voice.base_voice_id,
                voice.styled(),
                preview_text(&language),
                None,
                1.0,
                |_, _, _| !ctx.is_cancelled(),
            )
            .map_err(crate::tts::tts_failure)?;
            let preview = encode(&spoken, AudioFormat::Mp3, spoken.sample_rate)
                .map_err(|e| JobFailure::retry(ErrorCode::EncodingFailed, e.to_string()))?;
            return Ok(Made {
                profile,
                preview,
                language,
                base_voice_id: Some(voice.base_voice_id.clone()),
                similarity: Some(VoiceSimilarity {
                    samples: voice.samples,
                    base: voice.base,
                    held_out: Some(voice.held_out.clone()),
                }),
                neural: Some(voice),
            });
        }
        // A WORLD clone's preview is the first 10 s of the first sample.
        let preview = encode(
            &Audio::new(first[..first.len().min(10 * RATE as usize)].to_vec(), RATE),
            AudioFormat::Mp3,
            RATE,
        )
        .map_err(|e| JobFailure::retry(ErrorCode::EncodingFailed, e.to_string()))?;
        let similarity = world_base.as_deref().and_then(|base| {
            self.similarity(&samples, base, &profile, &language)
                .map_err(|e| tracing::warn!("cloned voice's similarity not measured: {e}"))
                .ok()
        });
        Ok(Made {
            profile,
            preview,
            language,
            base_voice_id: world_base,
            similarity,
            neural: None,
        })
    }

    /// How alike the samples and the voice's speech are (a preview
    /// sentence in its language), and the samples and its base voice
    /// unconverted: cosine similarities of speaker embeddings.
    fn similarity(
        &self,
        samples: &[Vec<f32>],
        base: &str,
        profile: &VoiceProfile,
        language: &str,
    ) -> Result<VoiceSimilarity, String> {
        let encoder = self.stt.encoder()?;
        let heard: Vec<Embedding> = samples
            .iter()
            .map(|s| encoder.embed_at(s, RATE).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        let target = Embedding::mean(&heard).ok_or("no samples")?;
        let print = |sound| voiceprint(&self.tts, encoder, base, sound, language);
        Ok(VoiceSimilarity {
            samples: print(Sound::Converted(profile))?.similarity(&target),
            base: print(Sound::Own)?.similarity(&target),
            held_out: None,
        })
    }

    /// The language of a sample (24 kHz) as the recogniser hears it (ISO
    /// 639-1), or `en` when no recogniser is installed.
    fn hear_language(&self, sample: &[f32]) -> Result<String, JobFailure> {
        let Some(model) = self.stt.model(None) else {
            return Ok("en".to_owned());
        };
        let pcm = resample(sample, RATE, 16_000);
        detect_language(model.as_ref(), self.stt.gate(), &pcm)
            .map(|(code, _)| code)
            .map_err(|e| JobFailure::retry(ErrorCode::RecognitionFailed, e.to_string()))
    }
}

#[async_trait::async_trait]
impl RequestPipeline for VoiceClonePipeline {
    type Request = CloneRequest;

    async fn work(&self, ctx: JobContext, req: CloneRequest) -> Result<Value, JobFailure> {
        let account = ctx.job.account_id.clone();
        let done = json!({ "voiceId": req.voice_id });
        // A retried job whose first attempt recorded the voice is done.
        let found = self.db.voice(&account, &req.voice_id).await;
        if found.map_err(JobFailure::storage)?.is_some() {
            return Ok(done);
        }
        let dir = tempfile::tempdir().map_err(JobFailure::storage)?;
        let mut paths = Vec::new();
        for (i, key) in req.samples.iter().enumerate() {
            let scratch = dir.path().join(format!("sample-{i}"));
            let path = ctx
                .blobs
                .readable_file(key, &scratch)
                .await
                .map_err(JobFailure::storage)?;
            paths.push(path);
        }
        ctx.set_progress(10);
        let deadline = Instant::now() + Duration::from_secs_f64(req.quality.seconds());
        let (this, job, request) = (self.clone(), ctx.clone(), req.clone());
        let made = ctx
            .blocking(move || this.make(&paths, &request, deadline, &job))
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        ctx.set_progress(95);
        let preview_key = cloned_preview_key(&account, &req.voice_id);
        ctx.blobs
            .put(&preview_key, made.preview.into())
            .await
            .map_err(JobFailure::storage)?;
        let neural = match made.neural {
            Some(voice) => {
                let key = cloned_styles_key(&account, &req.voice_id);
                let bytes: Vec<u8> = voice.styles.iter().flat_map(|x| x.to_le_bytes()).collect();
                ctx.blobs
                    .put(&key, bytes.into())
                    .await
                    .map_err(JobFailure::storage)?;
                Some(voice.stored(key))
            }
            None => None,
        };
        let stored = StoredVoice {
            base_voice_id: made.base_voice_id,
            profile: made.profile,
            similarity: made.similarity,
            neural,
        };
        let record = VoiceRecord {
            id: req.voice_id,
            account_id: account,
            name: req.name,
            description: req.description,
            labels: req.labels,
            language: made.language,
            gender: stored.profile.gender.clone(),
            profile: serde_json::to_value(&stored)
                .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))?,
            preview_key,
            created_at: 0,
        };
        self.db
            .create_voice(record)
            .await
            .map_err(JobFailure::storage)?;
        Ok(done)
    }
}
