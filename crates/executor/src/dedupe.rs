//! Dedupe: the canonical key of a call and the per-session cache of recent calls.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use oxydra_tools::ToolOutput;
use oxydra_types::SessionId;
use serde_json::Value;

/// `tool_name|arguments`, with object keys sorted at every level, so two calls that
/// differ only in key order have the same key.
///
/// ```
/// let a = oxydra_executor::canonical_key("t", &serde_json::json!({"b": 1, "a": {"d": 2, "c": 3}}));
/// assert_eq!(a, r#"t|{"a":{"c":3,"d":2},"b":1}"#);
/// ```
pub fn canonical_key(tool_name: &str, args: &Value) -> String {
    let mut key = String::with_capacity(tool_name.len() + 64);
    key.push_str(tool_name);
    key.push('|');
    write_sorted(&mut key, args);
    key
}

fn write_sorted(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (name, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}", Value::String(name.clone()));
                out.push(':');
                write_sorted(out, item);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_sorted(out, item);
            }
            out.push(']');
        }
        scalar => {
            let _ = write!(out, "{scalar}");
        }
    }
}

#[derive(Debug, Default)]
struct SessionCache {
    /// Read-only outputs by key, reused for duplicates.
    reads: HashMap<String, (Instant, ToolOutput)>,
    /// When opted-in side-effecting calls ran, by key.
    effects: HashMap<String, Instant>,
}

/// Recent calls per session (persistent executor state).
#[derive(Debug, Default)]
pub(crate) struct DedupeCache {
    sessions: DashMap<SessionId, SessionCache>,
}

impl DedupeCache {
    /// The output of an identical read-only call within `window`.
    pub(crate) fn cached_read(
        &self,
        session: &SessionId,
        key: &str,
        window: Duration,
        now: Instant,
    ) -> Option<ToolOutput> {
        let cache = self.sessions.get(session)?;
        let (at, output) = cache.reads.get(key)?;
        (now.saturating_duration_since(*at) < window).then(|| output.clone())
    }

    /// Remember a read-only call's output.
    pub(crate) fn store_read(
        &self,
        session: &SessionId,
        key: String,
        output: ToolOutput,
        now: Instant,
    ) {
        self.sessions
            .entry(session.clone())
            .or_default()
            .reads
            .insert(key, (now, output));
    }

    /// How long ago an identical opted-in side-effecting call ran, within `window`.
    pub(crate) fn effect_age(
        &self,
        session: &SessionId,
        key: &str,
        window: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let cache = self.sessions.get(session)?;
        let age = now.saturating_duration_since(*cache.effects.get(key)?);
        (age < window).then_some(age)
    }

    /// Remember that an opted-in side-effecting call ran.
    pub(crate) fn record_effect(&self, session: &SessionId, key: String, now: Instant) {
        self.sessions
            .entry(session.clone())
            .or_default()
            .effects
            .insert(key, now);
    }

    /// Forget the session's read outputs (a side effect may have changed the world).
    pub(crate) fn clear_reads(&self, session: &SessionId) {
        if let Some(mut cache) = self.sessions.get_mut(session) {
            cache.reads.clear();
        }
    }

    /// Drop entries older than `window`, and sessions left empty.
    pub(crate) fn prune(&self, window: Duration, now: Instant) {
        self.sessions.retain(|_, cache| {
            cache
                .reads
                .retain(|_, (at, _)| now.saturating_duration_since(*at) < window);
            cache
                .effects
                .retain(|_, at| now.saturating_duration_since(*at) < window);
            !cache.reads.is_empty() || !cache.effects.is_empty()
        });
    }

    /// How many sessions have entries.
    pub(crate) fn sessions(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_but_values_do() {
        let a = canonical_key("t", &json!({"x": [1, {"b": 2, "a": 1}], "y": "s"}));
        let b = canonical_key("t", &json!({"y": "s", "x": [1, {"a": 1, "b": 2}]}));
        assert_eq!(a, b);
        assert_ne!(
            a,
            canonical_key("t", &json!({"y": "s", "x": [{"a": 1, "b": 2}, 1]}))
        );
        assert_ne!(
            a,
            canonical_key("u", &json!({"x": [1, {"a": 1, "b": 2}], "y": "s"}))
        );
        assert_eq!(
            canonical_key("t", &json!({"q\"": null})),
            r#"t|{"q\"":null}"#
        );
    }

    #[test]
    fn entries_are_per_session_and_windowed() {
        let cache = DedupeCache::default();
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        let now = Instant::now();
        let window = Duration::from_secs(10);
        cache.store_read(&a, "k".into(), ToolOutput::text("out"), now);
        assert!(cache.cached_read(&a, "k", window, now).is_some());
        assert!(cache.cached_read(&b, "k", window, now).is_none());
        assert!(cache.cached_read(&a, "k", window, now + window).is_none());
        cache.record_effect(&a, "e".into(), now);
        assert_eq!(
            cache.effect_age(&a, "e", window, now + Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
        cache.clear_reads(&a);
        assert!(cache.cached_read(&a, "k", window, now).is_none());
        assert!(cache.effect_age(&a, "e", window, now).is_some());
        cache.prune(window, now + window);
        assert_eq!(cache.sessions(), 0);
    }
}
