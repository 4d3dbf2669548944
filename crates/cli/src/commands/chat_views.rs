//! What `chat` shows about its sessions on stderr: the stored sessions (`/sessions`),
//! a session's last messages (`/switch`, `--continue`, `--session`), the chat's state
//! (`/status`) and, on the way out, how to come back.

use oxydra::types::{SessionId, Usage};

use crate::args::OutputFormat;
use crate::config::Effective;
use crate::error::CliError;
use crate::output::listing::{write_messages, write_sessions};
use crate::setup::agent::Agent;
use crate::setup::database::{listing, memory_error};

/// How many of a session's last messages are shown when switching to it.
const RECENT_MESSAGES: usize = 6;

/// What the answered turns of this chat used, for `/status`.
#[derive(Debug, Default, Clone)]
pub struct ChatTally {
    /// Provider calls.
    pub turns: usize,
    /// Tokens.
    pub usage: Usage,
    /// US dollars.
    pub cost: f64,
}

/// Lists the stored sessions and names the current one.
pub async fn list_sessions(
    agent: &Agent,
    db: &crate::config::Database,
    current: &SessionId,
) -> Result<(), CliError> {
    let sessions = listing(agent.memory.as_ref(), db, None).await?;
    let mut out = Vec::new();
    let _ = write_sessions(&mut out, &sessions, OutputFormat::Text);
    eprint!("{}", on_stderr(&String::from_utf8_lossy(&out)));
    eprintln!("current: {current}");
    Ok(())
}

/// Shows the last messages of `session` (on stderr), so the conversation can go on.
pub async fn show_recent(
    agent: &Agent,
    db: &crate::config::Database,
    session: &SessionId,
) -> Result<(), CliError> {
    let messages = agent
        .memory
        .messages(session)
        .await
        .map_err(|error| memory_error(db, error))?;
    let start = messages.len().saturating_sub(RECENT_MESSAGES);
    let recent = messages.get(start..).unwrap_or_default();
    if start > 0 {
        eprintln!("… {start} earlier messages");
    }
    let mut out = Vec::new();
    let _ = write_messages(&mut out, recent, OutputFormat::Text);
    eprint!("{}", on_stderr(&String::from_utf8_lossy(&out)));
    Ok(())
}

/// `/status`: the header's facts (provider, model, sandbox, approvals, workspace),
/// then the session and what this chat's answered turns used.
pub fn status_text(effective: &Effective, session: &SessionId, tally: &ChatTally) -> String {
    let cost = effective.price_known().then_some(tally.cost);
    let used = crate::output::summary_line(tally.turns, &tally.usage, cost, None, session.as_str());
    format!(
        "{}\nthis chat {}",
        crate::output::header_line("chat", effective),
        used.trim_start_matches("— ")
    )
}

/// Said on the way out of a chat whose session holds messages: the command that
/// continues it.
pub async fn resume_hint(agent: &Agent, session: &SessionId) -> Option<String> {
    let stored = agent.memory.messages(session).await.ok()?;
    (!stored.is_empty()).then(|| format!("resume with: oxydra chat --session {session}"))
}

/// `/clear` on a terminal: the screen cleared and the cursor home (on stderr, where
/// the chat's own lines go).
pub fn clear_screen() {
    crate::output::clear_terminal();
    let _ = crate::output::write_stderr_lines(b"\x1b[H\x1b[2J");
}

/// Stored text (or an error quoting a provider) for stderr: through the terminal
/// sanitizer, whether stderr is a terminal or not.
pub fn on_stderr(text: &str) -> std::borrow::Cow<'_, str> {
    crate::terminal_text::lines(text)
}

/// What `/compact` did, in words: `compacted the earlier turns into a summary of 42
/// words (1,234 tokens, $0.0012)`, or that there was nothing to condense.
pub fn compacted_text(compacted: &oxydra::runtime::Compacted) -> String {
    match &compacted.summary {
        None => {
            "nothing to compact: the conversation is one turn long, or condensed already".to_owned()
        }
        Some(summary) => format!(
            "compacted the earlier turns into a summary of {} words ({} tokens, ${}); the \
             next message sends it in their place",
            summary.split_whitespace().count(),
            compacted.usage.total_tokens(),
            crate::output::dollars(compacted.cost)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_says_what_this_chat_used_and_no_price_as_unknown() {
        let flags = crate::args::RunOptions {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..crate::args::RunOptions::default()
        };
        let effective =
            crate::config::merge(&Default::default(), &flags, &|_: &str| None, false).unwrap();
        let session = SessionId::from("ses_abc".to_owned());
        let tally = ChatTally {
            turns: 2,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
                ..Usage::default()
            },
            cost: 0.0012,
        };
        let text = status_text(&effective, &session, &tally);
        let mut lines = text.lines();
        assert!(
            lines.next().unwrap().starts_with("oxydra chat · "),
            "{text}"
        );
        assert_eq!(
            lines.next().unwrap(),
            "this chat 2 turns · 120 tokens (100 in, 20 out) · $0.001200 · session ses_abc"
        );
        let unpriced = crate::args::RunOptions {
            model: Some("a-model-with-no-price".into()),
            ..flags
        };
        let effective =
            crate::config::merge(&Default::default(), &unpriced, &|_: &str| None, false).unwrap();
        let unknown = status_text(&effective, &session, &tally);
        assert!(unknown.contains("cost unknown"), "{unknown}");
    }
}
