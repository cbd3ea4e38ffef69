//! API keys: 64 characters, `mg_live_` + 50 random base62 characters + a
//! 6-character checksum. The checksum lets the server reject typos and
//! truncated keys without touching the database; only a SHA-256 hash of a
//! key is ever stored.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ids::{base62_fixed, random_base62};

/// The readable prefix of every key.
pub const KEY_PREFIX: &str = "mg_live_";
/// Total key length, as the spec describes.
pub const KEY_LEN: usize = 64;
const BODY_LEN: usize = 50;
const CHECKSUM_LEN: usize = 6;

/// Permission levels, ordered: read-only < write < admin.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Retrieve data only (every GET).
    Read,
    /// Create and modify resources (jobs, files, voices, avatars).
    Write,
    /// Full access: API keys, and for the operator account, accounts and credits.
    Admin,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Read => "read",
            Level::Write => "write",
            Level::Admin => "admin",
        }
    }

    /// Parses `read`, `read-only`, `write` or `admin`.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "read" | "read-only" | "readonly" => Some(Level::Read),
            "write" => Some(Level::Write),
            "admin" => Some(Level::Admin),
            _ => None,
        }
    }
}

/// A freshly generated key: shown once, then only its hash is kept.
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// Generates a new random key with a valid checksum.
    pub fn generate() -> Self {
        let body = random_base62(BODY_LEN);
        let sum = checksum(&body);
        Self(format!("{KEY_PREFIX}{body}{sum}"))
    }

    /// The full key, to show the user exactly once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The first characters, safe to list (`mg_live_AbCd`).
    pub fn display_prefix(&self) -> String {
        display_prefix(&self.0)
    }
}

/// The part of a key that may be shown in listings.
pub fn display_prefix(key: &str) -> String {
    key.chars().take(KEY_PREFIX.len() + 4).collect()
}

fn checksum(body: &str) -> String {
    let digest = Sha256::digest(body.as_bytes());
    let n = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    base62_fixed(u128::from(n), CHECKSUM_LEN)
}

/// True when `key` has the right length, prefix, alphabet and checksum.
pub fn is_well_formed(key: &str) -> bool {
    checked(key, KEY_PREFIX)
}

/// The readable prefix of a single-use session token (`POST /v1/tokens`):
/// a token is shaped as a key is, under its own prefix, so neither can be
/// taken for the other.
pub const TOKEN_PREFIX: &str = "mg_tok_";

/// A new single-use session token (only its hash is stored).
pub fn generate_token() -> String {
    let body = random_base62(BODY_LEN);
    let sum = checksum(&body);
    format!("{TOKEN_PREFIX}{body}{sum}")
}

/// True when `token` is shaped as a session token.
pub fn is_token(token: &str) -> bool {
    checked(token, TOKEN_PREFIX)
}

fn checked(key: &str, prefix: &str) -> bool {
    if key.len() != prefix.len() + BODY_LEN + CHECKSUM_LEN || !key.starts_with(prefix) {
        return false;
    }
    let rest = &key[prefix.len()..];
    if !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return false;
    }
    let (body, sum) = rest.split_at(BODY_LEN);
    checksum(body).as_bytes().ct_eq(sum.as_bytes()).into()
}

/// The SHA-256 hash (hex) under which a key is stored. Keys carry ~297 bits
/// of entropy, so a fast hash is the right tool (a slow password hash would
/// only add latency to every request).
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Compares two stored hashes in constant time.
pub fn hashes_match(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_keys_are_told_apart() {
        let t = generate_token();
        assert!(t.starts_with("mg_tok_"));
        assert!(is_token(&t));
        assert!(!is_well_formed(&t));
        let k = ApiKeySecret::generate();
        assert!(!is_token(k.expose()));
        let mut typo = t.clone();
        typo.replace_range(10..11, if &t[10..11] == "a" { "b" } else { "a" });
        assert!(!is_token(&typo));
    }

    #[test]
    fn generated_keys_are_64_chars_and_well_formed() {
        let k = ApiKeySecret::generate();
        assert_eq!(k.expose().len(), 64);
        assert!(k.expose().starts_with("mg_live_"));
        assert!(is_well_formed(k.expose()));
        assert_eq!(k.display_prefix().len(), 12);
    }

    #[test]
    fn a_changed_character_breaks_the_checksum() {
        let k = ApiKeySecret::generate().expose().to_owned();
        let mut bytes = k.clone().into_bytes();
        bytes[20] = if bytes[20] == b'a' { b'b' } else { b'a' };
        let typo = String::from_utf8(bytes).unwrap();
        assert!(!is_well_formed(&typo));
        assert!(!is_well_formed(&k[..63]));
        assert!(!is_well_formed(&k.replacen("mg_live_", "mg_test_", 1)));
    }

    #[test]
    fn levels_are_ordered() {
        assert!(Level::Read < Level::Write && Level::Write < Level::Admin);
        assert_eq!(Level::parse("read-only"), Some(Level::Read));
        assert_eq!(Level::parse("root"), None);
    }

    #[test]
    fn hashes_compare() {
        let h = hash_key("x");
        assert!(hashes_match(&h, &hash_key("x")));
        assert!(!hashes_match(&h, &hash_key("y")));
    }
}
