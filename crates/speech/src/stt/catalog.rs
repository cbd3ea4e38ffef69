//! The recognisers installed: the whisper models found under the models
//! directory, the decode gate they share, the voice-activity detector and
//! the speaker encoder; and whisper's languages.

use super::*;
use mediagen_core::Capability;

/// The English model that drafts live partials ([`SttCatalog::draft`]).
pub const DRAFT_EN: &str = "tiny.en";

/// The recognisers found in `<models>/whisper/`, sharing one limit on
/// concurrent decodes.
pub struct SttCatalog {
    models: Vec<Arc<dyn SpeechToText>>,
    status: Vec<EngineStatus>,
    gate: Arc<DecodeGate>,
    vad: Arc<dyn Vad>,
    encoder: Result<Arc<SpeakerEncoder>, String>,
    /// The segmentation network and CAM++, for diarization on real
    /// conversations (GE2E and voice activity without them).
    networks: Result<Arc<Networks>, String>,
}

impl Default for SttCatalog {
    fn default() -> Self {
        Self {
            models: Vec::new(),
            status: Vec::new(),
            gate: Arc::new(DecodeGate::new(1)),
            vad: Arc::new(mediagen_speakers::vad::Energy),
            encoder: Err("no speaker encoder loaded".into()),
            networks: Err("no diarization networks loaded".into()),
        }
    }
}

impl SttCatalog {
    /// Loads the models under `<models>/whisper/`: CTranslate2 folders
    /// (`<name>/model.bin`, run by the CTranslate2 runtime the setup step
    /// installs in `<models>/.ct2/lib/`) and ggml files (`ggml-<name>.bin`,
    /// run by whisper.cpp). A model is called by its folder's or file's
    /// name; when both formats of one name are present, the CTranslate2
    /// folder answers to it and the ggml file to its whole stem
    /// (`ggml-base`). The default is `base`. At most `concurrency` chunks
    /// are decoded at once across all requests.
    pub fn discover(models_dir: &Path, threads: usize, concurrency: usize) -> Self {
        let mut catalog = Self {
            gate: Arc::new(DecodeGate::new(concurrency)),
            vad: mediagen_speakers::vad::discover(models_dir, 1),
            encoder: SpeakerEncoder::load(models_dir, threads).map(Arc::new),
            networks: Networks::load(models_dir, threads).map(Arc::new),
            ..Self::default()
        };
        let dir = models_dir.join("whisper");
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        entries.sort();
        let folders: Vec<_> = entries
            .iter()
            .filter(|p| p.join("model.bin").is_file())
            .collect();
        if !folders.is_empty() {
            catalog.load_ct2(models_dir, &folders, threads, concurrency);
        }
        let files = entries.iter().filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ggml-") && n.ends_with(".bin"))
        });
        for file in files {
            let stem = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("whisper")
                .to_owned();
            let short = stem.trim_start_matches("ggml-").to_owned();
            // The whole stem when the short name belongs to another model.
            let name = if catalog.model(Some(&short)).is_some() {
                stem
            } else {
                short.clone()
            };
            let (path, renamed) = (file.to_path_buf(), name != short);
            let load = Box::new(move || -> Result<Arc<dyn SpeechToText>, String> {
                let mut engine = WhisperEngine::load(&path, threads)?;
                if renamed {
                    engine.rename_to_stem(&path);
                }
                Ok(Arc::new(engine))
            });
            catalog.add("whisper.cpp", Arc::new(LazyStt::new(name, 1, load)), file);
        }
        if catalog.models.is_empty() {
            let detail = format!(
                "no whisper models in {} (run scripts/models.sh)",
                dir.display()
            );
            catalog.unavailable("whisper", detail);
        }
        // The default first: base, then the rest by name.
        catalog
            .models
            .sort_by_key(|m| (m.name() != "base", m.name().to_owned()));
        catalog
    }

    fn add(&mut self, engine: &'static str, model: Arc<dyn SpeechToText>, from: &Path) {
        tracing::info!(
            model = model.name(),
            engine,
            "speech-to-text model found (loaded on first use)"
        );
        self.status.push(EngineStatus {
            engine,
            name: Some(model.name().to_owned()),
            kind: Capability::SpeechToText,
            available: true,
            voices: 0,
            detail: format!("{} ({})", model.name(), from.display()),
        });
        self.models.push(model);
    }

    /// An engine that could not be used, logged and reported.
    fn unavailable(&mut self, engine: &'static str, detail: String) {
        tracing::warn!("speech-to-text ({engine}) unavailable: {detail}");
        self.status.push(EngineStatus {
            engine,
            name: None,
            kind: Capability::SpeechToText,
            available: false,
            voices: 0,
            detail,
        });
    }

    /// CTranslate2 folders, when its runtime is installed.
    fn load_ct2(
        &mut self,
        models_dir: &Path,
        folders: &[&std::path::PathBuf],
        threads: usize,
        decoders: usize,
    ) {
        let lib_path = ct2::library_path(models_dir);
        if !lib_path.is_file() {
            let detail = format!(
                "CTranslate2 runtime not found at {}; run scripts/models.sh",
                lib_path.display()
            );
            self.unavailable("ctranslate2", detail);
            return;
        }
        // Opened with the first model that loads, once for all of them.
        let lib: Arc<OnceLock<Result<Arc<mediagen_ct2::Library>, String>>> = Arc::default();
        for dir in folders {
            let name = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("whisper")
                .to_owned();
            let (lib, models, dir_owned, model_name) = (
                lib.clone(),
                models_dir.to_path_buf(),
                dir.to_path_buf(),
                name.clone(),
            );
            let load = Box::new(move || -> Result<Arc<dyn SpeechToText>, String> {
                let lib = lib
                    .get_or_init(|| mediagen_ct2::Library::open_installed(&models))
                    .as_ref()
                    .map_err(|e| format!("CTranslate2 runtime not loaded ({e})"))?;
                Ok(Arc::new(Ct2Engine::load(
                    lib,
                    &dir_owned,
                    &model_name,
                    threads,
                    decoders,
                )?))
            });
            let model = LazyStt::new(name, decoders.max(1), load);
            self.add("ctranslate2", Arc::new(model), dir);
        }
    }

    /// Loads the default model now (a worker warming up, so its first
    /// request does not wait); the others, among them every whisper.cpp
    /// model, load when a request first names them, so one runtime is
    /// loaded unless asked for. The models that failed, with why.
    pub fn warm(&self) -> Vec<String> {
        let mut failed: Vec<String> = self
            .models
            .iter()
            .take(1)
            .filter_map(|m| match m.session(&SttOptions::default()) {
                Ok(_) => None,
                Err(e) => Some(format!("{}: {e}", m.name())),
            })
            .collect();
        if let Err(e) = self.vad.probabilities(&[0.0; FRAME]) {
            failed.push(format!("{}: {e}", self.vad.name()));
        }
        failed
    }

    /// The limit on concurrent decodes.
    pub fn gate(&self) -> &DecodeGate {
        &self.gate
    }

    /// The voice-activity detector that chunking uses (Silero where its
    /// model is installed).
    pub fn vad(&self) -> &dyn Vad {
        self.vad.as_ref()
    }

    /// The catalog with `vad` for its voice-activity detector (to compare
    /// detectors; `discover` picks Silero where it is installed).
    pub fn with_vad(mut self, vad: Arc<dyn Vad>) -> Self {
        self.vad = vad;
        self
    }

    /// The speaker encoder, or why there is none.
    pub fn encoder(&self) -> Result<&SpeakerEncoder, String> {
        self.encoder.as_deref().map_err(Clone::clone)
    }

    /// Who speaks when in `audio`, within `count`: by the segmentation
    /// network and CAM++ where they are installed (overlapped speech kept,
    /// each speaker's voice then measured by GE2E, which clones and dubbing
    /// voices are judged by), else by voice activity and GE2E. Stops
    /// between windows on the job's cancel.
    pub fn diarize(
        &self,
        audio: &dyn Samples,
        count: SpeakerCount,
    ) -> Result<Diarization, SttError> {
        let fail = |e: mediagen_speakers::diarize::DiarizeError| match e {
            mediagen_speakers::diarize::DiarizeError::Cancelled => SttError::Cancelled,
            e => SttError::Failed(e.to_string()),
        };
        let encoder = self
            .encoder()
            .map_err(|e| SttError::Failed(format!("speaker encoder unavailable: {e}")))?;
        let Ok(networks) = &self.networks else {
            let opts = DiarizeOptions {
                speakers: count.exactly.or(count.at_most),
                ..DiarizeOptions::default()
            };
            return diarize(self.vad(), encoder, audio, opts).map_err(fail);
        };
        let opts = SlidingOptions {
            speakers: count.exactly,
            min_speakers: count.at_least,
            max_speakers: count.at_most,
            ..SlidingOptions::default()
        };
        let mut d = networks.diarize(audio, opts, &mut |_| true).map_err(fail)?;
        d.voices = ge2e_voices(&d, encoder, audio).map_err(fail)?;
        Ok(d)
    }

    pub fn status(&self) -> &[EngineStatus] {
        &self.status
    }

    /// Model names, the default first.
    pub fn names(&self) -> Vec<String> {
        self.models.iter().map(|m| m.name().to_owned()).collect()
    }

    /// A smaller model that drafts a live turn's partials in `language`
    /// while `model` decodes its commits: [`DRAFT_EN`] for English where it
    /// is installed (its decode about a quarter of `base`'s), else none
    /// (the partials are `model`'s own drafts).
    pub fn draft(&self, model: &str, language: &str) -> Option<Arc<dyn SpeechToText>> {
        if language != "en" || model == DRAFT_EN {
            return None;
        }
        self.model(Some(DRAFT_EN))
    }

    /// A model by name, or the default.
    pub fn model(&self, name: Option<&str>) -> Option<Arc<dyn SpeechToText>> {
        match name {
            None => self.models.first().cloned(),
            Some(n) => self.models.iter().find(|m| m.name() == n).cloned(),
        }
    }
}

/// The ISO 639-1 codes whisper recognises.
pub fn languages() -> Vec<&'static str> {
    (0..=whisper_rs::get_lang_max_id())
        .filter_map(whisper_rs::get_lang_str)
        .collect()
}

/// The English name of the language whose code is `code` (`german` for
/// `de`), as whisper's table spells it.
pub fn language_name(code: &str) -> Option<&'static str> {
    (0..=whisper_rs::get_lang_max_id())
        .find(|&id| whisper_rs::get_lang_str(id) == Some(code))
        .and_then(whisper_rs::get_lang_str_full)
}
