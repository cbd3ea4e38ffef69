//! A short-lived in-process cache of key lookups, so an authenticated
//! request costs one database query (its own) instead of two.
//!
//! Expiry and revocation times are checked on every request from the cached
//! row, and a revocation made through this process drops the entry at once.
//! A revocation made elsewhere (another API process, the CLI) takes effect
//! within `auth_cache_seconds`. Unknown keys are not cached.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mediagen_core::keys::hash_key;
use mediagen_store::{AuthKey, Db, StoreError};

const MAX_ENTRIES: usize = 10_000;

pub struct KeyCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (AuthKey, Instant)>>,
}

impl KeyCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The key's row, from the cache when fresh, else from the database.
    pub async fn lookup(&self, db: &Db, secret: &str) -> Result<Option<AuthKey>, StoreError> {
        if self.ttl.is_zero() {
            return db.find_key(secret).await;
        }
        let hash = hash_key(secret);
        if let Some((key, at)) = self.lock().get(&hash) {
            if at.elapsed() < self.ttl {
                return Ok(Some(key.clone()));
            }
        }
        let found = db.find_key(secret).await?;
        if let Some(key) = &found {
            let mut entries = self.lock();
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(hash, (key.clone(), Instant::now()));
        }
        Ok(found)
    }

    /// Drops the cached row of a key (after it was revoked here).
    pub fn forget(&self, key_id: &str) {
        self.lock().retain(|_, (k, _)| k.key_id != key_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (AuthKey, Instant)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
