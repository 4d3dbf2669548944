//! `oxydra chat`: its commands with piped lines, and on a terminal `/cancel` and Ctrl-C,
//! and text typed during a turn (not echoed, run next).

use crate::common;

use std::io::Write;

use common::{
    KillOnDrop, Pty, Sandbox, assert_exit_code, events_of_type, json_values, spawn_chat_in_pty,
    spawn_with_stdin, wait_for_first_request,
};
use nix::sys::termios::LocalFlags;
use oxydra_test_support::{MockServer, openai};

const FINAL: &str = r#""type":"final""#;
/// What a line typed during a turn is told.
const QUEUED: &str = "(line queued: it runs when this turn ends";

/// `oxydra chat` on a terminal, once "a long task" typed at its prompt reached the server
/// (whose first reply holds the turn).
fn chat_in_a_long_turn(sandbox: &Sandbox, server: &MockServer) -> (KillOnDrop, Pty) {
    let (child, mut pty) = spawn_chat_in_pty(sandbox.oxydra_pty_command(server, "chat"));
    // Enter in a terminal is a carriage return.
    pty.type_text("a long task\r");
    wait_for_first_request(server, &pty.output);
    (child, pty)
}

#[test]
fn switch_continues_a_stored_session_and_a_bad_id_is_reported() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::text("First answer."),
        openai::text("Second answer."),
    ])
    .unwrap();
    let (mut child, mut stdin, stdout, stderr) =
        spawn_with_stdin(sandbox.oxydra_command(&server, "chat"));

    stdin.write_all(b"hello\n/new\n").unwrap();
    let first = json_values(&stdout.wait_for(FINAL));
    let id = events_of_type(&first, "final")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    stderr.wait_for("new session ses_");
    writeln!(stdin, "/switch\n/switch nope\n/switch {id}\nagain\n/exit").unwrap();
    drop(stdin);
    assert_exit_code(&mut child, 0, &stderr);
    let err = stderr.all();
    // `/switch` alone lists the stored sessions with their model and first prompt.
    assert!(
        err.contains(&format!(
            "{id}  just now  2 messages  gpt-4o-mini  {}  hello",
            sandbox.workspace.canonicalize().unwrap().display()
        )),
        "{err}"
    );
    assert!(err.contains("error: session `nope` not found"), "{err}");
    assert!(err.contains(&format!("switched to session {id}")), "{err}");
    // Switching shows the session's recent history.
    let after = &err[err.find("switched to session").unwrap()..];
    assert!(after.contains("#1 user\n  hello\n"), "{after}");
    assert!(after.contains("#2 assistant\n  First answer.\n"), "{after}");

    let events = json_values(&stdout.all());
    let finals = events_of_type(&events, "final");
    assert_eq!(finals.len(), 2, "{}", stdout.text());
    assert_eq!(finals[1]["text"], "Second answer.");
    assert_eq!(finals[1]["session_id"], id.as_str());
    // The second request carries the first session's history.
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("hello"), "{second}");
    assert!(second.contains("First answer."), "{second}");
    assert!(second.contains("again"), "{second}");
}

#[test]
fn cancel_typed_during_a_turn_cancels_it_and_the_prompt_returns() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::hold_after_text("Working on it"),
        openai::text("Second answer."),
    ])
    .unwrap();
    let (mut child, mut pty) = chat_in_a_long_turn(&sandbox, &server);
    pty.type_text("are you there?\r");
    pty.output.wait_for(QUEUED);
    pty.type_text("/cancel\r");
    let shown = pty
        .output
        .wait_for_after(r#""kind":"cancelled""#, "oxydra> ");
    pty.output.wait_for("turn cancelled");
    assert!(!shown.contains("session cancelled"), "{shown}");
    // What was typed ahead went with the cancelled turn, and was never shown.
    let shown = pty
        .output
        .wait_for("dropped 1 line typed during the cancelled turn");
    assert!(!shown.contains("are you there?"), "{shown}");

    // The chat goes on in the same session.
    pty.type_text("and now?\r");
    pty.output
        .wait_for_after(r#""text":"Second answer.""#, "oxydra> ");
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("a long task"), "{second}");
    assert!(!second.contains("are you there?"), "{second}");
}

#[test]
fn ctrl_c_typed_during_a_turn_cancels_it_and_twice_at_the_prompt_quits() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let (mut child, mut pty) = chat_in_a_long_turn(&sandbox, &server);
    // The terminal turns Ctrl-C into SIGINT while the turn runs (cooked mode).
    pty.type_text("\x03");
    pty.output
        .wait_for_after(r#""kind":"cancelled""#, "oxydra> ");
    // At the prompt the editor reads Ctrl-C as a key: once warns, twice quits.
    pty.type_text("\x03");
    pty.output
        .wait_for_after("(press Ctrl-C again or type /exit to quit)", "oxydra> ");
    pty.type_text("\x03");
    assert_exit_code(&mut child, 130, &pty.output);
    assert!(pty.echoes_in_cooked_mode(), "{:?}", pty.local_flags());
}

#[test]
fn cancelling_a_turn_also_drops_lines_queued_before_it() {
    let sandbox = Sandbox::new();
    let (held, release) = openai::text("First answer.").held_at(0);
    let server = MockServer::start(vec![
        held,
        openai::hold_after_text("Working on it"),
        openai::text("Third answer."),
    ])
    .unwrap();
    let (mut child, mut pty) = chat_in_a_long_turn(&sandbox, &server);
    // Two lines typed ahead during the first turn.
    pty.type_text("first ahead\r");
    pty.output.wait_for(QUEUED);
    pty.type_text("second ahead\r");
    pty.output.wait_for_after(QUEUED, QUEUED);
    release.release();
    // The first runs as the next turn, which is then cancelled: the second, still
    // queued, goes with it.
    pty.output
        .wait_for_after("First answer.", "oxydra> first ahead");
    assert!(server.wait_for_requests(2, common::PATIENCE));
    pty.type_text("/cancel\r");
    pty.output.wait_for("dropped 1 line queued before it");
    pty.output
        .wait_for_after(r#""kind":"cancelled""#, "oxydra> ");

    pty.type_text("and now?\r");
    pty.output.wait_for("Third answer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let third = requests[2].body["messages"].to_string();
    assert!(third.contains("and now?"), "{third}");
    assert!(!third.contains("second ahead"), "{third}");
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
    assert!(!pty.output.all().contains("oxydra> second ahead"));
}

#[test]
fn text_typed_during_a_turn_is_not_echoed_and_runs_as_the_next_prompt() {
    let sandbox = Sandbox::new();
    let (held, release) = openai::text("First answer.").held_at(0);
    let server = MockServer::start(vec![
        held,
        openai::text("Second answer."),
        openai::text("Third answer."),
    ])
    .unwrap();
    let (mut child, mut pty) = spawn_chat_in_pty(sandbox.oxydra_pty_command(&server, "chat"));
    pty.type_text("a long task\r");
    wait_for_first_request(&server, &pty.output);
    // The turn runs: the terminal gathers lines but does not echo them.
    let flags = pty.local_flags();
    assert!(
        flags.contains(LocalFlags::ICANON) && !flags.contains(LocalFlags::ECHO),
        "{flags:?}"
    );
    pty.type_text("how many quokkas?\r");
    let before = pty.output.wait_for(QUEUED);
    assert!(!before.contains("quokkas"), "{before}");
    // A line left unfinished stays typed ahead too, unseen until the turn ends.
    pty.type_text("and wom");
    release.release();

    // The queued line runs next, shown at the prompt after the first answer.
    let shown = pty
        .output
        .wait_for_after("First answer.", "oxydra> how many quokkas?");
    assert!(
        !shown[..shown.find("First answer.").unwrap()].contains("quokkas"),
        "{shown}"
    );
    pty.output
        .wait_for_after("oxydra> how many quokkas?", "Second answer.");
    assert!(server.wait_for_requests(2, common::PATIENCE));
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("how many quokkas?"), "{second}");
    // The unfinished line is at the next prompt, in the editor (which shows it), to
    // be finished there.
    pty.output.wait_for_after("Second answer.", "and wom");
    pty.type_text("bats?\r");
    pty.output.wait_for("Third answer.");
    let third = server.requests()[2].body["messages"].to_string();
    assert!(third.contains("and wombats?"), "{third}");
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
    assert!(pty.echoes_in_cooked_mode(), "{:?}", pty.local_flags());
}

#[test]
fn a_bare_oxydra_on_a_terminal_starts_chat_and_in_a_pipe_prints_the_usage() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("Hello from a bare start.")]).unwrap();
    sandbox.write_trusted_config(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"m\"\n\n[memory]\ndb = {:?}\n",
        server.openai_url(),
        sandbox.db.display().to_string()
    ));
    let (mut child, mut pty) = spawn_chat_in_pty(sandbox.pty_command());
    pty.type_text("hi\r");
    pty.output.wait_for("Hello from a bare start.");
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
    assert_eq!(server.requests().len(), 1);

    // Not on a terminal: the usage, as before, and nothing waits for input.
    let output = sandbox.command().output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        common::stderr(&output).contains("Usage"),
        "{}",
        common::stderr(&output)
    );
}
