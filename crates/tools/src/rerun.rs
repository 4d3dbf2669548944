//! What a tool says about a call that was started before a crash and whose outcome
//! was never recorded: whether running it again is safe.
//!
//! Before a side-effecting or privileged call runs, the runtime stores its intent (with
//! what [`Tool::state_before`](crate::Tool::state_before) saw); after it runs, its
//! outcome. A process killed in between leaves an intent without an outcome, and on
//! resume the runtime asks the tool ([`Tool::rerun_after_crash`](crate::Tool::rerun_after_crash))
//! instead of running the call again blindly.

use std::path::Path;

/// Whether a call interrupted by a crash may run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RerunSafety {
    /// It did not take effect (or running it again changes nothing that matters): the
    /// runtime runs it again, under the same rules and consent as any call.
    Safe,
    /// Its effect is in place already: it is not run again, and the model is told so.
    AlreadyDone,
    /// No one can tell whether it took effect: it is not run again, and the model (and
    /// the person) are told the outcome is unknown.
    Unknown,
}

impl RerunSafety {
    /// The lowercase name (`safe`, `already_done`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::AlreadyDone => "already_done",
            Self::Unknown => "unknown",
        }
    }
}

/// A call whose intent was stored but whose outcome was not (the process stopped
/// while it ran, or before its outcome was stored).
#[derive(Debug, Clone, Copy)]
pub struct CrashedCall<'a> {
    /// Its arguments, as the tool got them (they passed the schema).
    pub args: &'a serde_json::Value,
    /// The workspace it ran in.
    pub workspace_root: &'a Path,
    /// What [`Tool::state_before`](crate::Tool::state_before) returned just before it
    /// ran (`None`: the tool records nothing).
    pub before: Option<&'a str>,
}
