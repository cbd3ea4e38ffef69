//! Signed-URL tokens and byte ranges as clients send them: a token is
//! accepted only when it is the signature of exactly that key and expiry.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mediagen_store::{BlobRange, Signer};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\u{0}');
    let key = parts.next().unwrap_or("");
    let expires: i64 = parts.next().and_then(|e| e.parse().ok()).unwrap_or(0);
    let signature = parts.next().unwrap_or("");
    let signer = Signer::new(b"fuzzing secret");
    let genuine = signer.sign(key, expires);
    match signer.verify(key, expires, signature, 0) {
        Ok(()) | Err(mediagen_store::SignedUrlError::Expired) => {
            assert!(
                signature.eq_ignore_ascii_case(&genuine),
                "{signature} accepted for {key}"
            )
        }
        Err(_) => assert!(!signature.eq_ignore_ascii_case(&genuine)),
    }
    assert!(signer.verify(key, expires, &genuine, expires).is_ok());
    // The same signature never fits another key or expiry.
    assert!(signer
        .verify(&format!("{key}x"), expires, &genuine, 0)
        .is_err());
    assert!(signer
        .verify(key, expires.wrapping_add(1), &genuine, 0)
        .is_err());
    if let Some(range) = BlobRange::parse(&text) {
        for size in [0u64, 1, 10, 1 << 40] {
            if let Some(r) = range.resolve(size) {
                assert!(r.start < r.end && r.end <= size, "{range:?} {size} {r:?}");
            }
        }
    }
});
