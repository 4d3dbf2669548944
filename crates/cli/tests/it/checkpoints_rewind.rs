//! Rewinds through the binary: chat's `/rewind N` takes files and conversation back as
//! `sessions rewind` does and never overwrites a file changed since unless forced; a
//! rewind while a run holds the session fails `session_busy` and changes nothing.

use std::io::Write;

use crate::checkpoints::{FLAGS, only_session, run_command_turn, seed, tree, write_notes_turn};
use crate::common;

use common::{
    Sandbox, assert_exit_code, spawn_captured, spawn_with_stdin, stderr, stdout,
    wait_for_first_request,
};
use oxydra_test_support::{MockServer, openai};

/// Two turns: `file_write notes.md`, then a command that rewrites it and removes b.txt.
/// Returns the tree after the first turn.
fn two_turns(sandbox: &Sandbox) -> std::collections::BTreeMap<String, String> {
    seed(&sandbox.workspace);
    write_notes_turn(sandbox);
    let after_first = tree(&sandbox.workspace);
    run_command_turn(
        sandbox,
        "printf 'second\\n' > notes.md && rm b.txt",
        &["--continue"],
    );
    assert!(!sandbox.workspace.join("b.txt").exists());
    after_first
}

#[test]
fn chat_rewind_takes_files_and_conversation_back_and_never_clobbers() {
    let sandbox = Sandbox::new();
    let after_first = two_turns(&sandbox);
    let session = only_session(&sandbox);
    // Someone edits notes.md after turn two.
    std::fs::write(sandbox.workspace.join("notes.md"), "a person's notes\n").unwrap();

    let server = MockServer::start(vec![openai::text("continued")]).unwrap();
    let mut command = sandbox.oxydra_command(&server, "chat");
    command.args(FLAGS);
    let (mut child, mut stdin, _stdout, err) = spawn_with_stdin(command);
    writeln!(stdin, "/switch {session}").unwrap();
    // Not a turn number, a turn the session lacks: refused, nothing changed.
    writeln!(stdin, "/rewind two").unwrap();
    writeln!(stdin, "/rewind 9").unwrap();
    // A file changed since: refused, named, not overwritten.
    writeln!(stdin, "/rewind 2").unwrap();
    err.wait_for("/rewind 2 force overwrites them");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("notes.md")).unwrap(),
        "a person's notes\n"
    );
    assert!(
        !sandbox.workspace.join("b.txt").exists(),
        "nothing put back"
    );
    writeln!(stdin, "/rewind 2 force").unwrap();
    err.wait_for("the conversation keeps its first");
    assert_eq!(tree(&sandbox.workspace), after_first);
    // The next line continues from turn one.
    writeln!(stdin, "and now?").unwrap();
    writeln!(stdin, "/exit").unwrap();
    drop(stdin);
    assert_exit_code(&mut child, 0, &err);
    let text = err.all();
    assert!(text.contains("unknown command `/rewind two`"), "{text}");
    assert!(text.contains("has no turn 9 (it has 2)"), "{text}");
    assert!(text.contains("notes.md: expected"), "{text}");
    assert!(text.contains("rewound session"), "{text}");

    let request = server.requests()[0].body["messages"].to_string();
    assert!(request.contains("turn one"), "{request}");
    assert!(!request.contains("change the files"), "{request}");
    let shown = stdout(&sandbox.sessions(&["show", &session]));
    assert!(shown.contains("and now?"), "{shown}");
    assert!(!shown.contains("change the files"), "{shown}");
}

#[test]
fn a_rewind_while_a_run_holds_the_session_is_refused_busy_and_changes_nothing() {
    let sandbox = Sandbox::new();
    two_turns(&sandbox);
    let session = only_session(&sandbox);
    let before = tree(&sandbox.workspace);
    let server = MockServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.args(["--session", &session, "hold the session"]);
    let (_held, held_out, _held_err) = spawn_captured(command);
    // The run holds the lease from before its first request until it ends (never:
    // the reply hangs; the child is killed when dropped).
    wait_for_first_request(&server, &held_out);

    let output = sandbox.sessions(&["rewind", &session, "--to", "1", "--force"]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("session_busy"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(tree(&sandbox.workspace), before);
    let undo = sandbox
        .stored_command("undo")
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(undo.status.code(), Some(1), "stderr: {}", stderr(&undo));
    assert_eq!(tree(&sandbox.workspace), before);
}
