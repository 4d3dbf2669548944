//! [`HeldLeases`]: the leases one store holds, so that its appends may write where its
//! own lease is the live one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use oxydra_types::SessionId;

use crate::lease::SessionLease;

/// The leases a store (and every clone of it) holds: session id → owner id. A backend
/// records a lease when it takes it, forgets it when it releases or loses it, and
/// passes [`owner`](Self::owner) to [`check_write`](crate::check_write) on every append.
/// Cheap to clone: clones share the map.
#[derive(Debug, Clone, Default)]
pub struct HeldLeases {
    held: Arc<Mutex<HashMap<String, String>>>,
}

impl HeldLeases {
    /// No lease held.
    pub fn new() -> Self {
        Self::default()
    }

    /// The map; a panic while it was held left it whole (each change is one insert or
    /// remove), so a poisoned lock is still safe to use.
    fn map(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `lease` as held (replacing any earlier lease on its session).
    pub fn record(&self, lease: &SessionLease) {
        self.map()
            .insert(lease.session_id.as_str().to_owned(), lease.owner.clone());
    }

    /// Forgets `lease`, if it is still the one held on its session.
    pub fn forget(&self, lease: &SessionLease) {
        let mut held = self.map();
        if held.get(lease.session_id.as_str()) == Some(&lease.owner) {
            held.remove(lease.session_id.as_str());
        }
    }

    /// The owner of the lease held on `session`, if any.
    pub fn owner(&self, session: &SessionId) -> Option<String> {
        self.map().get(session.as_str()).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(session: &str, owner: &str) -> SessionLease {
        SessionLease::from_row(&SessionId::from(session), owner.into(), 1, "h".into(), 0, 1)
    }

    #[test]
    fn recorded_leases_are_shared_by_clones_and_forgotten_only_by_their_owner() {
        let held = HeldLeases::new();
        let clone = held.clone();
        let session = SessionId::from("ses_a");
        assert_eq!(held.owner(&session), None);
        held.record(&lease("ses_a", "o1"));
        assert_eq!(clone.owner(&session).as_deref(), Some("o1"));
        // A newer lease replaces it; forgetting the older one keeps the newer.
        clone.record(&lease("ses_a", "o2"));
        held.forget(&lease("ses_a", "o1"));
        assert_eq!(held.owner(&session).as_deref(), Some("o2"));
        assert_eq!(held.owner(&SessionId::from("ses_b")), None);
        held.forget(&lease("ses_a", "o2"));
        assert_eq!(clone.owner(&session), None);
    }
}
