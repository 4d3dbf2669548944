//! Executor settings.

use std::time::Duration;

/// How the executor runs calls. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolExecutorConfig {
    /// Longest a single call may run before it is stopped (default 120 s).
    pub execution_timeout: Duration,
    /// Longest the executor waits for a consent decision; elapsing is a denial (default 60 s).
    pub permission_timeout: Duration,
    /// How long an identical call counts as a duplicate (default 5 min).
    pub dedupe_window: Duration,
    /// Whether every `Privileged` tool asks for consent even without a
    /// `requires_consent` rule (default `true`). Rule-bound consent always applies.
    pub require_permissions: bool,
    /// How many read-only calls of one group run at once (default 16; clamped to
    /// `1..=Semaphore::MAX_PERMITS`).
    pub max_parallel: usize,
}

impl Default for ToolExecutorConfig {
    fn default() -> Self {
        Self {
            execution_timeout: Duration::from_secs(120),
            permission_timeout: Duration::from_secs(60),
            dedupe_window: Duration::from_secs(300),
            require_permissions: true,
            max_parallel: 16,
        }
    }
}
