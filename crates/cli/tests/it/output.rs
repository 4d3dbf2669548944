//! What `--output text` shows a person: tool lines with their arguments in short and
//! the diff of what they changed, failures without the schema, and the answer's
//! Markdown rendered on a terminal but left as it is when piped.

use crate::common;

use common::{Sandbox, spawn_in_pty, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

const ANSWER: &str = "Done with **all** of it.\n\n- `out.txt` written";

#[test]
fn tool_lines_show_arguments_diffs_and_no_schema() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha").unwrap();
    std::fs::write(sandbox.workspace.join("out.txt"), "one\ntwo\n").unwrap();
    std::fs::write(sandbox.workspace.join("e.rs"), "fn old() {}\n").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("c1", "file_read", r#"{"path":"a.txt"}"#)]),
        openai::tool_calls(&[("c2", "file_read", r#"{"paht":"a.txt"}"#)]),
        openai::tool_calls(&[(
            "c3",
            "file_write",
            r#"{"path":"out.txt","content":"one\nthree\n"}"#,
        )]),
        openai::tool_calls(&[(
            "c4",
            "file_edit",
            r#"{"path":"e.rs","old":"fn old() {}","new":"fn new() {}"}"#,
        )]),
        openai::text(ANSWER),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "do it");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("  ✓ file_read a.txt ("), "{err}");
    let failed = err
        .lines()
        .find(|line| line.starts_with("  ✗ file_read"))
        .unwrap_or_else(|| panic!("no failure line in {err}"));
    assert!(
        failed.contains("'paht' was unexpected"),
        "it says what is wrong: {failed}"
    );
    assert!(!err.contains("Expected schema"), "{err}");
    assert!(!err.contains("\"properties\""), "{err}");
    assert!(
        err.contains("  ✓ file_write out.txt (") && err.contains("      - two\n      + three\n"),
        "{err}"
    );
    assert!(
        err.contains("  ✓ file_edit e.rs (")
            && err.contains("      - fn old() {}\n      + fn new() {}\n"),
        "{err}"
    );
    assert_eq!(
        stdout(&output),
        format!("{ANSWER}\n"),
        "plain text when piped"
    );
}

#[test]
fn the_answers_markdown_is_rendered_on_a_terminal() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text(ANSWER)]).unwrap();
    let mut command = sandbox.pty_command();
    command
        .arg("run")
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .args(["--base-url", &server.openai_url(), "hello"]);
    let (mut child, pty) = spawn_in_pty(command);
    let status = common::wait_exit(&mut child, &|| pty.output.text());
    let text = pty.output.all();
    assert_eq!(status.code(), Some(0), "{text}");
    assert!(text.contains("all"), "{text:?}");
    assert!(text.contains("out.txt"), "{text:?}");
    assert!(!text.contains("**all**"), "{text:?}");
    assert!(!text.contains("`out.txt`"), "{text:?}");
}

/// `oxydra run … | cat` on a terminal: stdout is a pipe, stderr the terminal. The
/// answer ends without a line feed; the line feed the renderer adds goes through the
/// pipe, so the closing line on the terminal starts with one of its own and never
/// joins the answer's last words, whenever the pipe's bytes arrive.
#[test]
fn with_stdout_piped_and_stderr_a_terminal_the_closing_line_starts_its_own_line() {
    use std::process::Stdio;
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("The answer")]).unwrap();
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let mut command = sandbox.stored_command("run");
    command
        .args(["--base-url", &server.openai_url()])
        .arg("hi")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(pty.slave));
    let child = command.spawn().unwrap();
    drop(command);
    let terminal = common::Captured::start(std::fs::File::from(pty.master));
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", terminal.all());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "The answer\n");
    let shown = terminal.all();
    let closing = shown
        .find("— 1 turn")
        .unwrap_or_else(|| panic!("{shown:?}"));
    let before = &shown[..closing];
    assert!(
        before.ends_with('\n'),
        "the closing line starts its own line: {shown:?}"
    );
}
