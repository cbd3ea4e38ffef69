//! Opaque identifiers: a readable prefix and a random base62 body
//! (`job_4fQ…`), as peers such as Stripe and DesignCombo do.

use rand::Rng;

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `n` random base62 characters from the OS-seeded thread RNG.
pub fn random_base62(n: usize) -> String {
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char)
        .collect()
}

/// Encodes `value` in base62, left-padded with `0` to `width` characters.
pub fn base62_fixed(mut value: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(value % 62) as usize];
        value /= 62;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// A new identifier such as `job_` followed by 20 base62 characters.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_base62(20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_prefix_and_length() {
        let id = new_id("job");
        assert!(id.starts_with("job_"));
        assert_eq!(id.len(), 24);
        assert_ne!(new_id("job"), id);
    }

    #[test]
    fn base62_is_fixed_width() {
        assert_eq!(base62_fixed(0, 4), "0000");
        assert_eq!(base62_fixed(61, 2), "0z");
        assert_eq!(base62_fixed(62, 2), "10");
    }
}
