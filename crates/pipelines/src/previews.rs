//! Voice previews, made ahead: a worker that runs `tts` makes the
//! sample of every catalog voice missing from the blob store when it
//! starts, so that a preview URL (signed, asked for without a key) never
//! causes work: it serves the stored sample or answers 503 at once.
//!
//! Samples are kept under the models directory (`.previews/`, one file per
//! voice and preview text), so that later processes on the same models
//! copy them instead of speaking them again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mediagen_jobs::tts::{preview_key, preview_text};
use mediagen_speech::tts::TtsCatalog;
use mediagen_store::BlobStore;
use sha2::{Digest, Sha256};

use mediagen_media::media::encode;
use mediagen_media::AudioFormat;

/// Where the sample of `voice` saying `text` is kept: a name made of their
/// hash, so no voice id is read as a path.
fn cached(cache: &Path, voice: &str, text: &str) -> PathBuf {
    let digest = Sha256::digest(format!("{voice}\n{text}").as_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    cache.join(format!("{name}.mp3"))
}

/// A short mp3 sample of a voice (blocking: run it off the async runtime).
pub fn preview_mp3(catalog: &TtsCatalog, voice_id: &str) -> Result<Vec<u8>, String> {
    let voice = catalog.voice(voice_id).ok_or("unknown voice")?;
    let audio = catalog
        .speak(voice_id, preview_text(&voice.language), 1.0, |_, _, _| true)
        .map_err(|e| e.to_string())?;
    encode(
        &audio,
        AudioFormat::Mp3,
        AudioFormat::Mp3.default_rate(voice.sample_rate),
    )
    .map_err(|e| e.to_string())
}

/// Keeps a made preview at `file`, inside the models directory's cache:
/// written whole, then renamed, so a reader never sees half. Nothing is
/// kept where the models directory itself does not exist (a server run
/// without models must not make one).
fn keep(file: &Path, mp3: &[u8]) {
    let Some(cache) = file.parent() else { return };
    if !cache.parent().is_some_and(Path::is_dir) {
        return;
    }
    let _ = std::fs::create_dir(cache);
    let part = file.with_extension(format!("part{}", std::process::id()));
    if std::fs::write(&part, mp3).is_ok() {
        let _ = std::fs::rename(&part, file);
    }
}

/// How long the maker waits before each new try of the previews that
/// failed: a voice that failed under a busy start (a model still loading,
/// the store away) gets three more chances, then is left out.
const RETRIES: [std::time::Duration; 3] = [
    std::time::Duration::from_secs(30),
    std::time::Duration::from_secs(120),
    std::time::Duration::from_secs(600),
];

/// Makes (or copies from `cache`) the preview of every catalog voice that
/// the blob store lacks, the cheapest engines first, then tries again the
/// ones that failed (`RETRIES`). Returns how many it stored. A voice that
/// fails every try is logged and skipped.
pub async fn publish(catalog: Arc<TtsCatalog>, blobs: &BlobStore, cache: &Path) -> usize {
    let mut voices: Vec<(String, String, &'static str)> = catalog
        .voices()
        .iter()
        .map(|v| (v.id.clone(), v.language.clone(), v.engine))
        .collect();
    let cost = |engine: &str| match engine {
        "espeak" => 0,
        "piper" => 1,
        _ => 2,
    };
    voices.sort_by_key(|(_, _, engine)| cost(engine));
    // One listing, not a look-up per voice (a request each on S3).
    let present: std::collections::HashSet<String> = match blobs.list("previews").await {
        Ok(keys) => keys.into_iter().collect(),
        Err(e) => {
            tracing::warn!(error = %e, "previews: the blob store cannot be read");
            return 0;
        }
    };
    voices.retain(|(id, _, _)| !present.contains(&preview_key(id)));
    let mut stored = 0;
    let mut waits = RETRIES.iter();
    loop {
        let mut failed = Vec::new();
        for voice in voices {
            match publish_one(&catalog, blobs, cache, &voice.0, &voice.1).await {
                Ok(()) => stored += 1,
                Err(e) => {
                    tracing::warn!(voice = %voice.0, error = %e, "previews: not made");
                    failed.push(voice);
                }
            }
        }
        let Some(wait) = waits.next().filter(|_| !failed.is_empty()) else {
            return stored;
        };
        tokio::time::sleep(*wait).await;
        voices = failed;
    }
}

/// Makes (or copies from `cache`) one voice's preview and stores it.
async fn publish_one(
    catalog: &Arc<TtsCatalog>,
    blobs: &BlobStore,
    cache: &Path,
    id: &str,
    language: &str,
) -> Result<(), String> {
    let file = cached(cache, id, preview_text(language));
    let (catalog, voice) = (catalog.clone(), id.to_string());
    let mp3 = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        if let Ok(mp3) = std::fs::read(&file) {
            return Ok(mp3);
        }
        let mp3 = preview_mp3(&catalog, &voice)?;
        keep(&file, &mp3);
        Ok(mp3)
    })
    .await
    .map_err(|e| e.to_string())??;
    blobs
        .put(&preview_key(id), mp3.into())
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache lives inside an existing models directory only.
    #[test]
    fn previews_are_kept_only_under_a_models_directory() {
        let dir = tempfile::tempdir().unwrap();
        let nowhere = dir.path().join("no-models/.previews/x.mp3");
        keep(&nowhere, b"mp3");
        assert!(!dir.path().join("no-models").exists());
        let models = dir.path().join("models");
        std::fs::create_dir(&models).unwrap();
        let file = cached(&models.join(".previews"), "voice", "text");
        keep(&file, b"mp3");
        assert_eq!(std::fs::read(&file).unwrap(), b"mp3");
    }
}
