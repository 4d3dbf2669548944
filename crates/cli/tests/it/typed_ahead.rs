//! Input waiting before a consent question is no answer to it (issue 42, attack 2): a
//! `y` left in the terminal's input (typed ahead, or pushed by a command with
//! `TIOCSTI`) is thrown away when the question is shown, in `run` (a tool's question)
//! and in `chat` (a protected write's question).
//!
//! The `y` is made to wait deterministically: the first question is answered with
//! `n` and, in the same write, a `y` with no line end. The terminal (canonical mode)
//! holds that unfinished line while the second question opens. Without the flush the
//! line end typed next would complete it into `y` and allow the call; with it, the line
//! end alone is an unclear answer, asked again.

use crate::common;

use common::{Sandbox, assert_exit_code, spawn_chat_in_pty, spawn_in_pty};
use oxydra_test_support::{MockServer, openai};

const QUESTION: &str = "Allow? [y/a/n]: ";

/// Whether the question was shown at least `n` times.
fn asked(n: usize) -> impl Fn(&str) -> bool {
    move |text: &str| text.matches(QUESTION).count() >= n
}

#[test]
fn in_run_a_y_waiting_before_the_question_does_not_answer_it() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            (
                "call_1",
                "shell_exec",
                r#"{"command":"echo one > one.txt"}"#,
            ),
            (
                "call_2",
                "shell_exec",
                r#"{"command":"echo two > two.txt"}"#,
            ),
        ]),
        openai::text("Done."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_pty_command(&server, "run");
    command.args(["--approve", "ask", "Run both"]);
    let (mut child, mut pty) = spawn_in_pty(command);
    pty.output.wait_until("the first question", asked(1));
    // `n` answers the first; the `y` waits in the terminal, unfinished.
    pty.type_text("n\ny");
    pty.output.wait_until("the second question", asked(2));
    pty.type_text("\n");
    // Only the line end reached the question: unclear, so it asks again.
    pty.output.wait_until("the second question again", asked(3));
    pty.type_text("n\n");
    assert_exit_code(&mut child, 0, &pty.output);
    assert!(!sandbox.workspace.join("one.txt").exists());
    assert!(
        !sandbox.workspace.join("two.txt").exists(),
        "the waiting `y` answered the question: {}",
        pty.output.all()
    );
}

#[test]
fn in_chat_a_y_waiting_before_a_protected_writes_question_does_not_answer_it() {
    let sandbox = Sandbox::new();
    let args = serde_json::json!({"path": ".envrc", "content": "touch pwned\n"}).to_string();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("w1", "file_write", &args)]),
        openai::text("Refused."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_pty_command(&server, "chat");
    command.args(["--approve", "ask"]);
    let (mut child, mut pty) = spawn_chat_in_pty(command);
    pty.type_text("write it\r");
    // chat's question before any change: yes, and a `y` left waiting, unfinished.
    pty.output
        .wait_until("the question before a change", asked(1));
    pty.type_text("y\ry");
    let shown = pty
        .output
        .wait_until("the protected path's question", asked(2));
    assert!(shown.contains("a protected path"), "{shown}");
    pty.type_text("\r");
    pty.output
        .wait_until("the protected path's question again", asked(3));
    pty.type_text("n\r");
    pty.output
        .wait_for_after(r#""text":"Refused.""#, "oxydra> ");
    assert!(
        !sandbox.workspace.join(".envrc").exists(),
        "the waiting `y` allowed the protected write: {}",
        pty.output.all()
    );
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
}
