//! Recognisers loaded on first use: the catalog knows each model's name,
//! language coverage and lanes from its files, so a process that never
//! transcribes (an API process without workers) never loads a model.

use std::sync::{Arc, OnceLock};

use super::{SpeechToText, SttError, SttOptions, SttSession};

type Loader = Box<dyn Fn() -> Result<Arc<dyn SpeechToText>, String> + Send + Sync>;

pub(super) struct LazyStt {
    name: String,
    multilingual: bool,
    lanes: usize,
    load: Loader,
    loaded: OnceLock<Result<Arc<dyn SpeechToText>, String>>,
}

impl LazyStt {
    /// A model called `name`; `multilingual` by whisper's naming (English-
    /// only models end in `.en`), checked when it loads.
    pub(super) fn new(name: String, lanes: usize, load: Loader) -> Self {
        Self {
            multilingual: !name.ends_with(".en"),
            name,
            lanes,
            load,
            loaded: OnceLock::new(),
        }
    }

    /// The model, loaded now if this is its first use.
    pub(super) fn get(&self) -> Result<&Arc<dyn SpeechToText>, String> {
        self.loaded
            .get_or_init(|| {
                let started = std::time::Instant::now();
                let model = (self.load)()?;
                if model.multilingual() != self.multilingual {
                    tracing::warn!(
                        model = %self.name,
                        "the model's language coverage differs from its name's (`.en` means English only)"
                    );
                }
                tracing::info!(model = %self.name, ms = started.elapsed().as_millis() as u64, "speech-to-text model loaded");
                Ok(model)
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl SpeechToText for LazyStt {
    fn name(&self) -> &str {
        &self.name
    }

    fn multilingual(&self) -> bool {
        self.multilingual
    }

    fn lanes(&self) -> usize {
        self.lanes
    }

    fn session(&self, opts: &SttOptions) -> Result<Box<dyn SttSession + '_>, SttError> {
        self.get().map_err(SttError::Failed)?.session(opts)
    }
}
