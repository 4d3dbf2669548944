//! How `run` and `chat` word a task that ended early: the runtime's message, what to
//! change when a budget ran out (the flag and the configuration key), and how to go
//! on. One wording for both commands, so a timeout reads the same in each.

use oxydra::runtime::{Budget, RuntimeError};
use oxydra::types::SessionId;

/// Where the task ran, which decides how the person goes on after it.
#[derive(Debug, Clone, Copy)]
pub enum Place<'a> {
    /// `oxydra run`: `kept` says whether the session stored what was done.
    Run {
        /// The session the task ran in.
        session: &'a SessionId,
        /// Whether anything of the task was stored.
        kept: bool,
    },
    /// `oxydra chat`: the session goes on with the next message.
    Chat,
}

/// The line a person reads for `error`: `budget `turn_timeout` exceeded: … — raise it
/// with --turn-timeout SECS or `turn_timeout_secs` in [runtime]; the session keeps what
/// was done …`.
pub fn ended_early(error: &RuntimeError, place: Place<'_>) -> String {
    // A busy session was never opened: this task did nothing to it.
    if matches!(error, RuntimeError::SessionBusy(_)) {
        return error.to_string();
    }
    let raise = match error {
        RuntimeError::BudgetExceeded { budget, .. } => raise_hint(*budget),
        _ => None,
    };
    let raise = raise.map_or_else(String::new, |hint| format!(" — {hint}"));
    let go_on = match place {
        Place::Run { kept: false, .. } => " (nothing was stored)".to_owned(),
        Place::Run {
            session,
            kept: true,
        } => format!(
            " (session {session} keeps what was done; continue it with --session {session})"
        ),
        Place::Chat => " (the session keeps what was done; the next message goes on)".to_owned(),
    };
    format!("{error}{raise}{go_on}")
}

/// The flag and key that set `budget`.
fn raise_hint(budget: Budget) -> Option<String> {
    let (flag, key) = match budget {
        Budget::MaxTurns => ("--max-turns N", "max_turns"),
        Budget::MaxCost => ("--max-cost USD", "max_cost"),
        Budget::TurnTimeout => ("--turn-timeout SECS", "turn_timeout_secs"),
        // A budget newer than this wording (`Budget` is `#[non_exhaustive]`).
        _ => return None,
    };
    Some(format!("raise it with {flag} or `{key}` in [runtime]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout() -> RuntimeError {
        RuntimeError::BudgetExceeded {
            budget: Budget::TurnTimeout,
            message: "no text or tool call arrived from the model within the 1000 ms turn timeout"
                .to_owned(),
        }
    }

    #[test]
    fn run_and_chat_word_a_timeout_the_same_but_for_how_to_go_on() {
        let session = SessionId::from("ses_1");
        let run = ended_early(
            &timeout(),
            Place::Run {
                session: &session,
                kept: true,
            },
        );
        let chat = ended_early(&timeout(), Place::Chat);
        let shared = "budget `turn_timeout` exceeded: no text or tool call arrived from the \
                      model within the 1000 ms turn timeout — raise it with --turn-timeout SECS \
                      or `turn_timeout_secs` in [runtime]";
        assert!(run.starts_with(shared), "{run}");
        assert!(chat.starts_with(shared), "{chat}");
        assert!(run.ends_with("continue it with --session ses_1)"), "{run}");
        assert!(chat.ends_with("the next message goes on)"), "{chat}");
    }

    #[test]
    fn other_errors_get_no_budget_hint() {
        let error = RuntimeError::Config("bad".to_owned());
        let session = SessionId::from("ses_1");
        let line = ended_early(
            &error,
            Place::Run {
                session: &session,
                kept: false,
            },
        );
        assert_eq!(line, "configuration error: bad (nothing was stored)");
        assert!(!ended_early(&error, Place::Chat).contains("raise it"));
    }
}
