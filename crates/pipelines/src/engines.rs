//! The engines a process loads, and the pipelines its workers run on them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use mediagen_generate::diffusion::{DiffusionModels, Medium};
use mediagen_generate::image::icons::Icons;
use mediagen_jobs::dub::DubLanguages;
use mediagen_speech::stt::SttCatalog;
use mediagen_speech::translate::{Apertium, Translator};
use mediagen_speech::tts::TtsCatalog;

use crate::dub::dub_languages;
use crate::voice_clone::neural::StockCache;

/// The engines every pipeline draws on. It also answers each part of the
/// API's [`mediagen_jobs::Catalog`] (see `catalog.rs`).
#[derive(Clone)]
pub struct Engines {
    pub tts: Arc<TtsCatalog>,
    pub stt: Arc<SttCatalog>,
    /// The image engine's icon set (`None` when not installed).
    pub icons: Option<Arc<Icons>>,
    /// Neural image and sound models (folders under the models directory,
    /// loaded on first use).
    pub diffusion: Arc<DiffusionModels>,
    /// Text translation (Apertium's installed pairs).
    pub translator: Arc<dyn Translator>,
    /// The language pairs dubbing can do with these engines.
    pub dubbing: Arc<DubLanguages>,
    /// The stock voices as neural clones' searches hear them (shared by
    /// the clone and dubbing pipelines).
    pub stock: Arc<StockCache>,
}

/// Which engines a process loads: an API process validates requests
/// against every engine's voices and models, while a worker loads only
/// what the kinds it claims run (a trim worker loads no model at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Needs {
    /// Text-to-speech voices (Kokoro, Piper, espeak-ng).
    pub tts: bool,
    /// Speech recognisers.
    pub stt: bool,
}

impl Needs {
    pub const ALL: Needs = Needs {
        tts: true,
        stt: true,
    };
    pub const NONE: Needs = Needs {
        tts: false,
        stt: false,
    };

    /// Both needs.
    pub fn with(self, other: Needs) -> Needs {
        Needs {
            tts: self.tts || other.tts,
            stt: self.stt || other.stt,
        }
    }
}

/// Where the engines come from and how many threads they use.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EngineSettings {
    pub models_dir: PathBuf,
    /// Threads each engine computes on.
    pub threads: usize,
    /// Recognitions run at once.
    pub stt_concurrency: usize,
}

impl Engines {
    /// The engines found under the models directory (those `needs` asks
    /// for; the others are empty), discovered once per process and
    /// settings (models load on first use, or in [`Engines::warm`]).
    /// Blocking: call it off the async runtime.
    pub fn discover(settings: &EngineSettings, needs: Needs) -> Engines {
        type Loaded = Mutex<HashMap<(EngineSettings, Needs), Engines>>;
        static LOADED: OnceLock<Loaded> = OnceLock::new();
        let key = (settings.clone(), needs);
        let cache = LOADED.get_or_init(Default::default);
        if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return found.clone();
        }
        let loaded = Self::find(settings, needs);
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert(loaded)
            .clone()
    }

    fn find(settings: &EngineSettings, needs: Needs) -> Engines {
        let dir = &settings.models_dir;
        let tts = Arc::new(if needs.tts {
            TtsCatalog::discover(dir, settings.threads)
        } else {
            TtsCatalog::default()
        });
        let stt = Arc::new(if needs.stt {
            SttCatalog::discover(dir, settings.threads, settings.stt_concurrency)
        } else {
            SttCatalog::default()
        });
        let translator: Arc<dyn Translator> = Arc::new(Apertium::discover());
        let dubbing = Arc::new(dub_languages(&stt, &tts, translator.as_ref()));
        if needs.tts && needs.stt {
            if translator.pairs().is_empty() {
                tracing::warn!("dubbing: Apertium is not installed (scripts/setup.sh installs it); only dubbing into English works");
            }
            tracing::info!(pairs = dubbing.pairs.len(), "dubbing: language pairs ready");
        }
        let diffusion = Arc::new(DiffusionModels::new(dir, settings.threads));
        for medium in [Medium::Image, Medium::Sound] {
            let found: Vec<String> = diffusion
                .found(medium)
                .into_iter()
                .map(|f| f.name)
                .collect();
            tracing::info!(medium = medium.folder(), models = ?found, "neural generation models found (loaded on first use)");
        }
        let icons = match Icons::discover(dir) {
            Some(icons) => {
                tracing::info!(icons = icons.len(), "image generation: Twemoji icons found");
                Some(Arc::new(icons))
            }
            None => {
                tracing::warn!(dir = %dir.join("emoji").display(), "image generation: no icon set (run scripts/models.sh); the endpoint answers 503");
                None
            }
        };
        Engines {
            tts,
            stt,
            icons,
            diffusion,
            translator,
            dubbing,
            stock: Arc::default(),
        }
    }

    /// Loads the models now (blocking): a process with workers warms up so
    /// that its first job does not wait for a model to load (an API process
    /// without workers never loads one). Returns what failed to load.
    pub fn warm(&self) -> Vec<String> {
        self.tts.warm().into_iter().chain(self.stt.warm()).collect()
    }
}

/// Renders the built-in avatars into `<models>/avatars` where missing (once
/// per machine: about 10 s for all of them). Returns the directory and the
/// ids ready. Blocking.
pub fn render_avatars(models: &Path) -> (PathBuf, Vec<&'static str>) {
    use mediagen_media::avatar;
    let dir = models.join("avatars");
    let mut ready = Vec::new();
    for look in avatar::CATALOG {
        match avatar::ensure_rendered(&dir, look) {
            Ok(()) => ready.push(look.id),
            Err(e) => tracing::warn!(avatar = look.id, error = %e, "avatar not rendered"),
        }
    }
    tracing::info!(avatars = ready.len(), dir = %dir.display(), "built-in avatars ready");
    (dir, ready)
}

/// The clip and poster files of a rendered built-in avatar.
pub fn avatar_files(dir: &Path, id: &str) -> Option<(PathBuf, PathBuf)> {
    let look = mediagen_media::avatar::CATALOG
        .iter()
        .find(|l| l.id == id)?;
    Some(mediagen_media::avatar::files(dir, look))
}
