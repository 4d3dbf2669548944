//! Provenance-aware consent (DESIGN.md §3.13): once text from outside the person's
//! control is in a session's context, its side-effecting and privileged calls wait for
//! a person's decision, also under a broker that approves everything and over a
//! standing grant.
//!
//! The runtime records in a session's [`ProvenanceLedger`] the source of each tool
//! result it appends; the executor, for each side-effecting or privileged call, asks
//! the [`ProvenancePolicy`] which of those sources hold that tool, and puts the hold
//! on the [`PermissionRequest`](crate::PermissionRequest). A person approving a held
//! call clears the ledger: the hold is back only when new untrusted text arrives.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use oxydra_types::{Source, SourceKind};

/// Which sources hold which tools' side-effecting and privileged calls. The default
/// holds on `web` and `mcp` for every tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenancePolicy {
    hold: BTreeSet<SourceKind>,
    tools: BTreeMap<String, BTreeSet<SourceKind>>,
}

impl Default for ProvenancePolicy {
    fn default() -> Self {
        Self::new([SourceKind::Web, SourceKind::Mcp])
    }
}

impl ProvenancePolicy {
    /// A policy holding every tool on the sources of `hold`.
    pub fn new(hold: impl IntoIterator<Item = SourceKind>) -> Self {
        Self {
            hold: hold.into_iter().collect(),
            tools: BTreeMap::new(),
        }
    }

    /// A policy that holds nothing (provenance plays no part in consent).
    pub fn off() -> Self {
        Self::new([])
    }

    /// The same policy, with `tool` held on the sources of `hold` instead of the
    /// default ones.
    pub fn with_tool(
        mut self,
        tool: impl Into<String>,
        hold: impl IntoIterator<Item = SourceKind>,
    ) -> Self {
        self.tools.insert(tool.into(), hold.into_iter().collect());
        self
    }

    /// The kinds of source that hold `tool`.
    pub fn holds(&self, tool: &str) -> &BTreeSet<SourceKind> {
        self.tools.get(tool).unwrap_or(&self.hold)
    }

    /// The hold on `tool` in a session that has read `seen`: `None` when none of the
    /// sources seen holds it.
    pub fn hold_for(&self, tool: &str, seen: &[Source]) -> Option<ProvenanceHold> {
        let kinds = self.holds(tool);
        let sources: Vec<Source> = seen
            .iter()
            .filter(|source| kinds.contains(&source.kind()))
            .cloned()
            .collect();
        if sources.is_empty() {
            None
        } else {
            Some(ProvenanceHold::new(sources))
        }
    }
}

/// Why a call waits for a person: the untrusted sources the run read since the
/// person's last decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenanceHold {
    /// The sources, in the order they were first read.
    pub sources: Vec<Source>,
}

/// How many sources a reason names before it says how many more there are.
const NAMED_SOURCES: usize = 3;

impl ProvenanceHold {
    /// A hold for `sources`.
    pub fn new(sources: Vec<Source>) -> Self {
        Self { sources }
    }

    /// The reason a person (and the model, on a denial) reads: `this run read
    /// https://example.com/page since your last decision`.
    pub fn reason(&self) -> String {
        let mut named: Vec<String> = self
            .sources
            .iter()
            .take(NAMED_SOURCES)
            .map(Source::describe)
            .collect();
        let more = self.sources.len().saturating_sub(NAMED_SOURCES);
        if more > 0 {
            named.push(format!("{more} more"));
        }
        let list = match named.as_slice() {
            [] => "untrusted text".to_owned(),
            [one] => one.clone(),
            [head @ .., last] => format!("{} and {last}", head.join(", ")),
        };
        format!("this run read {list} since your last decision")
    }
}

/// The untrusted sources a session has read since a person last decided on one of its
/// held calls. Clones share the ledger: the runtime records into it, the executor
/// reads it and clears it when a person approves a held call.
#[derive(Debug, Clone, Default)]
pub struct ProvenanceLedger {
    seen: Arc<Mutex<Vec<Source>>>,
}

impl ProvenanceLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the session read `source` (the person's own words are not
    /// recorded; a source already recorded is kept once, where it was first read).
    pub fn record(&self, source: &Source) {
        if *source == Source::Person {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if !seen.contains(source) {
            seen.push(source.clone());
        }
    }

    /// The sources recorded since the last decision, in the order first read.
    pub fn sources(&self) -> Vec<Source> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A person decided: forget the sources read before.
    pub fn clear(&self) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web(url: &str) -> Source {
        Source::Web(url.to_owned())
    }

    #[test]
    fn the_default_holds_on_web_and_mcp_only() {
        let policy = ProvenancePolicy::default();
        assert!(
            policy
                .hold_for("shell_exec", &[Source::Workspace])
                .is_none()
        );
        assert!(policy.hold_for("shell_exec", &[Source::Command]).is_none());
        assert!(policy.hold_for("shell_exec", &[Source::Config]).is_none());
        let hold = policy
            .hold_for("shell_exec", &[Source::Workspace, web("https://x.test/")])
            .unwrap();
        assert_eq!(hold.sources, vec![web("https://x.test/")]);
        assert!(policy.hold_for("t", &[Source::Mcp("gh".into())]).is_some());
    }

    #[test]
    fn a_tool_of_its_own_replaces_the_default() {
        let policy = ProvenancePolicy::default()
            .with_tool("shell_exec", [SourceKind::Workspace, SourceKind::Web])
            .with_tool("file_write", []);
        assert!(
            policy
                .hold_for("shell_exec", &[Source::Workspace])
                .is_some()
        );
        assert!(
            policy
                .hold_for("file_write", &[web("https://x.test/")])
                .is_none()
        );
        assert!(
            policy
                .hold_for("file_edit", &[web("https://x.test/")])
                .is_some()
        );
        assert!(ProvenancePolicy::off().hold_for("x", &[web("u")]).is_none());
    }

    #[test]
    fn the_reason_names_the_sources() {
        let one = ProvenanceHold::new(vec![web("https://x.test/p")]);
        assert_eq!(
            one.reason(),
            "this run read https://x.test/p since your last decision"
        );
        let two = ProvenanceHold::new(vec![web("https://a.test/"), Source::Mcp("gh".into())]);
        assert_eq!(
            two.reason(),
            "this run read https://a.test/ and the MCP server \"gh\" since your last decision"
        );
        let many = ProvenanceHold::new((0..5).map(|i| web(&format!("u{i}"))).collect());
        assert!(
            many.reason().contains("u0, u1, u2 and 2 more"),
            "{}",
            many.reason()
        );
    }

    #[test]
    fn the_ledger_keeps_each_source_once_until_cleared() {
        let ledger = ProvenanceLedger::new();
        let shared = ledger.clone();
        ledger.record(&web("a"));
        ledger.record(&Source::Person);
        shared.record(&web("a"));
        shared.record(&Source::Workspace);
        assert_eq!(ledger.sources(), vec![web("a"), Source::Workspace]);
        shared.clear();
        assert!(ledger.sources().is_empty());
    }
}
