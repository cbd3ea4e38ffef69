//! `voice.design`: three voices made from a description's attributes
//! (`mediagen_jobs::voice_design`) by the designer
//! (`mediagen_speech::design`), each spoken once as its preview. A
//! preview's table is kept with the job (`jobs/<id>/design-<n>.styles`,
//! swept with it) until `POST /v1/voices {designId}` makes it a voice.

use std::sync::Arc;

use mediagen_core::voice::{VoiceProfile, STYLED_ENGINE};
use mediagen_core::ErrorCode;
use mediagen_jobs::voice_design::{speaks, DesignId, DesignRequest, PREVIEWS};
use mediagen_media::audio::resample;
use mediagen_media::media::encode;
use mediagen_media::{Audio, AudioFormat};
use mediagen_speech::design::{design, Designed, Stock, Wish};
use mediagen_speech::tts::{Style, TtsCatalog};
use mediagen_speech::voice::{analyse, RATE};
use mediagen_worker::{JobContext, JobFailure, RequestPipeline};
use serde_json::{json, Value};

use crate::tts::{speak_neural, tts_failure, Styled};

fn cancelled() -> JobFailure {
    JobFailure::abort(ErrorCode::Cancelled, "The job was cancelled.")
}

pub struct VoiceDesignPipeline {
    pub tts: Arc<TtsCatalog>,
}

/// One voice designed: the voice, what it said, and how that measured.
pub struct Made {
    pub designed: Designed,
    /// The catalog voice whose language and phonemes it speaks (its lead).
    pub base_voice_id: String,
    /// Its preview: the request's text spoken.
    pub audio: Audio,
    pub profile: VoiceProfile,
}

/// The three voices `req` asks for and their previews (blocking); stops
/// when `stop` says so, and reports its progress (0–100).
pub fn design_voices(
    tts: &TtsCatalog,
    req: &DesignRequest,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(i64),
) -> Result<Vec<Made>, JobFailure> {
    let a = &req.attributes;
    let mut voices: Vec<_> = tts
        .voices()
        .iter()
        .filter(|v| v.engine == STYLED_ENGINE && speaks(&v.language, &a.language))
        .collect();
    // Only the gender asked for is measured (the designer takes only it
    // when the language has it).
    if let Some(g) = &a.gender {
        if voices.iter().any(|v| &v.gender == g) {
            voices.retain(|v| &v.gender == g);
        }
    }
    let mut measured = Vec::new();
    for v in &voices {
        if stop() {
            return Err(cancelled());
        }
        let profile = tts.profile(&v.id).map_err(tts_failure)?;
        if let Some(table) = tts.style_table(&v.id) {
            measured.push((v.id.clone(), v.gender.clone(), profile, table));
        }
    }
    progress(30);
    let stock: Vec<Stock> = measured
        .iter()
        .map(|(id, gender, profile, table)| Stock {
            id,
            gender,
            profile,
            table,
        })
        .collect();
    let wish = Wish {
        gender: a.gender.clone(),
        age: a.age.clone(),
        pitch: a.pitch,
        pace: a.pace,
        brightness: a.brightness - 0.3 * a.rough,
    };
    let designs = design(&wish, &stock, req.seed, PREVIEWS);
    if designs.is_empty() {
        return Err(JobFailure::abort(
            ErrorCode::EngineUnavailable,
            format!("no voice table of {} is installed", a.language),
        ));
    }
    let mut made = Vec::new();
    for (i, designed) in designs.into_iter().enumerate() {
        // The lead voice's language and phonemes.
        let base = designed.blend[0].0.clone();
        let styled = Styled {
            style: Style {
                table: &designed.table,
                pitch: designed.pitch,
                formant: designed.formant,
                pace: designed.pace,
            },
            colour: &[],
        };
        let audio = speak_neural(tts, &base, styled, &req.text, None, 1.0, |_, _, _| !stop())
            .map_err(tts_failure)?;
        if stop() {
            return Err(cancelled());
        }
        let at_rate = resample(&audio.samples, audio.sample_rate, RATE);
        let profile = analyse(&[at_rate]).map_err(|e| {
            JobFailure::abort(
                ErrorCode::SynthesisFailed,
                format!("preview not measured: {e}"),
            )
        })?;
        made.push(Made {
            designed,
            base_voice_id: base,
            audio,
            profile,
        });
        progress(30 + 20 * (i as i64 + 1));
    }
    Ok(made)
}

#[async_trait::async_trait]
impl RequestPipeline for VoiceDesignPipeline {
    type Request = DesignRequest;

    async fn work(&self, ctx: JobContext, req: DesignRequest) -> Result<Value, JobFailure> {
        let tts = self.tts.clone();
        let (job, request) = (ctx.clone(), req.clone());
        let made = ctx
            .blocking(move || {
                let stop = || job.is_cancelled();
                let progress = |p| job.set_progress(p);
                design_voices(&tts, &request, &stop, &progress)
            })
            .await
            .map_err(|e| JobFailure::abort(ErrorCode::InternalError, e.to_string()))??;
        let mut previews = Vec::new();
        for (index, m) in made.into_iter().enumerate() {
            let preview = encode(&m.audio, AudioFormat::Mp3, m.audio.sample_rate)
                .map_err(|e| JobFailure::retry(ErrorCode::EncodingFailed, e.to_string()))?;
            let seconds = m.audio.samples.len() as f64 / f64::from(m.audio.sample_rate);
            let id = DesignId {
                job: ctx.job.id.clone(),
                index,
            };
            ctx.put_output(
                &format!("/previews/{index}/audioUrl"),
                &id.preview_name(),
                preview.into(),
            )
            .await?;
            let bytes: Vec<u8> = m
                .designed
                .table
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            ctx.blobs
                .put(&id.styles_key(), bytes.into())
                .await
                .map_err(JobFailure::storage)?;
            previews.push(json!({
                "designId": id.as_string(),
                "audioUrl": Value::Null,
                "duration": (seconds * 100.0).round() / 100.0,
                "baseVoiceId": m.base_voice_id,
                "gender": m.profile.gender,
                "language": req.attributes.language,
                "pitch": m.designed.pitch,
                "formant": m.designed.formant,
                "pace": m.designed.pace,
                "blend": m.designed.blend.iter()
                    .map(|(v, w)| json!({"voiceId": v, "weight": (w * 1000.0).round() / 1000.0}))
                    .collect::<Vec<_>>(),
                "profile": m.profile,
            }));
        }
        Ok(json!({
            "description": req.description,
            "text": req.text,
            "seed": req.seed,
            "attributes": {
                "gender": req.attributes.gender,
                "age": req.attributes.age,
                "language": req.attributes.language,
                "pitch": req.attributes.pitch,
                "pace": req.attributes.pace,
                "brightness": req.attributes.brightness,
                "rough": req.attributes.rough,
            },
            "understood": req.attributes.understood,
            "ignoredTerms": req.attributes.ignored,
            "previews": previews,
        }))
    }
}
