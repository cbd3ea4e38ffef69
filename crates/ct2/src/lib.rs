//! A safe interface to CTranslate2's Whisper model (the runtime
//! faster-whisper uses: int8 weights and kernels). CTranslate2 is a C++
//! library; `native/ct2_whisper.cpp` wraps the few calls we need in a C
//! interface, and the setup step (scripts/models.sh) builds it against the
//! pinned CTranslate2 release into `<models>/.ct2/lib/libmediagen_ct2.so`.
//! It is loaded at run time, so a server without it still starts.
//!
//! Errors are CTranslate2's messages as text.

use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};
use std::path::Path;
use std::sync::Arc;

/// The CTranslate2 release the shim must be built against (the one
/// models.lock pins, headers and library alike).
pub const CT2_RELEASE: &str = "4.7.1";

/// The version of the shim's C interface these declarations match
/// (`MG_CT2_ABI` in native/ct2_whisper.cpp).
pub const ABI: c_int = 2;

/// Decoding options (the C side's `mg_ct2_opts`).
#[repr(C)]
#[derive(Debug, Clone)]
pub struct Options {
    pub beam_size: usize,
    pub patience: f32,
    pub length_penalty: f32,
    /// Sampling temperature (used when `beam_size` is 1).
    pub temperature: f32,
    /// Hypotheses to sample; the most likely is returned.
    pub num_hypotheses: usize,
    /// Sample from the top k tokens (0: all of them; 1: greedy).
    pub sampling_topk: usize,
    pub max_length: usize,
    pub suppress_blank: c_int,
    pub max_initial_timestamp_index: usize,
}

impl Default for Options {
    /// Beam search of 5, as whisper and faster-whisper decode by default.
    fn default() -> Self {
        Self {
            beam_size: 5,
            patience: 1.0,
            length_penalty: 1.0,
            temperature: 1.0,
            num_hypotheses: 1,
            sampling_topk: 1,
            max_length: 448,
            suppress_blank: 1,
            max_initial_timestamp_index: 50,
        }
    }
}

type LoadFn = unsafe extern "C" fn(
    *const c_char,
    usize,
    usize,
    usize,
    *const c_char,
    *mut c_char,
    usize,
) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type VersionFn = unsafe extern "C" fn() -> *const c_char;
type AbiFn = unsafe extern "C" fn() -> c_int;
type FlagFn = unsafe extern "C" fn(*const c_void) -> c_int;
type SizeFn = unsafe extern "C" fn(*const c_void) -> usize;
type EncodeFn = unsafe extern "C" fn(
    *mut c_void,
    *const f32,
    usize,
    usize,
    usize,
    c_int,
    *mut c_char,
    usize,
) -> *mut c_void;
type DetectFn = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    *mut c_char,
    *mut f32,
    usize,
    *mut c_char,
    usize,
) -> c_long;
type GenerateFn = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    *const usize,
    usize,
    *const Options,
    *mut usize,
    usize,
    *mut f32,
    *mut f32,
    *mut c_char,
    usize,
) -> c_long;
type AlignFn = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    *const usize,
    usize,
    *const usize,
    usize,
    c_long,
    *mut c_long,
    usize,
    *mut f32,
    *mut c_char,
    usize,
) -> c_long;

/// The C interface, loaded once.
pub struct Library {
    load: LoadFn,
    free: FreeFn,
    multilingual: FlagFn,
    n_mels: SizeFn,
    encode: EncodeFn,
    enc_free: FreeFn,
    detect: DetectFn,
    generate: GenerateFn,
    align: AlignFn,
    _lib: libloading::Library,
}

/// Where the setup step puts the C interface.
pub fn library_path(models_dir: &Path) -> std::path::PathBuf {
    models_dir
        .join(".ct2")
        .join("lib")
        .join("libmediagen_ct2.so")
}

impl Library {
    /// Loads the shim the setup step built into `models_dir` (see
    /// [`library_path`]).
    pub fn open_installed(models_dir: &Path) -> Result<Arc<Self>, String> {
        // SAFETY: the library at `library_path` is the shim built by
        // scripts/setup.sh from native/ct2_whisper.cpp, whose exports have
        // the signatures declared in this file.
        unsafe { Self::open(&library_path(models_dir)) }
    }

    /// Loads the shim at `path` and resolves its functions.
    ///
    /// # Safety
    /// `path` must be the shim the setup step built (`library_path`): its
    /// initialisers run on load, and its functions are called with the
    /// signatures declared here, which nothing can check.
    pub unsafe fn open(path: &Path) -> Result<Arc<Self>, String> {
        // SAFETY: the caller vouches for the library (see above).
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("{}: {e}", path.display()))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol has the signature the shim declares for
                // it (native/ct2_whisper.cpp); the pointer is kept no longer
                // than the library, which this struct owns.
                unsafe {
                    *lib.get(concat!($name, "\0").as_bytes())
                        .map_err(|e| format!("{}: {e}", $name))?
                }
            };
        }
        // A shim of another release or interface is refused before any of
        // its other functions is called: their layouts may differ.
        let version: VersionFn = sym!("mg_ct2_version");
        let abi: AbiFn = sym!("mg_ct2_abi");
        // SAFETY: both take nothing; the version is a static NUL-terminated
        // string of the shim's.
        let (version, abi) = unsafe { (CStr::from_ptr(version()).to_string_lossy(), abi()) };
        check_build(&version, abi)?;
        Ok(Arc::new(Self {
            load: sym!("mg_ct2_load"),
            free: sym!("mg_ct2_free"),
            multilingual: sym!("mg_ct2_multilingual"),
            n_mels: sym!("mg_ct2_n_mels"),
            encode: sym!("mg_ct2_encode"),
            enc_free: sym!("mg_ct2_enc_free"),
            detect: sym!("mg_ct2_detect"),
            generate: sym!("mg_ct2_generate"),
            align: sym!("mg_ct2_align"),
            _lib: lib,
        }))
    }
}

/// Whether a shim built against CTranslate2 `version` with interface `abi`
/// is the one these declarations call.
fn check_build(version: &str, abi: c_int) -> Result<(), String> {
    if version != CT2_RELEASE || abi != ABI {
        return Err(format!(
            "the CTranslate2 shim was built for CTranslate2 {version} (interface {abi}), \
             this build needs {CT2_RELEASE} (interface {ABI}): run scripts/models.sh"
        ));
    }
    Ok(())
}

const ERR_LEN: usize = 512;

/// An error buffer for one call.
struct ErrBuf([u8; ERR_LEN]);

impl ErrBuf {
    fn new() -> Self {
        Self([0; ERR_LEN])
    }
    fn ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr().cast()
    }
    fn text(&self) -> String {
        CStr::from_bytes_until_nul(&self.0)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
    /// A count returned by the C side: negative means the message here.
    fn count(&self, n: c_long) -> Result<usize, String> {
        usize::try_from(n).map_err(|_| self.text())
    }
}

/// A loaded Whisper model on the CPU: two CTranslate2 replica pools over
/// the same weights, one running the encoder and one the decoder, on their
/// own worker threads (calls from any thread are queued to them).
pub struct Whisper {
    lib: Arc<Library>,
    ptr: *mut c_void,
}

// SAFETY: CTranslate2's replica pool is thread-safe (calls are queued to its
// worker threads and answered through futures); the pointer is freed only
// in drop, when no borrow is left.
unsafe impl Send for Whisper {}
// SAFETY: as above; every method takes `&self` and goes through the pool.
unsafe impl Sync for Whisper {}

impl Drop for Whisper {
    fn drop(&mut self) {
        // SAFETY: allocated by mg_ct2_load, freed once.
        unsafe { (self.lib.free)(self.ptr) }
    }
}

/// What one decoding gave.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Token ids after the prompt.
    pub ids: Vec<usize>,
    /// Summed log-probability over the length (to the length penalty).
    pub score: f32,
    /// Probability of the no-speech token at the start.
    pub no_speech: f32,
}

/// A cross-attention alignment of text tokens with the audio.
#[derive(Debug, Clone)]
pub struct Alignment {
    /// The path: (text token index, encoder frame index), in order; the
    /// end token comes last.
    pub path: Vec<(usize, usize)>,
    /// Probability of each text token, then of the end token.
    pub probs: Vec<f32>,
}

impl Whisper {
    /// Loads a CTranslate2 Whisper folder (`model.bin`, `config.json`,
    /// `vocabulary.txt`) with weights converted to `compute_type` (`int8`,
    /// `float32`, …), the encoder running on `encoder_threads` threads and
    /// `decoders` decodings (language detection, generation, alignment) at
    /// once on `decoder_threads` threads each.
    pub fn load(
        lib: &Arc<Library>,
        dir: &Path,
        encoder_threads: usize,
        decoders: usize,
        decoder_threads: usize,
        compute_type: &str,
    ) -> Result<Self, String> {
        let path = CString::new(dir.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        let compute = CString::new(compute_type).map_err(|e| e.to_string())?;
        let mut err = ErrBuf::new();
        // SAFETY: NUL-terminated strings and an error buffer of ERR_LEN bytes.
        let ptr = unsafe {
            (lib.load)(
                path.as_ptr(),
                encoder_threads.max(1),
                decoders.max(1),
                decoder_threads.max(1),
                compute.as_ptr(),
                err.ptr(),
                ERR_LEN,
            )
        };
        if ptr.is_null() {
            return Err(err.text());
        }
        Ok(Self {
            lib: lib.clone(),
            ptr,
        })
    }

    pub fn multilingual(&self) -> bool {
        // SAFETY: a live model.
        unsafe { (self.lib.multilingual)(self.ptr) != 0 }
    }

    /// Mel bands the model takes (80, or 128 for large-v3).
    pub fn n_mels(&self) -> usize {
        // SAFETY: a live model.
        unsafe { (self.lib.n_mels)(self.ptr) }
    }

    /// Runs the encoder on one window of features, `[n_mels][window]`
    /// row-major, of which the first `frames` hold audio, on the threads
    /// `on` names.
    pub fn encode(
        &self,
        features: &[f32],
        n_mels: usize,
        window: usize,
        frames: usize,
        on: EncodeOn,
    ) -> Result<Encoded<'_>, String> {
        if features.len() != n_mels * window || n_mels != self.n_mels() {
            return Err(format!(
                "features of {} values for {n_mels} × {window}, model takes {} bands",
                features.len(),
                self.n_mels()
            ));
        }
        let mut err = ErrBuf::new();
        // SAFETY: `features` holds n_mels × window floats (checked above).
        let ptr = unsafe {
            (self.lib.encode)(
                self.ptr,
                features.as_ptr(),
                n_mels,
                window,
                frames,
                c_int::from(on == EncodeOn::Aside),
                err.ptr(),
                ERR_LEN,
            )
        };
        if ptr.is_null() {
            return Err(err.text());
        }
        Ok(Encoded { model: self, ptr })
    }
}

/// Which threads run an encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeOn {
    /// The encoder's pool, on all its threads.
    Encoder,
    /// A free replica of the decoding pool, on one decoder's threads: an
    /// encoding made beside a decoding, on the core that decoding leaves
    /// idle, without the encoder's threads contending with it.
    Aside,
}

/// The encoder's output for one window, freed on drop.
pub struct Encoded<'a> {
    model: &'a Whisper,
    ptr: *mut c_void,
}

// SAFETY: the output is a CTranslate2 tensor made on the pool's worker
// thread and read or freed from the caller's; nothing in it is tied to a
// thread. It may move to another thread (not be shared: no `Sync`).
unsafe impl Send for Encoded<'_> {}

impl Drop for Encoded<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by mg_ct2_encode, freed once.
        unsafe { (self.model.lib.enc_free)(self.ptr) }
    }
}

impl Encoded<'_> {
    /// The most likely language tokens (`<|en|>`) and their probabilities,
    /// best first, at most `k`.
    pub fn detect(&self, k: usize) -> Result<Vec<(String, f32)>, String> {
        let (m, k) = (self.model, k.max(1));
        let (mut tokens, mut probs, mut err) = (vec![0u8; 16 * k], vec![0f32; k], ErrBuf::new());
        // SAFETY: room for k 16-byte tokens and k probabilities.
        let n = unsafe {
            (m.lib.detect)(
                m.ptr,
                self.ptr,
                tokens.as_mut_ptr().cast(),
                probs.as_mut_ptr(),
                k,
                err.ptr(),
                ERR_LEN,
            )
        };
        let n = err.count(n)?;
        Ok((0..n)
            .map(|i| {
                let slot = &tokens[16 * i..16 * (i + 1)];
                let token = CStr::from_bytes_until_nul(slot)
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (token, probs[i])
            })
            .collect())
    }

    /// Decodes after `prompt` (token ids: previous text, start of
    /// transcript, language, task).
    pub fn generate(&self, prompt: &[usize], opts: &Options) -> Result<Generated, String> {
        let m = self.model;
        let mut ids = vec![0usize; opts.max_length.max(1)];
        let (mut score, mut no_speech, mut err) = (0f32, 0f32, ErrBuf::new());
        // SAFETY: `prompt` and `ids` are passed with their lengths; `opts`
        // is a live #[repr(C)] struct.
        let n = unsafe {
            (m.lib.generate)(
                m.ptr,
                self.ptr,
                prompt.as_ptr(),
                prompt.len(),
                opts,
                ids.as_mut_ptr(),
                ids.len(),
                &mut score,
                &mut no_speech,
                err.ptr(),
                ERR_LEN,
            )
        };
        let n = err.count(n)?;
        ids.truncate(n);
        Ok(Generated {
            ids,
            score,
            no_speech,
        })
    }

    /// Aligns `text` (token ids, without the end token) after `start` (the
    /// start sequence) with the audio, the attention weights smoothed by a
    /// median filter of `median_width` frames.
    pub fn align(
        &self,
        start: &[usize],
        text: &[usize],
        median_width: usize,
    ) -> Result<Alignment, String> {
        let m = self.model;
        // A monotonic path has at most one step per token plus one per
        // encoder frame (1500 a window).
        let cap = text.len() + 1 + 1500 + 8;
        let (mut pairs, mut probs) = (vec![0 as c_long; 2 * cap], vec![0f32; text.len() + 1]);
        let mut err = ErrBuf::new();
        // SAFETY: every buffer is passed with its length (`pairs` holds
        // 2 × cap values, `probs` text.len() + 1).
        let n = unsafe {
            (m.lib.align)(
                m.ptr,
                self.ptr,
                start.as_ptr(),
                start.len(),
                text.as_ptr(),
                text.len(),
                median_width as c_long,
                pairs.as_mut_ptr(),
                cap,
                probs.as_mut_ptr(),
                err.ptr(),
                ERR_LEN,
            )
        };
        let n = err.count(n)?;
        let path = pairs[..2 * n]
            .chunks_exact(2)
            .map(|p| (p[0].max(0) as usize, p[1].max(0) as usize))
            .collect();
        Ok(Alignment { path, probs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shim_of_another_build_is_refused() {
        assert_eq!(check_build(CT2_RELEASE, ABI), Ok(()));
        let other = check_build("4.6.0", ABI).unwrap_err();
        assert!(
            other.contains("4.6.0") && other.contains(CT2_RELEASE),
            "{other}"
        );
        assert!(check_build(CT2_RELEASE, ABI + 1).is_err());
    }

    /// The release the loader expects is the one models.lock installs.
    #[test]
    fn the_expected_release_is_the_pinned_one() {
        let lock = include_str!("../../../models.lock");
        let pin = format!("pypi:ctranslate2=={CT2_RELEASE}");
        assert!(lock.contains(&pin), "models.lock does not pin {pin}");
    }

    /// The installed shim (scripts/models.sh, run by `make test`'s setup)
    /// loads: it carries this release and interface.
    #[test]
    fn the_installed_shim_loads() {
        let models = std::env::var_os("MEDIAGEN_MODELS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models")
            });
        if let Err(e) = Library::open_installed(&models) {
            panic!("{e}");
        }
    }
}
