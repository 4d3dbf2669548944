//! Typed identifiers, so a session id can never be passed where a call id belongs.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh identifier: milliseconds since the epoch (so ids sort by creation time),
/// then 64 random bits and a process-wide counter (so two ids made in the same
/// millisecond, in this process or another, differ).
fn fresh_id(prefix: &str) -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(count);
    hasher.write_u128(millis);
    let random = hasher.finish();
    format!("{prefix}{millis:012x}{random:016x}{:04x}", count & 0xffff)
}

macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new, unique id.
            pub fn generate() -> Self {
                Self(fresh_id($prefix))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

typed_id!(
    /// Identifies a conversation session (its stored messages, summary and state).
    SessionId,
    "ses_"
);
typed_id!(
    /// Identifies a coordinator run of an agent blueprint.
    RunId,
    "run_"
);
typed_id!(
    /// Identifies one tool call; the tool's result message carries the same id.
    CallId,
    "call_"
);
typed_id!(
    /// Identifies one request for a person's approval of a tool call (a deferred
    /// consent request).
    ApprovalId,
    "apr_"
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn generated_ids_are_unique_and_prefixed() {
        let ids: HashSet<SessionId> = (0..10_000).map(|_| SessionId::generate()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|id| id.as_str().starts_with("ses_")));
        assert!(RunId::generate().as_str().starts_with("run_"));
        assert!(CallId::generate().as_str().starts_with("call_"));
        assert!(ApprovalId::generate().as_str().starts_with("apr_"));
    }

    #[test]
    fn ids_serialize_as_plain_strings() {
        let id = CallId::from("call_abc");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"call_abc\"");
        let back: CallId = serde_json::from_str("\"call_abc\"").unwrap();
        assert_eq!(back, id);
        assert_eq!(back.to_string(), "call_abc");
    }
}
