//! What a rule says about its tool, as data: the kinds table parses into it, a
//! configured rule binds it to a tool, and the loop's checks read it.

use std::time::Duration;

use crate::permission_scope::PermissionScope;

/// What a rule says about its tool. Scopes: per session run (a user message and the
/// turns that follow it, across their batches) for `MaxCalls` and `ExclusiveGroup`, per
/// process for the ordering rules, persistent for `Cooldown` and consent grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRuleKind {
    /// At most this many successful calls per session run; a failed call gives its slot
    /// back (`max_calls`, `value`).
    MaxCalls(u32),
    /// Only one tool of the group (this tool and the listed ones) may be used per session
    /// run (`exclusive_group`, `group = [tools]`).
    ExclusiveGroup(Vec<String>),
    /// A named exclusive group: rules naming the same group merge their tools
    /// (`exclusive_group`, `group = "name"`, `tools = [...]`).
    NamedExclusiveGroup {
        /// The group's name.
        name: String,
        /// Members besides the rule's own tool.
        tools: Vec<String>,
    },
    /// Runs (with `{}`) at the start of each process; other tools wait until every
    /// start tool has run successfully (`start_constraint`).
    StartConstraint,
    /// May run only after each listed tool ran in this process
    /// (`requires_preceding_tools`, `tools`).
    RequiresPrecedingTools(Vec<String>),
    /// Must run before the listed tools; refused once any of them ran in this process
    /// (`requires_following_tools`, `tools`).
    RequiresFollowingTools(Vec<String>),
    /// Runs (with `{}`) before the process exits unless it already ran
    /// (`required_before_exit`).
    RequiredBeforeExit,
    /// Running it continues the loop without a heartbeat request (`continue_loop`).
    ContinueLoop,
    /// Running it ends the loop (`exit_loop`).
    ExitLoop,
    /// At most one successful run per this much time (counted from when it finished),
    /// across session runs (`cooldown`, `secs`).
    Cooldown(Duration),
    /// Asks the permission broker before each run unless a standing grant covers it
    /// (`requires_consent`, `scope` = `tool` | `session` | `arguments`, default `session`).
    RequiresConsent {
        /// What a standing grant covers.
        scope: PermissionScope,
    },
    /// Never dedupe this tool, even when read-only (`never_dedupe`).
    NeverDedupe,
    /// Dedupe this side-effecting tool: an identical call within the window is refused
    /// (`dedupe`).
    Dedupe,
}
