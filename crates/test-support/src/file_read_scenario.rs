//! The whole-process cost scenario: 20 turns, each asking for 8 parallel `file_read`
//! calls of small notes, then a final answer.
//!
//! The `run_process` bench of `oxydra-cli` runs it in-process against a [`MockServer`];
//! `cargo xtask peer-cost` serves it from the `scenario_server` binary of this crate,
//! to `oxydra run` and to the rig peer (`bench/peer-rig`) alike.
//!
//! [`MockServer`]: crate::MockServer

use std::path::Path;

use crate::{Reply, openai};

/// Model turns that ask for tool calls.
pub const TURNS: usize = 20;

/// `file_read` calls in each of those turns.
pub const CALLS_PER_TURN: usize = 8;

/// The requests a complete run makes: one per tool turn and the final answer's.
pub const REQUESTS: usize = TURNS + 1;

/// The user's prompt.
pub const PROMPT: &str = "Read every note, twenty times, then summarise.";

/// The final answer the model gives.
pub const ANSWER: &str = "All files read: the notes agree.";

/// The scripted replies, in order: [`TURNS`] streamed turns of [`CALLS_PER_TURN`]
/// `file_read` calls (`notes/fileN.txt` from line `turn + 1`), then [`ANSWER`].
pub fn replies() -> Vec<Reply> {
    let mut replies = Vec::with_capacity(REQUESTS);
    for turn in 0..TURNS {
        let ids: Vec<String> = (0..CALLS_PER_TURN)
            .map(|call| format!("call_{turn}_{call}"))
            .collect();
        let args: Vec<String> = (0..CALLS_PER_TURN)
            .map(|call| format!(r#"{{"path":"notes/file{call}.txt","offset":{}}}"#, turn + 1))
            .collect();
        let calls: Vec<(&str, &str, &str)> = ids
            .iter()
            .zip(&args)
            .map(|(id, args)| (id.as_str(), "file_read", args.as_str()))
            .collect();
        replies.push(openai::tool_calls(&calls));
    }
    replies.push(openai::text(ANSWER));
    replies
}

/// Writes the notes the calls read into `workspace`: `notes/file0.txt` to
/// `notes/file7.txt`, 40 short lines each.
pub fn write_notes(workspace: &Path) -> std::io::Result<()> {
    let notes = workspace.join("notes");
    std::fs::create_dir_all(&notes)?;
    for file in 0..CALLS_PER_TURN {
        let text: String = (1..=40)
            .map(|line| format!("note {file} line {line}: nothing urgent\n"))
            .collect();
        std::fs::write(notes.join(format!("file{file}.txt")), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_twenty_tool_turns_then_the_answer() {
        let replies = replies();
        assert_eq!(replies.len(), REQUESTS);
        let (last, turns) = replies.split_last().unwrap();
        for (turn, reply) in turns.iter().enumerate() {
            let body = String::from_utf8_lossy(&reply.body);
            assert_eq!(body.matches("\"file_read\"").count(), CALLS_PER_TURN);
            for call in 0..CALLS_PER_TURN {
                assert!(body.contains(&format!("\"call_{turn}_{call}\"")), "{body}");
            }
        }
        assert!(String::from_utf8_lossy(&last.body).contains("All files read"));
    }

    #[test]
    fn the_notes_are_written_where_the_calls_read_them() {
        let dir = std::env::temp_dir().join(format!("oxydra-scenario-{}", std::process::id()));
        write_notes(&dir).unwrap();
        for file in 0..CALLS_PER_TURN {
            let text = std::fs::read_to_string(dir.join(format!("notes/file{file}.txt"))).unwrap();
            assert_eq!(text.lines().count(), 40);
            assert!(text.starts_with(&format!("note {file} line 1:")));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
