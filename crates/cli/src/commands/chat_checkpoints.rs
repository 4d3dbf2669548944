//! `chat`'s `/undo` and `/diff`: the running session's checkpoints. A file changed
//! since the checkpoint is not overwritten: its diff is shown, and `/undo force`
//! overwrites it.

use oxydra::runtime::conflicts;
use oxydra::types::SessionId;

use crate::setup::agent::Agent;

/// `/undo` (`force`: `/undo force`).
pub async fn undo(agent: &Agent, session: &SessionId, force: bool) {
    let Some(handle) = agent.runtime.checkpoints() else {
        eprintln!("checkpoints are not recorded in this chat");
        return;
    };
    match handle.undo(session, force).await {
        Ok(reverted) => {
            eprintln!(
                "undid turn {}: {} path(s) put back",
                reverted
                    .turns
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                reverted.paths.len()
            );
            for missing in &reverted.not_captured {
                eprintln!(
                    "  not put back: {} ({} bytes, over the cap)",
                    missing.path, missing.bytes
                );
            }
            for call in &reverted.irreversible {
                eprintln!("  cannot be undone: {call}");
            }
        }
        Err(error) => match conflicts(&error) {
            Some(changed) => {
                eprintln!("these files changed since the checkpoint and were not overwritten:");
                for conflict in changed {
                    eprintln!("  {}", conflict.path);
                    eprint!("{}", conflict.diff);
                }
                eprintln!("/undo force overwrites them");
            }
            None => eprintln!("error: {error}"),
        },
    }
}

/// `/diff`.
pub async fn diff(agent: &Agent, session: &SessionId) {
    let Some(handle) = agent.runtime.checkpoints() else {
        eprintln!("checkpoints are not recorded in this chat");
        return;
    };
    match handle.diff(session, None).await {
        Ok(text) if text.is_empty() => eprintln!("no turn of this session changed the workspace"),
        Ok(text) => eprint!("{text}"),
        Err(error) => eprintln!("error: {error}"),
    }
}
