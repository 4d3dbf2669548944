//! Exact token counts kept between runs of sessions that live in memory.
//!
//! With memory, a run loads its session from the store and drops the process copy when
//! it ends, so the exact counts computed during the run would be lost and the next run
//! would count the whole history again. The store keeps them here instead: per session,
//! each count with the message's sequence number and a fingerprint of the message (so a
//! count is reused only for the very message it was computed for), the least recently
//! used sessions evicted beyond a number of sessions or of counts.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use oxydra_types::{ContentPart, Message, SessionId};

/// Sessions whose counts are kept.
pub(crate) const MAX_SESSIONS: usize = 64;
/// Counts kept across all sessions.
pub(crate) const MAX_COUNTS: usize = 200_000;

/// The exact token count of one stored message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachedCount {
    /// The message's sequence number.
    pub sequence: u64,
    /// [`fingerprint`] of the message.
    pub fingerprint: u64,
    /// Its exact token count.
    pub exact: u32,
}

/// A hash of everything of `message` its token count depends on (and its role).
pub(crate) fn fingerprint(message: &Message) -> u64 {
    let mut hasher = DefaultHasher::new();
    message.role.as_str().hash(&mut hasher);
    message.content.hash(&mut hasher);
    message.tool_calls.len().hash(&mut hasher);
    for call in &message.tool_calls {
        call.id.as_str().hash(&mut hasher);
        call.name.hash(&mut hasher);
        call.arguments.hash(&mut hasher);
    }
    message
        .tool_call_id
        .as_ref()
        .map(|id| id.as_str())
        .hash(&mut hasher);
    message.name.hash(&mut hasher);
    message.parts.len().hash(&mut hasher);
    for part in &message.parts {
        part.kind().hash(&mut hasher);
        part.media_type().hash(&mut hasher);
        part.base64_data().hash(&mut hasher);
        if let ContentPart::ImageUrl { url } = part {
            url.hash(&mut hasher);
        }
    }
    hasher.finish()
}

#[derive(Debug)]
struct SessionCounts {
    last_used: u64,
    counts: Vec<CachedCount>,
}

/// Counts per session, bounded by sessions and by counts (least recently used out).
#[derive(Debug)]
pub(crate) struct TokenCache {
    sessions: HashMap<SessionId, SessionCounts>,
    total: usize,
    tick: u64,
    max_sessions: usize,
    max_counts: usize,
}

impl Default for TokenCache {
    fn default() -> Self {
        Self::new(MAX_SESSIONS, MAX_COUNTS)
    }
}

impl TokenCache {
    /// A cache of at most `max_sessions` sessions and `max_counts` counts.
    pub fn new(max_sessions: usize, max_counts: usize) -> Self {
        Self {
            sessions: HashMap::new(),
            total: 0,
            tick: 0,
            max_sessions: max_sessions.max(1),
            max_counts: max_counts.max(1),
        }
    }

    /// Takes the counts of `session` out of the cache (empty when none are kept).
    pub fn take(&mut self, session: &SessionId) -> Vec<CachedCount> {
        match self.sessions.remove(session) {
            Some(kept) => {
                self.total = self.total.saturating_sub(kept.counts.len());
                kept.counts
            }
            None => Vec::new(),
        }
    }

    /// Keeps `counts` (in sequence order) for `session`, replacing what it had; the
    /// oldest counts go when one session alone has more than the cap.
    pub fn put(&mut self, session: SessionId, mut counts: Vec<CachedCount>) {
        self.forget(&session);
        if counts.is_empty() {
            return;
        }
        if counts.len() > self.max_counts {
            let excess = counts.len() - self.max_counts;
            counts.drain(..excess);
        }
        self.tick = self.tick.saturating_add(1);
        self.total = self.total.saturating_add(counts.len());
        self.sessions.insert(
            session.clone(),
            SessionCounts {
                last_used: self.tick,
                counts,
            },
        );
        while self.sessions.len() > self.max_sessions || self.total > self.max_counts {
            let oldest = self
                .sessions
                .iter()
                .filter(|(id, _)| **id != session)
                .min_by_key(|(_, kept)| kept.last_used)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(oldest) => self.forget(&oldest),
                None => break,
            }
        }
    }

    /// Drops the counts of `session`.
    pub fn forget(&mut self, session: &SessionId) {
        self.take(session);
    }

    /// Counts kept in all.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(n: u64) -> Vec<CachedCount> {
        (1..=n)
            .map(|sequence| CachedCount {
                sequence,
                fingerprint: sequence,
                exact: 1,
            })
            .collect()
    }

    #[test]
    fn least_recently_used_sessions_go_first() {
        let mut cache = TokenCache::new(2, 10);
        let (a, b, c) = (
            SessionId::from("a"),
            SessionId::from("b"),
            SessionId::from("c"),
        );
        cache.put(a.clone(), counts(3));
        cache.put(b.clone(), counts(3));
        // `a` is used again, so `b` is the oldest when `c` arrives.
        let kept = cache.take(&a);
        cache.put(a.clone(), kept);
        cache.put(c.clone(), counts(3));
        assert!(cache.take(&b).is_empty());
        assert_eq!(cache.len(), 6);
        // Too many counts: the oldest session goes.
        cache.put(b.clone(), counts(6));
        assert_eq!(cache.len(), 9);
        assert!(cache.take(&a).is_empty());
        assert_eq!(cache.take(&c).len(), 3);
        // One session alone over the cap keeps its newest counts.
        cache.put(a.clone(), counts(25));
        let kept = cache.take(&a);
        assert_eq!(kept.len(), 10);
        assert_eq!(kept.first().map(|c| c.sequence), Some(16));
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn fingerprints_tell_messages_apart() {
        let a = Message::user("hello");
        assert_eq!(fingerprint(&a), fingerprint(&Message::user("hello")));
        assert_ne!(fingerprint(&a), fingerprint(&Message::user("hello!")));
        assert_ne!(fingerprint(&a), fingerprint(&Message::assistant("hello")));
        // Parts count too: another image is another count.
        let with = |bytes: &[u8]| {
            a.clone()
                .with_parts(vec![ContentPart::image("image/png", bytes)])
        };
        assert_ne!(fingerprint(&a), fingerprint(&with(b"one")));
        assert_ne!(fingerprint(&with(b"one")), fingerprint(&with(b"two")));
        assert_eq!(fingerprint(&with(b"one")), fingerprint(&with(b"one")));
    }
}
