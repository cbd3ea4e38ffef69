//! whisper.cpp through `whisper-rs`: one model loaded once, a decoder state
//! per request (so requests can run side by side), reused chunk by chunk.

use std::path::Path;

use whisper_rs::{
    FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters, WhisperState,
};

use super::{Segment, SpeechToText, SttError, SttOptions, SttSession, Window, Word};

pub struct WhisperEngine {
    name: String,
    ctx: WhisperContext,
    threads: usize,
}

/// whisper.cpp ignores input shorter than a second; shorter chunks are
/// padded with silence.
const MIN_SAMPLES: usize = 16_000 * 11 / 10;

fn fail(e: whisper_rs::WhisperError) -> SttError {
    SttError::Failed(e.to_string())
}

impl WhisperEngine {
    /// Loads a ggml model file; its name is the file stem without `ggml-`.
    pub fn load(path: &Path, threads: usize) -> Result<Self, String> {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(|s| s.trim_start_matches("ggml-").to_owned())
            .unwrap_or_else(|| "whisper".into());
        // whisper.cpp and ggml log through `tracing` (levels and formatting
        // as every other line; no colours) instead of straight to stderr.
        whisper_rs::install_logging_hooks();
        let ctx = WhisperContext::new_with_params(path, WhisperContextParameters::default())
            .map_err(|e| e.to_string())?;
        Ok(Self {
            name,
            ctx,
            threads: threads.max(1),
        })
    }
}

impl WhisperEngine {
    /// Takes the file's whole stem as the name (`ggml-base`), for when the
    /// short name belongs to another model.
    pub fn rename_to_stem(&mut self, path: &Path) {
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            self.name = stem.to_owned();
        }
    }
}

impl SpeechToText for WhisperEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn multilingual(&self) -> bool {
        self.ctx.is_multilingual()
    }

    fn session(&self, opts: &SttOptions) -> Result<Box<dyn SttSession + '_>, SttError> {
        Ok(Box::new(WhisperSession {
            state: self.ctx.create_state().map_err(fail)?,
            threads: self.threads as i32,
            opts: opts.clone(),
        }))
    }
}

struct WhisperSession {
    state: WhisperState,
    threads: i32,
    opts: SttOptions,
}

impl SttSession for WhisperSession {
    fn detect_language(&mut self, audio: &[f32]) -> Result<(String, f64), SttError> {
        self.state
            .pcm_to_mel(audio, self.threads as usize)
            .map_err(fail)?;
        let (id, probs) = self
            .state
            .lang_detect(0, self.threads as usize)
            .map_err(fail)?;
        let code = whisper_rs::get_lang_str(id).unwrap_or("en").to_owned();
        Ok((
            code,
            f64::from(probs.get(id as usize).copied().unwrap_or(0.0)),
        ))
    }

    fn transcribe(&mut self, audio: &[f32], language: &str) -> Result<Window, SttError> {
        let consumed = audio.len();
        let duration = audio.len() as f64 / 16_000.0;
        let padded;
        let audio = if audio.len() < MIN_SAMPLES {
            padded = [audio, &vec![0.0; MIN_SAMPLES - audio.len()]].concat();
            &padded[..]
        } else {
            audio
        };
        let mut params = FullParams::new(SamplingStrategy::BeamSearch {
            beam_size: if self.opts.decoding == super::Decoding::Draft {
                1
            } else {
                5
            },
            patience: 1.0,
        });
        params.set_n_threads(self.threads);
        params.set_language(Some(language));
        params.set_translate(self.opts.translate);
        // Each chunk stands alone: no carried-over text that could make the
        // decoder repeat itself.
        params.set_no_context(true);
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_special(false);
        params.set_print_timestamps(false);
        params.set_token_timestamps(self.opts.words);
        if let Some(prompt) = &self.opts.prompt {
            params.set_initial_prompt(prompt);
        }
        self.state.full(params, audio).map_err(fail)?;
        let mut segments = Vec::new();
        let mut words = Vec::new();
        for (i, seg) in self.state.as_iter().enumerate() {
            let text = seg.to_str_lossy().map_err(fail)?.trim().to_owned();
            let (mut logprob, mut n) = (0.0, 0);
            for t in 0..seg.n_tokens() {
                let Some(tok) = seg.get_token(t) else {
                    continue;
                };
                let data = tok.token_data();
                let piece = tok.to_str_lossy().map_err(fail)?.into_owned();
                if piece.starts_with("[_") || piece.starts_with("<|") {
                    continue;
                }
                logprob += f64::from(data.plog);
                n += 1;
                if self.opts.words {
                    let (start, end) = (data.t0 as f64 / 100.0, data.t1 as f64 / 100.0);
                    let p = f64::from(data.p);
                    // Tokens that start with a space begin a new word.
                    if piece.starts_with(' ') || words.is_empty() {
                        words.push(Word {
                            word: piece.trim().to_owned(),
                            start,
                            end,
                            probability: p,
                            speaker: None,
                        });
                    } else if let Some(w) = words.last_mut() {
                        w.word.push_str(piece.trim());
                        w.end = end;
                        w.probability = w.probability.min(p);
                    }
                }
            }
            if text.is_empty() {
                continue;
            }
            segments.push(Segment {
                id: i,
                start: seg.start_timestamp() as f64 / 100.0,
                end: (seg.end_timestamp() as f64 / 100.0).min(duration),
                avg_logprob: if n > 0 { logprob / f64::from(n) } else { 0.0 },
                no_speech_prob: f64::from(seg.no_speech_probability()),
                compression_ratio: super::compression_ratio(&text),
                speaker: None,
                text,
            });
        }
        words.retain(|w| !w.word.is_empty());
        Ok(Window {
            segments,
            words,
            consumed,
        })
    }
}
