//! `oxydra chat`'s `/status`, `/model`, `/clear`, the hint on the way out, and
//! `--continue` showing where the conversation stands.

use crate::common;

use common::{Sandbox, events_of_type, json_values, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

#[test]
fn status_names_the_setup_and_use_and_model_switches_for_the_next_message() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("First."), openai::text("Second.")]).unwrap();
    let output = common::output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"hello\n/status\n/model gpt-4.1-mini\n/model\nagain\n/exit\n",
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("oxydra chat · openai gpt-4o-mini · sandbox workspace-write · approve deny"),
        "{err}"
    );
    assert!(err.contains("this chat 1 turn · "), "{err}");
    assert!(
        err.contains("model: openai gpt-4.1-mini (from the next message)"),
        "{err}"
    );
    assert!(err.contains("model: openai gpt-4.1-mini\n"), "{err}");
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "gpt-4o-mini");
    assert_eq!(requests[1].body["model"], "gpt-4.1-mini");
    // The same session goes on with the other model.
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("hello") && second.contains("First."),
        "{second}"
    );
    let events = json_values(&stdout(&output));
    let id = events_of_type(&events, "final")[1]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Leaving says how to come back.
    assert!(
        err.trim_end()
            .ends_with(&format!("resume with: oxydra chat --session {id}")),
        "{err}"
    );
}

#[test]
fn clear_starts_an_empty_session_and_an_empty_one_needs_no_resume_hint() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("First.")]).unwrap();
    let output = common::output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"hello\n/clear\n/exit\n",
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("new session ses_"), "{err}");
    assert!(!err.contains("resume with"), "{err}");
    // Not a terminal: nothing clears a screen.
    assert!(!err.contains("\u{1b}[2J"), "{err:?}");
}

#[test]
fn continue_shows_the_last_messages_before_the_prompt() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("First answer.")]).unwrap();
    let output = common::output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"remember the \x1b[8mword\n/exit\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut command = sandbox.oxydra_command(&server, "chat");
    command.arg("--continue");
    let output = common::output_with_stdin(command, b"/exit\n");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("#2 assistant\n  First answer.\n"), "{err}");
    // Stored text is shown escaped.
    assert!(err.contains("#1 user\n  remember the "), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(
        err.contains("resume with: oxydra chat --session ses_"),
        "{err}"
    );
}

#[test]
fn at_a_text_file_sends_its_contents_after_the_line_with_secrets_scrubbed() {
    let sandbox = Sandbox::new();
    let key = "sk-proj-Zq8xKf3LmN9pR2tVw5yB7cD1eG4hJ6kSa1b2c3d4";
    std::fs::write(
        sandbox.workspace.join("notes.txt"),
        format!("the launch code is 4711\nOPENAI_API_KEY={key}\n"),
    )
    .unwrap();
    let server = MockServer::start(vec![openai::text("Read it.")]).unwrap();
    let output = common::output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"what is in @notes.txt?\n/exit\n",
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let request = server.requests()[0].body.to_string();
    assert!(request.contains("--- @notes.txt ---"), "{request}");
    assert!(request.contains("the launch code is 4711"), "{request}");
    assert!(
        !request.contains(key),
        "the key reached the provider: {request}"
    );
    // Nor the store.
    let listed = json_values(&stdout(&sandbox.sessions(&["list", "--all", "--json"])));
    let id = listed[0]["session_id"].as_str().unwrap();
    let stored = stdout(&sandbox.sessions(&["show", id, "--json"]));
    assert!(stored.contains("4711") && !stored.contains(key), "{stored}");
}

#[test]
fn compact_condenses_the_earlier_turns_and_the_next_message_sends_the_summary() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::text("Apple, pear, plum."),
        openai::text("Leek."),
        openai::whole_text("Fruits were listed, then a vegetable was asked for."),
        openai::text("You are welcome."),
    ])
    .unwrap();
    let output = common::output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"list three fruits\nand a vegetable\n/compact\n/compact\nthanks\n/exit\n",
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("compacted the earlier turns into a summary of 9 words"),
        "{err}"
    );
    // Right after, there is nothing left to condense: no call.
    assert!(err.contains("nothing to compact"), "{err}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{err}");
    // The summarisation request condenses the first exchange, not the newest.
    let asked = requests[2].body["messages"].to_string();
    assert!(asked.contains("list three fruits"), "{asked}");
    assert!(!asked.contains("Leek."), "{asked}");
    // The next message sends the summary in place of the first exchange.
    let next = requests[3].body["messages"].to_string();
    assert!(next.contains("Fruits were listed"), "{next}");
    assert!(!next.contains("Apple, pear, plum."), "{next}");
    assert!(next.contains("Leek.") && next.contains("thanks"), "{next}");
}
