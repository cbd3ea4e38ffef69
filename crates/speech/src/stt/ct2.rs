//! Whisper on CTranslate2 (the runtime faster-whisper uses): int8 weights
//! and kernels, through `mediagen-ct2` (loaded at run time, so a server
//! without it still starts). The model is
//! a CTranslate2 folder (`model.bin`, `config.json`, `vocabulary.txt`);
//! features, prompts, the temperature fallback and the reading of timestamp
//! tokens are done here, as whisper's own decoding loop does them.

use std::path::Path;
use std::sync::Arc;

use mediagen_ct2::{EncodeOn, Encoded, Library, Options, Whisper};

use super::mel::{Mel, WINDOW};
use super::{
    compression_ratio, Decoding, Segment, SpeechToText, SttError, SttOptions, SttSession, Window,
    Word,
};
use mediagen_bpe::Bpe;

pub use mediagen_ct2::library_path;

/// The special tokens of a whisper vocabulary.
struct Specials {
    sot: usize,
    eot: usize,
    transcribe: usize,
    translate: usize,
    start_of_prev: usize,
    /// The first timestamp token, `<|0.00|>`; each next one is 20 ms later.
    timestamp_begin: usize,
}

pub struct Ct2Engine {
    name: String,
    model: Whisper,
    /// Windows decoded at once.
    decoders: usize,
    multilingual: bool,
    mel: Mel,
    tokens: Vec<String>,
    specials: Specials,
    /// Prompts are tokenized with the model's own BPE (tokenizer.json).
    bpe: Option<Bpe>,
    byte_of: std::collections::HashMap<char, u8>,
}

fn fail(e: String) -> SttError {
    SttError::Failed(e)
}

/// Seconds per timestamp token and per encoder frame.
const TIME_STEP: f64 = 0.02;
/// Samples per mel frame.
const HOP: usize = 160;
/// Threads of the decoder (the encoder takes the configured number).
const DECODER_THREADS: usize = 1;
/// Whisper's fallback temperatures.
const TEMPERATURES: [f32; 6] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
/// A live decoding (any but [`Decoding::Full`]) stops
/// after this many tokens, and this many more a second of its sound: far
/// more than the fastest speech needs, so a loop ends within a few times
/// the window's own text rather than at the decoder's 448.
const LIVE_TOKENS: usize = 16;
const LIVE_TOKENS_PER_SECOND: f64 = 12.0;

fn bpe_from_tokenizer_json(path: &Path) -> Result<Bpe, String> {
    let json = mediagen_bpe::read_json(path)?;
    let vocab = serde_json::from_value(json["model"]["vocab"].clone())
        .map_err(|e| format!("{}: vocab: {e}", path.display()))?;
    let merges: Vec<String> = json["model"]["merges"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| match m {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Array(p) => {
                        Some(format!("{} {}", p.first()?.as_str()?, p.get(1)?.as_str()?))
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let eot = serde_json::json!({
        "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
    });
    Bpe::new(vocab, &merges.join("\n"), &[eot])
}

impl Ct2Engine {
    /// Loads a CTranslate2 whisper folder; `name` is what requests call it.
    /// The encoder runs on `threads` threads; `decoders` windows decode at
    /// once, each on one thread.
    pub fn load(
        lib: &Arc<Library>,
        dir: &Path,
        name: &str,
        threads: usize,
        decoders: usize,
    ) -> Result<Self, String> {
        let vocab_path = dir.join("vocabulary.txt");
        let tokens: Vec<String> = std::fs::read_to_string(&vocab_path)
            .map_err(|e| format!("{}: {e}", vocab_path.display()))?
            .lines()
            .map(str::to_owned)
            .collect();
        let id = |t: &str| {
            tokens
                .iter()
                .position(|x| x == t)
                .ok_or_else(|| format!("{}: no {t}", vocab_path.display()))
        };
        let specials = Specials {
            sot: id("<|startoftranscript|>")?,
            eot: id("<|endoftext|>")?,
            transcribe: id("<|transcribe|>")?,
            translate: id("<|translate|>")?,
            start_of_prev: id("<|startofprev|>")?,
            timestamp_begin: id("<|notimestamps|>")? + 1,
        };
        let bpe = bpe_from_tokenizer_json(&dir.join("tokenizer.json"))
            .map_err(|e| tracing::warn!(model = name, "prompts are ignored: {e}"))
            .ok();
        // The encoder's large products gain from every thread; the
        // decoder's small steps lose to a second thread's synchronisation
        // (beam 5 on base: 1.26 s a window on one thread, 1.84 s on two).
        let model = Whisper::load(lib, dir, threads, decoders, DECODER_THREADS, "int8")?;
        let (multilingual, n_mels) = (model.multilingual(), model.n_mels());
        let byte_of = mediagen_bpe::byte_chars()
            .iter()
            .enumerate()
            .map(|(b, &c)| (c, b as u8))
            .collect();
        Ok(Self {
            name: name.to_owned(),
            model,
            decoders: decoders.max(1),
            multilingual,
            mel: Mel::new(n_mels),
            tokens,
            specials,
            bpe,
            byte_of,
        })
    }

    /// The timestamp token of `seconds` from a window's start.
    fn timestamp(&self, seconds: f64) -> usize {
        let steps = (seconds / TIME_STEP).round().clamp(0.0, 1500.0) as usize;
        self.specials.timestamp_begin + steps
    }

    /// Text of token ids (byte-level pieces joined, then read as UTF-8).
    fn text(&self, ids: &[usize]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .filter_map(|&i| self.tokens.get(i))
            .flat_map(|t| t.chars().filter_map(|c| self.byte_of.get(&c).copied()))
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn encode(&self, audio: &[f32], on: EncodeOn) -> Result<Encoded<'_>, SttError> {
        let began = std::time::Instant::now();
        let (features, frames) = self.mel.window(audio);
        let enc = self
            .model
            .encode(&features, self.mel.n_mels(), WINDOW, frames, on)
            .map_err(fail)?;
        super::counts::encoded(began.elapsed());
        Ok(enc)
    }
}

/// One decoding's result.
#[derive(Clone)]
struct Decoded {
    ids: Vec<usize>,
    avg_logprob: f64,
    no_speech: f64,
}

/// The most likely language of a window: ISO 639-1 code and probability.
fn detect(enc: &Encoded<'_>) -> Result<(String, f64), SttError> {
    let best = enc.detect(1).map_err(fail)?;
    let (token, p) = best
        .into_iter()
        .next()
        .ok_or_else(|| fail("no language detected".into()))?;
    let code = token
        .trim_start_matches("<|")
        .trim_end_matches("|>")
        .to_owned();
    Ok((code, f64::from(p)))
}

/// Greedy beam search of 5 at temperature 0 (of 1 for a `draft`), else
/// best of 5 samples; at most `max_length` tokens.
fn generate(
    enc: &Encoded<'_>,
    prompt: &[usize],
    temperature: f32,
    draft: bool,
    max_length: usize,
) -> Result<Decoded, SttError> {
    let base = Options {
        max_length,
        ..Options::default()
    };
    let opts = if draft {
        Options {
            beam_size: 1,
            ..base
        }
    } else if temperature > 0.0 {
        Options {
            beam_size: 1,
            temperature,
            num_hypotheses: 5,
            sampling_topk: 0,
            ..base
        }
    } else {
        base
    };
    let g = enc.generate(prompt, &opts).map_err(fail)?;
    // The score is the summed log-probability over the length (length
    // penalty 1); whisper averages over the length plus the end token.
    let len = g.ids.len() as f64;
    Ok(Decoded {
        avg_logprob: f64::from(g.score) * len / (len + 1.0),
        ids: g.ids,
        no_speech: f64::from(g.no_speech),
    })
}

/// Word times by cross-attention alignment of `text` (token ids), seconds
/// from the window's start: (start, end, mean probability) for each word,
/// given as a range of `text`.
fn align(
    enc: &Encoded<'_>,
    start: &[usize],
    text: &[usize],
    words: &[std::ops::Range<usize>],
) -> Result<Vec<(f64, f64, f64)>, SttError> {
    let a = enc.align(start, text, 7).map_err(fail)?;
    // When each text token (and the end token) starts: where the path
    // first reaches its index.
    let mut starts = vec![None; text.len() + 1];
    for &(t, f) in &a.path {
        if let Some(slot) = starts.get_mut(t) {
            slot.get_or_insert(f as f64 * TIME_STEP);
        }
    }
    let mut last = 0.0;
    let starts: Vec<f64> = starts
        .into_iter()
        .map(|s| {
            last = s.unwrap_or(last);
            last
        })
        .collect();
    Ok(words
        .iter()
        .map(|r| {
            let p = &a.probs[r.clone()];
            let mean = f64::from(p.iter().sum::<f32>()) / p.len().max(1) as f64;
            (starts[r.start], starts[r.end], mean)
        })
        .collect())
}

impl SpeechToText for Ct2Engine {
    fn name(&self) -> &str {
        &self.name
    }

    fn multilingual(&self) -> bool {
        self.multilingual
    }

    fn lanes(&self) -> usize {
        self.decoders
    }

    fn session(&self, opts: &SttOptions) -> Result<Box<dyn SttSession + '_>, SttError> {
        let mut history = Vec::new();
        if let (Some(text), Some(bpe)) = (&opts.prompt, &self.bpe) {
            let ids = bpe.pieces_of(&format!(" {}", text.trim()));
            history.extend(ids.iter().map(|&i| i as usize));
        }
        Ok(Box::new(Ct2Session {
            engine: self,
            history,
            opts: opts.clone(),
            ready: None,
            encode_on: EncodeOn::Encoder,
            lead: 0.0,
        }))
    }
}

struct Ct2Session<'a> {
    engine: &'a Ct2Engine,
    /// The user's prompt and the text so far (token ids): the decoder sees
    /// the last of it before each window, as whisper conditions on the
    /// previous text.
    history: Vec<usize>,
    opts: SttOptions,
    /// The window the language was detected on, encoded: the first window
    /// to transcribe is the same audio.
    ready: Option<(Vec<f32>, Encoded<'a>)>,
    /// Where this session's windows are encoded: on the encoder's threads,
    /// or beside other sessions on a decoding thread.
    encode_on: EncodeOn,
    /// Seconds from the next window's start where a lead-in ends
    /// ([`SttSession::lead_in`]): the words before are context only.
    lead: f64,
}

/// How far (seconds) a decoded stretch's timestamps may stray past the
/// middle of the pause that ends a lead-in and still be taken as wholly on
/// their side of it.
const LEAD_EDGE: f64 = 0.2;

/// Tokens of previous text a prompt keeps (half the decoder's context).
const PROMPT_TOKENS: usize = 223;

/// A decoded stretch: (start, end) in seconds and its text tokens.
type Piece = (f64, f64, Vec<usize>);

impl Ct2Session<'_> {
    /// The start sequence: start of transcript, language and task (English
    /// models take the start token alone).
    fn start(&self, language: &str) -> Vec<usize> {
        let e = self.engine;
        let s = &e.specials;
        if !e.multilingual {
            return vec![s.sot];
        }
        let lang = format!("<|{language}|>");
        let mut seq = vec![s.sot];
        if let Some(id) = e.tokens.iter().position(|t| *t == lang) {
            seq.push(id);
        }
        seq.push(if self.opts.translate {
            s.translate
        } else {
            s.transcribe
        });
        seq
    }

    /// Decodes one window with whisper's temperature fallback: greedy beam
    /// search first, then sampling at rising temperatures while the text is
    /// too repetitive or too unlikely (unless the window is silence). A
    /// sampled decoding that says what the greedy one said, word for word,
    /// ends the fallback with the greedy text: the repetition is in the
    /// speech (a line said twice), not a decoding loop, and the four
    /// hotter rounds would say it again (each costs as much as the first:
    /// 2.4× the time of a 101-s clip with one such window, bench/stt_corpus.sh).
    /// Returns the decoding kept, its temperature and how many decodings
    /// were made.
    fn decode(
        &self,
        enc: &Encoded<'_>,
        prompt: &[usize],
        length: f64,
    ) -> Result<(Decoded, f32, usize), SttError> {
        let max_length = match self.opts.decoding {
            Decoding::Full => Options::default().max_length,
            Decoding::Bounded | Decoding::Beam | Decoding::Draft => {
                (prompt.len() + LIVE_TOKENS + (length * LIVE_TOKENS_PER_SECOND).ceil() as usize)
                    .min(Options::default().max_length)
            }
        };
        let mut best: Option<(Decoded, f32, usize)> = None;
        let mut greedy: Option<(Decoded, String)> = None;
        for (n, &t) in TEMPERATURES.iter().enumerate() {
            let d = generate(
                enc,
                prompt,
                t,
                self.opts.decoding == Decoding::Draft,
                max_length,
            )?;
            if matches!(self.opts.decoding, Decoding::Draft | Decoding::Beam) {
                // One decoding, taken as it is.
                return Ok((d, t, n + 1));
            }
            let text = self.engine.text(&self.text_ids(&d.ids));
            let silent = d.no_speech > 0.6 && d.avg_logprob < -1.0;
            let looping = compression_ratio(&text) > 2.4;
            let good = !looping && d.avg_logprob >= -1.0;
            if good || silent {
                return Ok((d, t, n + 1));
            }
            if self.opts.decoding == Decoding::Bounded {
                return self.unlooped(enc, prompt, d, &text, looping, max_length);
            }
            match greedy.take() {
                None => greedy = Some((d.clone(), text)),
                Some((first, said)) if said == text && first.avg_logprob >= -1.0 => {
                    return Ok((first, 0.0, n + 1));
                }
                Some(g) => greedy = Some(g),
            }
            if best
                .as_ref()
                .is_none_or(|b| d.avg_logprob > b.0.avg_logprob)
            {
                best = Some((d, t, TEMPERATURES.len()));
            }
        }
        best.ok_or_else(|| fail("no decoding".into()))
    }

    /// [`Decoding::Bounded`]'s one round more: where the beam search loops
    /// and was conditioned on previous text (what most often starts a
    /// loop), it is decoded again without it; the less repetitive of the
    /// two is kept. Low likelihood alone is kept as it is.
    fn unlooped(
        &self,
        enc: &Encoded<'_>,
        prompt: &[usize],
        first: Decoded,
        text: &str,
        looping: bool,
        max_length: usize,
    ) -> Result<(Decoded, f32, usize), SttError> {
        let sot = self.engine.specials.sot;
        let bare = &prompt[prompt.iter().rposition(|&t| t == sot).unwrap_or(0)..];
        if !looping || bare.len() == prompt.len() {
            return Ok((first, 0.0, 1));
        }
        let second = generate(enc, bare, 0.0, false, max_length)?;
        let again = self.engine.text(&self.text_ids(&second.ids));
        Ok(if compression_ratio(&again) <= compression_ratio(text) {
            (second, 0.0, 2)
        } else {
            (first, 0.0, 2)
        })
    }

    fn text_ids(&self, ids: &[usize]) -> Vec<usize> {
        ids.iter()
            .copied()
            .filter(|&i| i < self.engine.specials.eot)
            .collect()
    }

    /// Splits decoded ids at timestamp tokens into pieces of text with their
    /// times (seconds from the window's start, within `length`); also
    /// returns where decoding should resume (seconds), `length` when the
    /// window is done.
    fn pieces(&self, ids: &[usize], length: f64) -> (Vec<Piece>, f64) {
        let s = &self.engine.specials;
        let (mut pieces, mut text, mut open) = (Vec::new(), Vec::new(), None::<f64>);
        let mut last_end = 0.0;
        let mut ended_on_pair = false;
        for &id in ids {
            if id == s.eot {
                break;
            }
            if id >= s.timestamp_begin {
                let t = ((id - s.timestamp_begin) as f64 * TIME_STEP).min(length);
                if text.is_empty() {
                    ended_on_pair = open.is_some();
                    open = Some(t);
                } else {
                    pieces.push((open.unwrap_or(last_end), t, std::mem::take(&mut text)));
                    last_end = t;
                    open = None;
                    ended_on_pair = false;
                }
            } else if id < s.eot {
                text.push(id);
                ended_on_pair = false;
            }
        }
        if !text.is_empty() {
            pieces.push((open.unwrap_or(last_end), length, text));
            return (pieces, length);
        }
        // "…<|t1|><|t2|>" then the end: speech was cut at t2; resume there.
        match (ended_on_pair, open) {
            (true, Some(t)) if t > 0.0 => (pieces, t),
            _ => (pieces, length),
        }
    }
}

/// The part of `audio` one window holds.
fn window_of(audio: &[f32]) -> &[f32] {
    &audio[..audio.len().min(WINDOW * HOP)]
}

/// How many of a window's text tokens (its pieces' in order) are a
/// lead-in's that ends `lead` seconds in (the middle of a pause), and
/// where the rest begins: stretches ending by the pause are the lead-in's,
/// those starting in it the window's own; one that runs across it is split
/// at its first word aligned after the pause's middle (`words`: the first
/// token and start of each word, asked for only then).
fn lead_split(
    pieces: &[Piece],
    lead: f64,
    words: impl FnOnce() -> Result<Vec<(usize, f64)>, SttError>,
) -> Result<(usize, f64), SttError> {
    let mut seen = 0;
    for (s, e, ids) in pieces {
        if *e <= lead + LEAD_EDGE {
            seen += ids.len();
            continue;
        }
        if *s >= lead - LEAD_EDGE {
            return Ok((seen, *s));
        }
        let within = seen..seen + ids.len();
        let first = words()?
            .into_iter()
            .find(|&(token, at)| within.contains(&token) && at >= lead - LEAD_EDGE / 2.0);
        return Ok(first.unwrap_or((within.end, *e)));
    }
    Ok((seen, lead))
}

impl<'a> SttSession for Ct2Session<'a> {
    fn detect_language(&mut self, audio: &[f32]) -> Result<(String, f64), SttError> {
        let window = window_of(audio);
        let enc = self.encoded(window)?;
        let language = detect(&enc);
        self.ready = Some((window.to_vec(), enc));
        language
    }

    fn transcribe(&mut self, audio: &[f32], language: &str) -> Result<Window, SttError> {
        self.transcribe_before(audio, language, &[])
    }

    /// Sections side by side each encode on their own decoding thread:
    /// two encodings at once on the encoder's two threads each would wait
    /// for one another, and take a core from a decoding.
    fn beside_others(&mut self) {
        self.encode_on = EncodeOn::Aside;
    }

    fn takes_lead_in(&self) -> bool {
        true
    }

    fn lead_in(&mut self, seconds: f64) {
        self.lead = seconds.max(0.0);
    }

    /// The decoder runs on one thread, leaving a core idle: the next window
    /// is encoded meanwhile on a free replica of the decoder pool (one
    /// thread, so it takes no core from the decoding; the caller passes a
    /// `next` only when a second decoding permit is free), and its encoding
    /// kept for the next call if that call's audio is the same. An encoding
    /// takes about 1.2 s on one thread, a window's decoding 1–2.5 s on base.
    fn transcribe_before(
        &mut self,
        audio: &[f32],
        language: &str,
        next: &[f32],
    ) -> Result<Window, SttError> {
        let window = window_of(audio);
        let enc = self.encoded(window)?;
        let next = window_of(next);
        if next.is_empty() {
            return self.decode_window(window, &enc, language);
        }
        let engine = self.engine;
        let (decoded, prepared) = std::thread::scope(|s| {
            let prepare = s.spawn(move || engine.encode(next, EncodeOn::Aside));
            let decoded = self.decode_window(window, &enc, language);
            (decoded, prepare.join())
        });
        // A failed or panicked encoding is left to the next call to redo.
        if let Ok(Ok(prepared)) = prepared {
            self.ready = Some((next.to_vec(), prepared));
        }
        decoded
    }
}

impl<'a> Ct2Session<'a> {
    /// The window's encoding: the language detection's, or a new one.
    fn encoded(&mut self, window: &[f32]) -> Result<Encoded<'a>, SttError> {
        match self.ready.take() {
            Some((audio, enc)) if audio == window => Ok(enc),
            _ => self.engine.encode(window, self.encode_on),
        }
    }

    fn decode_window(
        &mut self,
        window: &[f32],
        enc: &Encoded<'_>,
        language: &str,
    ) -> Result<Window, SttError> {
        let rate = super::chunk::RATE as f64;
        let length = window.len() as f64 / rate;
        let start = self.start(language);
        let mut prompt = Vec::new();
        if !self.history.is_empty() {
            let from = self.history.len().saturating_sub(PROMPT_TOKENS);
            prompt.push(self.engine.specials.start_of_prev);
            prompt.extend_from_slice(&self.history[from..]);
        }
        prompt.extend_from_slice(&start);
        let began = std::time::Instant::now();
        let (d, temperature, decodings) = self.decode(enc, &prompt, length)?;
        tracing::debug!(length, temperature, tokens = d.ids.len(), "window decoded");
        let tokens = self.text_ids(&d.ids).len();
        super::counts::decoded(tokens, decodings - 1, self.lead > 0.0, began.elapsed());
        let mut out = Window {
            consumed: window.len(),
            ..Window::default()
        };
        let lead = std::mem::take(&mut self.lead);
        let silent = d.no_speech > 0.6 && d.avg_logprob < -1.0;
        if silent {
            return Ok(out);
        }
        let (pieces, resume) = self.pieces(&d.ids, length);
        // The lead-in's text tokens (context, not returned) and where the
        // window's own words begin.
        let (context, own_start) = if lead > 0.0 {
            self.lead_tokens(enc, &start, &pieces, lead)?
        } else {
            (0, 0.0)
        };
        if self.opts.words {
            out.words = self.words(enc, &start, &pieces, context)?;
        }
        // Text decoded by sampling at a high temperature is not trusted as
        // context.
        if temperature > 0.5 {
            self.history.clear();
        }
        let mut seen = 0;
        for (s, e, ids) in &pieces {
            // Context keeps the timestamps too (as whisper's does), or the
            // decoder learns from it to stop giving them.
            self.history.push(self.engine.timestamp(*s));
            self.history.extend_from_slice(ids);
            self.history.push(self.engine.timestamp(*e));
            let from = context.saturating_sub(seen).min(ids.len());
            seen += ids.len();
            let text = self.engine.text(&ids[from..]).trim().to_owned();
            if text.is_empty() {
                continue;
            }
            let s = if from > 0 {
                own_start.clamp(*s, *e)
            } else {
                *s
            };
            out.segments.push(Segment {
                id: out.segments.len(),
                start: s,
                end: e.max(s),
                avg_logprob: d.avg_logprob,
                no_speech_prob: d.no_speech,
                compression_ratio: compression_ratio(&text),
                speaker: None,
                text,
            });
        }
        // The decoder may also stop early claiming silence; if 0.8 s or more
        // follows its last timestamp and 0.3 s of it is speech, the rest is
        // left for the next window (as whisper's loop seeks there). A
        // shorter tail is left alone: decoding a fragment invites the model
        // to invent a sentence.
        let last_end = pieces.last().map_or(0.0, |p| p.1);
        let resume = if resume >= length && last_end > 0.0 && last_end < length - 0.8 {
            let rest = &window[((last_end * rate) as usize).min(window.len())..];
            if super::chunk::has_speech(rest, window) {
                last_end
            } else {
                resume
            }
        } else {
            resume
        };
        // Every piece ends by `resume`: what follows is decoded next time.
        if resume > 0.0 && resume < length {
            out.consumed = ((resume * rate) as usize / HOP * HOP).min(window.len());
        }
        Ok(out)
    }
}

impl Ct2Session<'_> {
    /// The pieces' text tokens and their words (as ranges of the tokens).
    fn spans(&self, pieces: &[Piece]) -> (Vec<usize>, Vec<std::ops::Range<usize>>) {
        let text: Vec<usize> = pieces.iter().flat_map(|p| p.2.iter().copied()).collect();
        let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
        for (i, &id) in text.iter().enumerate() {
            let piece = self.engine.text(&[id]);
            match spans.last_mut() {
                Some(r) if !piece.starts_with(' ') => r.end = i + 1,
                _ => spans.push(i..i + 1),
            }
        }
        (text, spans)
    }

    /// [`lead_split`] on a window's pieces, aligning their words only
    /// where a stretch runs across the pause.
    fn lead_tokens(
        &self,
        enc: &Encoded<'_>,
        start: &[usize],
        pieces: &[Piece],
        lead: f64,
    ) -> Result<(usize, f64), SttError> {
        lead_split(pieces, lead, || {
            let (text, spans) = self.spans(pieces);
            let times = align(enc, start, &text, &spans)?;
            Ok(spans
                .into_iter()
                .zip(times)
                .map(|(r, t)| (r.start, t.0))
                .collect())
        })
    }

    /// Word timestamps for the pieces of one window, seconds from its
    /// start, leaving out the words of the first `skip` text tokens (a
    /// lead-in's): a token that starts with a space starts a word.
    fn words(
        &self,
        enc: &Encoded<'_>,
        start: &[usize],
        pieces: &[Piece],
        skip: usize,
    ) -> Result<Vec<Word>, SttError> {
        let e = self.engine;
        let (text, spans) = self.spans(pieces);
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let times = align(enc, start, &text, &spans)?;
        let mut words: Vec<Word> = spans
            .iter()
            .zip(times)
            .filter(|(r, _)| r.start >= skip)
            .map(|(r, (s, end, p))| Word {
                word: e.text(&text[r.clone()]).trim().to_owned(),
                start: s,
                end: end.max(s),
                probability: p,
                speaker: None,
            })
            .filter(|w| !w.word.is_empty())
            .collect();
        super::word_times::clamp_long_words(&mut words);
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lead-in's stretches are context up to the middle of the pause
    /// that ends it; one that runs across is split at its first word after
    /// it, and words are aligned only then.
    #[test]
    fn a_lead_in_ends_in_the_middle_of_its_pause() {
        let none = || -> Result<Vec<(usize, f64)>, SttError> { panic!("no alignment needed") };
        // Two stretches before a pause at 2.9-3.3 s (middle 3.1), one after.
        let pieces: Vec<Piece> = vec![
            (0.0, 1.5, vec![1, 2]),
            (1.5, 3.2, vec![3, 4, 5]),
            (3.0, 6.0, vec![6, 7]),
        ];
        assert_eq!(lead_split(&pieces, 3.1, none).unwrap(), (5, 3.0));
        // A window that ends before the pause is all lead-in.
        assert_eq!(lead_split(&pieces[..2], 3.1, none).unwrap(), (5, 3.1));
        // One stretch across the pause: split at the first word after it.
        let across: Vec<Piece> = vec![(0.0, 6.0, vec![1, 2, 3, 4, 5, 6])];
        let words = || Ok(vec![(0, 0.1), (2, 1.9), (3, 3.2), (5, 4.8)]);
        assert_eq!(lead_split(&across, 3.1, words).unwrap(), (3, 3.2));
        // No word after it: the stretch is the lead-in's.
        let early = || Ok(vec![(0, 0.1), (2, 1.9)]);
        assert_eq!(lead_split(&across, 3.1, early).unwrap(), (6, 6.0));
    }

    /// Whisper's own tokenizer file splits and merges text exactly as the
    /// reference does: the ids below are Hugging Face `tokenizers` 0.22's
    /// for `models/whisper/base/tokenizer.json` (installed by
    /// scripts/models.sh, which `make test`'s setup runs). Runs of spaces,
    /// contractions, digits, accents, tabs and other scripts are where a
    /// split without GPT-2's lookahead goes wrong.
    #[test]
    fn prompts_tokenize_as_the_reference_does() {
        let models = std::env::var_os("MEDIAGEN_MODELS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models"));
        let bpe = bpe_from_tokenizer_json(&models.join("whisper/base/tokenizer.json")).unwrap();
        let cases: [(&str, &[i64]); 8] = [
            ("Hello world", &[15947, 1002]),
            ("a  b", &[64, 220, 272]),
            (
                "It's   three o'clock,  isn't it?",
                &[
                    3522, 311, 220, 220, 220, 27583, 277, 6, 9023, 11, 220, 1943, 380, 309, 30,
                ],
            ),
            (
                " leading and trailing  ",
                &[5775, 293, 220, 17227, 4883, 220, 220],
            ),
            (
                "Numbers 12345 and 3.14!",
                &[45, 36353, 34466, 8465, 293, 805, 13, 7271, 0],
            ),
            (
                "naïve café — déjà vu",
                &[629, 15487, 303, 25118, 3466, 12027, 9732],
            ),
            (
                "tabs\tand\nnewlines",
                &[83, 17243, 197, 474, 198, 7686, 11045],
            ),
            (
                "日本語のテキスト",
                &[27311, 31348, 2972, 22985, 15535, 40498],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(bpe.pieces_of(text), want, "{text:?}");
        }
    }
}
