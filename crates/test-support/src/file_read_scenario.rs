//! The whole-process cost scenario: 20 turns, each asking for 8 parallel `file_read`
//! calls of small notes, then a final answer.
//!
//! The `run_process` bench of `oxydra-cli` runs it in-process against a [`MockServer`];
//! `cargo xtask peer-cost` serves it from the `scenario_server` binary of this crate
//! ([`server`]), to `oxydra run` and to the peers (`bench/peer-*`) alike: streamed to a
//! client that asks for a stream, whole to one that does not.
//!
//! [`MockServer`]: crate::MockServer

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{MockServer, Reply, openai};

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
    script(openai::tool_calls, openai::text)
}

/// The same script as [`replies`], each reply whole (one JSON body), as a client
/// that asks with `stream: false` gets it.
pub fn whole_replies() -> Vec<Reply> {
    script(openai::whole_tool_calls, openai::whole_text)
}

/// A mock server playing the script, each reply in the form its request asks for:
/// streamed when the request's body has `"stream": true`, whole otherwise (the
/// OpenAI API's default). A request past the script gets HTTP 500.
pub fn server() -> std::io::Result<MockServer> {
    let streamed = replies();
    let whole = whole_replies();
    let next = AtomicUsize::new(0);
    MockServer::builder()
        .respond_with(move |request| {
            let turn = next.fetch_add(1, Ordering::SeqCst);
            let script = if request.body.get("stream") == Some(&serde_json::Value::Bool(true)) {
                &streamed
            } else {
                &whole
            };
            script.get(turn).cloned().unwrap_or_else(|| {
                Reply::json(
                    500,
                    r#"{"error":{"message":"script exhausted","type":"server_error"}}"#,
                )
            })
        })
        .start()
}

/// The script, with `calls` making a turn of tool calls and `text` the answer.
fn script(calls: fn(&[openai::Call<'_>]) -> Reply, text: fn(&str) -> Reply) -> Vec<Reply> {
    let mut replies = Vec::with_capacity(REQUESTS);
    for turn in 0..TURNS {
        let ids: Vec<String> = (0..CALLS_PER_TURN)
            .map(|call| format!("call_{turn}_{call}"))
            .collect();
        let args: Vec<String> = (0..CALLS_PER_TURN)
            .map(|call| format!(r#"{{"path":"notes/file{call}.txt","offset":{}}}"#, turn + 1))
            .collect();
        let turn_calls: Vec<openai::Call<'_>> = ids
            .iter()
            .zip(&args)
            .map(|(id, args)| (id.as_str(), "file_read", args.as_str()))
            .collect();
        replies.push(calls(&turn_calls));
    }
    replies.push(text(ANSWER));
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
    fn the_whole_script_makes_the_same_calls_as_json_bodies() {
        let whole = whole_replies();
        assert_eq!(whole.len(), REQUESTS);
        let (last, turns) = whole.split_last().unwrap();
        for (turn, reply) in turns.iter().enumerate() {
            let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
            let message = &body["choices"][0]["message"];
            assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
            let calls = message["tool_calls"].as_array().unwrap();
            assert_eq!(calls.len(), CALLS_PER_TURN);
            for (call, value) in calls.iter().enumerate() {
                assert_eq!(value["id"], format!("call_{turn}_{call}"));
                assert_eq!(value["function"]["name"], "file_read");
                let args: serde_json::Value =
                    serde_json::from_str(value["function"]["arguments"].as_str().unwrap()).unwrap();
                assert_eq!(args["offset"], turn + 1);
            }
        }
        let answer: serde_json::Value = serde_json::from_slice(&last.body).unwrap();
        assert_eq!(answer["choices"][0]["message"]["content"], ANSWER);
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
