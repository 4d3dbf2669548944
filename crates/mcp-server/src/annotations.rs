//! The MCP annotations of each served tool: hints that tell a client which calls only
//! read, which change things, and which are safe to repeat.

use oxydra_coordinator::{
    CANCEL_AGENT_RUN, DECIDE_APPROVAL, GET_AGENT_RUN, LIST_AGENT_BLUEPRINTS,
    LIST_PENDING_APPROVALS, START_AGENT_RUN,
};
use rmcp::model::ToolAnnotations;

/// The annotations of the tool named `name`; `None` for a tool this server does not
/// know (none is served without annotations: see the test below).
pub fn for_tool(name: &str) -> Option<ToolAnnotations> {
    let (title, read_only, destructive, idempotent) = match name {
        // Reads the configuration; the same answer every time.
        LIST_AGENT_BLUEPRINTS => ("List agent blueprints", true, false, true),
        // Creates a run each call, and the run does whatever its blueprint's tools do
        // (which may overwrite files or run commands).
        START_AGENT_RUN => ("Start an agent run", false, true, false),
        // Reads a run; its answer changes as the run progresses, but it changes nothing.
        GET_AGENT_RUN => ("Get an agent run", true, false, true),
        // Stops work in progress; cancelling again has no further effect.
        CANCEL_AGENT_RUN => ("Cancel an agent run", false, true, true),
        // Reads a run's open consent requests.
        LIST_PENDING_APPROVALS => ("List a run's pending approvals", true, false, true),
        // Lets a waiting tool call run (which may overwrite files or run commands) or
        // refuses it; a second decision on the same request is refused.
        DECIDE_APPROVAL => ("Decide a pending approval", false, true, false),
        _ => return None,
    };
    Some(
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(idempotent)
            // Runs reach only what the configuration's blueprints allow, but an AI
            // agent's provider and a blueprint's tools (web_fetch, MCP servers) may
            // reach outside this machine.
            .open_world(name == START_AGENT_RUN),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_coordinator::{AGENT_TOOL_NAMES, RUN_CONTROL_TOOL_NAMES};

    #[test]
    fn every_served_tool_has_annotations_and_only_readers_are_read_only() {
        for name in AGENT_TOOL_NAMES.iter().chain(&RUN_CONTROL_TOOL_NAMES) {
            let annotations = for_tool(name);
            assert!(annotations.is_some(), "{name}");
        }
        let read_only = |name| for_tool(name).and_then(|a| a.read_only_hint);
        assert_eq!(read_only(LIST_AGENT_BLUEPRINTS), Some(true));
        assert_eq!(read_only(GET_AGENT_RUN), Some(true));
        assert_eq!(read_only(START_AGENT_RUN), Some(false));
        assert_eq!(read_only(CANCEL_AGENT_RUN), Some(false));
        assert_eq!(read_only(LIST_PENDING_APPROVALS), Some(true));
        assert_eq!(read_only(DECIDE_APPROVAL), Some(false));
        let idempotent = |name| for_tool(name).and_then(|a| a.idempotent_hint);
        assert_eq!(idempotent(START_AGENT_RUN), Some(false));
        assert_eq!(idempotent(CANCEL_AGENT_RUN), Some(true));
        assert!(for_tool("file_read").is_none());
    }
}
