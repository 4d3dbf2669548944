//! Test-only crash points: a debug build whose `OXYDRA_TEST_CRASH_AT` names a point
//! aborts the process there, at once (no destructor runs, nothing is flushed — as a
//! `kill -9` would leave it), so that tests can stop a run between a call's intent,
//! its execution and its outcome deterministically (docs/testing.md). Release builds
//! never read the variable.

/// The environment variable naming the point to abort at.
#[cfg(debug_assertions)]
pub(crate) const CRASH_AT_VAR: &str = "OXYDRA_TEST_CRASH_AT";

/// Where a side-effecting call's journal may stop the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CrashPoint {
    /// The intent is stored; the tool has not started.
    IntentStored,
    /// The tool has returned; its outcome is not stored.
    ToolReturned,
    /// The outcome is stored; the result message is not.
    OutcomeStored,
}

#[cfg(debug_assertions)]
impl CrashPoint {
    /// The name `OXYDRA_TEST_CRASH_AT` gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::IntentStored => "after_intent",
            Self::ToolReturned => "after_execution",
            Self::OutcomeStored => "after_outcome",
        }
    }
}

/// Aborts the process when this is a debug build and `OXYDRA_TEST_CRASH_AT` names
/// `point`.
pub(crate) fn reached(point: CrashPoint) {
    #[cfg(debug_assertions)]
    if std::env::var(CRASH_AT_VAR).is_ok_and(|named| named == point.name()) {
        eprintln!("{CRASH_AT_VAR}={}: aborting", point.name());
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = point;
}
