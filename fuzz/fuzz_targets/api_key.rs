//! API keys as clients send them: any `Authorization` header value. A
//! header either yields a key or a 401 error, and only keys of the right
//! shape and checksum are well formed.
#![no_main]

use axum::http::{header, HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use mediagen_core::keys::{display_prefix, is_well_formed, ApiKeySecret};
use mediagen_core::Level;
use mediagen_http::bearer;

fuzz_target!(|data: &[u8]| {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(data) {
        headers.insert(header::AUTHORIZATION, v);
    }
    match bearer(&headers) {
        Ok(key) => {
            if is_well_formed(key) {
                assert!(key.starts_with("mg_"), "{key}");
                let _ = display_prefix(key);
            }
        }
        Err(e) => assert_eq!(e.code.status(), 401),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = is_well_formed(text);
        let _ = display_prefix(text);
        let _ = Level::parse(text);
    }
    // A generated key is always well formed; one changed byte never is.
    let key = ApiKeySecret::generate();
    let mut bytes = key.expose().as_bytes().to_vec();
    if let Some(&b) = data.first() {
        let at = usize::from(b) % bytes.len();
        let flipped = bytes[at] ^ data.get(1).copied().unwrap_or(1).max(1);
        if flipped.is_ascii_alphanumeric() || flipped == b'_' {
            bytes[at] = flipped;
            let changed = String::from_utf8(bytes).unwrap();
            assert!(!is_well_formed(&changed) || at < 3, "{changed}");
        }
    }
});
