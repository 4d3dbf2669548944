//! `chat`'s `/undo`, `/rewind` and `/diff`: the running session's checkpoints. A
//! file changed since the checkpoint is not overwritten: its diff is shown, and
//! `/undo force` (`/rewind N force`) overwrites it. Both take the session's lease, as
//! `oxydra undo` and `sessions rewind` do.

use oxydra::runtime::conflicts;
use oxydra::types::SessionId;

use super::checkpoints::{conflicts_text, reverted_text, show};
use crate::setup::agent::Agent;

/// `/undo` (`force`: `/undo force`).
pub async fn undo(agent: &Agent, session: &SessionId, force: bool) {
    let Some(handle) = agent.runtime.checkpoints() else {
        eprintln!("checkpoints are not recorded in this chat");
        return;
    };
    match handle.undo(session, force).await {
        Ok(reverted) => show(&reverted_text("undid", session, &reverted)),
        Err(error) => match conflicts(&error) {
            Some(changed) => {
                show(&conflicts_text(changed));
                eprintln!("not overwritten; /undo force overwrites them");
            }
            None => eprintln!("error: {}", crate::terminal_text::lines(&error.to_string())),
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
        Ok(text) => show(&text),
        Err(error) => eprintln!("error: {}", crate::terminal_text::lines(&error.to_string())),
    }
}

/// `/rewind N` (`force`: `/rewind N force`): files and conversation back to before
/// turn N, as `oxydra sessions rewind` does.
pub async fn rewind(agent: &Agent, session: &SessionId, turn: u64, force: bool) {
    let Some(handle) = agent.runtime.checkpoints() else {
        eprintln!("checkpoints are not recorded in this chat");
        return;
    };
    match handle.rewind(session, turn, force).await {
        Ok(reverted) => {
            show(&reverted_text("rewound", session, &reverted));
            if let Some(kept) = reverted.messages_kept {
                eprintln!("  the conversation keeps its first {kept} message(s)");
            }
        }
        Err(error) => match conflicts(&error) {
            Some(changed) => {
                show(&conflicts_text(changed));
                eprintln!("not overwritten; /rewind {turn} force overwrites them");
            }
            None => eprintln!("error: {}", crate::terminal_text::lines(&error.to_string())),
        },
    }
}
