//! Secrets and signatures as the Standard Webhooks specification defines
//! them: a secret is `whsec_` and base64 of random bytes; a signature is
//! `v1,` and base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// A new secret: `whsec_` and 24 random bytes in base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// The `webhook-signature` of `body` sent as message `id` at `timestamp`
/// (Unix seconds).
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    let key = STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap_or_default();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("hmac takes any key length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_as_the_specification_s_example() {
        // The example of the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"test": 2432232314}"#;
        let signature = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_fresh_and_decode_to_24_bytes() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        let key = STANDARD.decode(a.trim_start_matches("whsec_")).unwrap();
        assert_eq!(key.len(), 24);
    }
}
