//! Opaque identifiers: a readable prefix and a random base62 body
//! (`job_4fQ…`), as peers such as Stripe and DesignCombo do.

use rand::Rng;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ApiError;

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `n` random base62 characters from the OS-seeded thread RNG.
pub fn random_base62(n: usize) -> String {
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char)
        .collect()
}

/// Encodes `value` in base62, left-padded with `0` to `width` characters
/// (its lowest `width` digits when it has more).
pub fn base62_fixed(mut value: u128, width: usize) -> String {
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

/// An id type: the text of one kind of identifier, parsed at the edge (a
/// path, a body, a key) and read back from storage. Keeping each kind its
/// own type means a job's id cannot be passed where an account's is meant.
/// What every id type shares: its resource's name, its parsing from
/// client text, and the 404 for an id that names nothing.
pub trait TypedId: Sized {
    /// The resource, as error messages name it (`file`, `job`, …).
    const RESOURCE: &'static str;

    /// See each type's `parse`.
    fn parse_text(text: &str) -> Option<Self>;

    /// The 404 for `text`, which names no such resource of the caller's.
    fn not_found(text: &str) -> ApiError {
        match Self::RESOURCE {
            "voice" => ApiError::voice_not_found(text),
            resource => ApiError::not_found(resource, text),
        }
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $resource:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
        #[serde(transparent)]
        #[schema(value_type = String)]
        pub struct $name(String);

        impl $name {
            /// The prefix of the ids this service makes (`<prefix>_…`).
            pub const PREFIX: &'static str = $prefix;

            /// A new random id.
            pub fn random() -> Self {
                Self(new_id($prefix))
            }

            /// An id from client input: `None` when the text cannot be an
            /// id of any kind (then nothing by that id exists). Ids are at
            /// most 64 ASCII letters, digits, `_` and `-`.
            pub fn parse(text: &str) -> Option<Self> {
                well_formed(text).then(|| Self(text.to_owned()))
            }

            /// An id read back from our own storage (made by us, or checked
            /// by [`Self::parse`] when it was stored).
            pub fn from_stored(text: String) -> Self {
                Self(text)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl TypedId for $name {
            const RESOURCE: &'static str = $resource;

            fn parse_text(text: &str) -> Option<Self> {
                Self::parse(text)
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(id: $name) -> serde_json::Value {
                serde_json::Value::String(id.0)
            }
        }

        impl From<&$name> for serde_json::Value {
            fn from(id: &$name) -> serde_json::Value {
                serde_json::Value::String(id.0.clone())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

/// Whether `text` can be an id: 1 to 64 ASCII letters, digits, `_` or `-`.
fn well_formed(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

id_type!(
    /// An account (`acct_…`).
    AccountId,
    "acct",
    "account"
);
id_type!(
    /// A job (`job_…`).
    JobId,
    "job",
    "job"
);
id_type!(
    /// An uploaded file (`file_…`).
    FileId,
    "file",
    "file"
);
id_type!(
    /// A voice: a catalog voice (20 base62 characters, derived from its
    /// engine and name) or an account's cloned voice (`voice_…`).
    VoiceId,
    "voice",
    "voice"
);
id_type!(
    /// An avatar: a built-in one (its name) or an account's (`avatar_…`).
    AvatarId,
    "avatar",
    "avatar"
);
id_type!(
    /// An API key (`key_…`; not its secret).
    KeyId,
    "key",
    "key"
);
id_type!(
    /// A webhook endpoint (`whk_…`).
    WebhookId,
    "whk",
    "webhook"
);
id_type!(
    /// A webhook message (`msg_…`): one event for one endpoint, sent as
    /// `webhook-id` on every attempt.
    DeliveryId,
    "msg",
    "delivery"
);

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
    fn typed_ids_parse_client_text() {
        let job = JobId::random();
        assert!(job.starts_with("job_"));
        assert_eq!(JobId::parse(job.as_str()), Some(job.clone()));
        for bad in ["", "job/../x", "job x", "jöb_1", &"a".repeat(65)] {
            assert_eq!(JobId::parse(bad), None, "{bad}");
        }
        assert_eq!(serde_json::to_value(&job).unwrap(), job.as_str());
    }

    #[test]
    fn base62_is_fixed_width() {
        assert_eq!(base62_fixed(0, 4), "0000");
        assert_eq!(base62_fixed(61, 2), "0z");
        assert_eq!(base62_fixed(62, 2), "10");
    }
}
