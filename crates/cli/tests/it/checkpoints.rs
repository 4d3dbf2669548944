//! Checkpoints through the binary: a `shell_exec` that runs `sed -i`, `rm`, `mv`,
//! `chmod` and `ln -sf` is undone exactly by `oxydra undo` (contents, modes,
//! symlinks compared), and undone again (redone) by a second `undo`; a file changed
//! after the turn makes `undo` refuse without a terminal, naming it; a mix of file
//! tools and commands over three turns is rewound to the first with
//! `oxydra sessions rewind`, conversation included; `sessions fork` and `diff`.

use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use crate::common;

use common::{Sandbox, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

/// Every entry under `root`: kind, mode, content or target.
pub fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<String, String>) {
        let mut names: Vec<_> = std::fs::read_dir(root.join(rel))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        for name in names {
            let child = rel.join(name);
            let path = root.join(&child);
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let key = child.to_str().unwrap().to_owned();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(key, format!("link {}", target.display()));
            } else if meta.is_dir() {
                out.insert(key, format!("dir {mode:o}"));
                walk(root, &child, out);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                out.insert(key, format!("file {mode:o} {text}"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), &mut out);
    out
}

pub fn seed(ws: &Path) {
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("b.txt"), "bee\n").unwrap();
    std::fs::write(ws.join("c.txt"), "sea\n").unwrap();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/deep.txt"), "deep\n").unwrap();
    symlink("a.txt", ws.join("link")).unwrap();
}

const COMMAND: &str = "sed -i 's/one/ONE/' a.txt && rm b.txt && mv c.txt d.txt && \
                       chmod 755 run.sh && ln -sf d.txt link && rm -r sub && \
                       mkdir new && echo made > new/file.txt";

pub fn shell_call(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

pub const FLAGS: &[&str] = &["--approve", "allow", "--sandbox", "full-access"];

/// Runs one turn whose model writes `notes.md` (`first`) with `file_write`.
pub fn write_notes_turn(sandbox: &Sandbox) {
    let server = MockServer::start(vec![
        openai::tool_calls(&[(
            "call_w",
            "file_write",
            r#"{"path":"notes.md","content":"first\n"}"#,
        )]),
        openai::text("wrote"),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), FLAGS, "turn one");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
}

/// Runs one turn calling `shell_exec` with `command`.
pub fn run_command_turn(sandbox: &Sandbox, command: &str, extra: &[&str]) {
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_sh", "shell_exec", &shell_call(command))]),
        openai::text("done"),
    ])
    .unwrap();
    let mut flags = FLAGS.to_vec();
    flags.extend_from_slice(extra);
    let output = sandbox.run_openai(&server.openai_url(), &flags, "change the files");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    // The last tool message of the second request is this turn's (a continued session
    // sends the earlier ones first).
    let body = &server.requests()[1].body;
    let result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .unwrap();
    assert!(result.starts_with("exit code: 0"), "{result}");
}

fn undo(sandbox: &Sandbox, extra: &[&str]) -> std::process::Output {
    let mut command = sandbox.stored_command("undo");
    command.args(extra);
    command.output().unwrap()
}

#[test]
fn undo_reverts_a_command_exactly_and_a_second_undo_redoes_it() {
    let sandbox = Sandbox::new();
    seed(&sandbox.workspace);
    let before = tree(&sandbox.workspace);
    run_command_turn(&sandbox, COMMAND, &[]);
    let after = tree(&sandbox.workspace);
    assert_ne!(before, after);
    assert_eq!(after["link"], "link d.txt");
    assert_eq!(after["run.sh"], "file 755 #!/bin/sh\necho hi\n");

    let output = undo(&sandbox, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(tree(&sandbox.workspace), before);
    assert!(stderr(&output).contains("a.txt"), "{}", stderr(&output));

    let output = undo(&sandbox, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(tree(&sandbox.workspace), after);
}

#[test]
fn undo_refuses_to_overwrite_a_file_changed_since_and_names_it() {
    let sandbox = Sandbox::new();
    seed(&sandbox.workspace);
    run_command_turn(&sandbox, COMMAND, &[]);
    std::fs::write(sandbox.workspace.join("a.txt"), "a person's edit\n").unwrap();

    let output = undo(&sandbox, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("a.txt"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("a.txt")).unwrap(),
        "a person's edit\n"
    );
    assert!(
        sandbox.workspace.join("d.txt").exists(),
        "nothing was undone"
    );

    let output = undo(&sandbox, &["--force"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
}

pub fn only_session(sandbox: &Sandbox) -> String {
    let output = sandbox.sessions(&["list", "--all", "--json"]);
    let line = stdout(&output);
    let value: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    value["session_id"].as_str().unwrap().to_owned()
}

#[test]
fn three_turns_of_file_tools_and_commands_rewind_to_the_first() {
    let sandbox = Sandbox::new();
    seed(&sandbox.workspace);
    let before = tree(&sandbox.workspace);
    // Turn 1: file_write; turn 2: a command; turn 3: file_edit and a command.
    write_notes_turn(&sandbox);
    let after_first = tree(&sandbox.workspace);
    assert_ne!(after_first, before);

    run_command_turn(&sandbox, "rm b.txt && chmod 700 run.sh", &["--continue"]);
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            (
                "call_e",
                "file_edit",
                r#"{"path":"a.txt","old":"two","new":"TWO"}"#,
            ),
            ("call_s", "shell_exec", &shell_call("mv c.txt sub/c.txt")),
        ]),
        openai::text("edited"),
    ])
    .unwrap();
    let mut flags = FLAGS.to_vec();
    flags.push("--continue");
    let output = sandbox.run_openai(&server.openai_url(), &flags, "turn three");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(!sandbox.workspace.join("c.txt").exists());

    let session = only_session(&sandbox);
    let diff = sandbox.sessions(&["diff", &session]);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let text = stdout(&diff);
    for needle in [
        "turn 1",
        "turn 2",
        "turn 3",
        "notes.md",
        "b.txt",
        "sub/c.txt",
    ] {
        assert!(text.contains(needle), "{needle} not in {text}");
    }

    let output = sandbox.sessions(&["rewind", &session, "--to", "2"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(tree(&sandbox.workspace), after_first);
    let shown = stdout(&sandbox.sessions(&["show", &session]));
    assert!(shown.contains("turn one"), "{shown}");
    assert!(!shown.contains("turn three"), "{shown}");

    let fork = sandbox.sessions(&["fork", &session, "--at", "1"]);
    assert_eq!(fork.status.code(), Some(0), "{}", stderr(&fork));
    assert!(
        stdout(&fork).trim().starts_with("ses_"),
        "{}",
        stdout(&fork)
    );
}

#[test]
fn escape_sequences_in_changed_names_and_contents_are_shown_never_run() {
    let sandbox = Sandbox::new();
    seed(&sandbox.workspace);
    // A file named with "clear the screen" and contents that conceal, retitle the
    // window and write the clipboard: what `diff`, `undo` and its refusal show.
    let command = r#"printf 'ONE\033[8m hidden\033]52;c;ZXZpbA==\007\n' > a.txt && printf 'x\033]2;owned\007\n' > "$(printf 'n\033[2Jame.txt')""#;
    run_command_turn(&sandbox, command, &[]);
    let id = only_session(&sandbox);
    let output = sandbox.sessions(&["diff", &id]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let shown = stdout(&output);
    assert!(
        shown.contains("a.txt") && shown.contains("ame.txt"),
        "{shown}"
    );
    assert!(
        !shown.contains('\x1b') && !shown.contains('\x07'),
        "{shown:?}"
    );

    // Refused (a.txt changed since): the conflict's diff is shown escaped too.
    std::fs::write(sandbox.workspace.join("a.txt"), "later\x1b[8m edit\n").unwrap();
    let output = undo(&sandbox, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(!stderr(&output).contains('\x1b'), "{:?}", stderr(&output));
    let output = undo(&sandbox, &["--force"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("ame.txt"), "{err:?}");
    assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
}

#[test]
fn checkpoints_settings_of_the_file_are_used_by_the_run() {
    // keep_last = 1: after two changing turns only the second's checkpoint is kept.
    let sandbox = Sandbox::new();
    seed(&sandbox.workspace);
    sandbox.write_trusted_config("[checkpoints]\nkeep_last = 1\n");
    run_command_turn(&sandbox, "rm b.txt", &[]);
    run_command_turn(&sandbox, "rm c.txt", &["--continue"]);
    let session = only_session(&sandbox);
    let diff = sandbox.sessions(&["diff", &session]);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let text = stdout(&diff);
    assert!(text.contains("turn 2: "), "{text}");
    assert!(!text.contains("turn 1: "), "{text}");

    // enabled = false: no checkpoint, so nothing to undo (the file stays gone).
    let sandbox = Sandbox::new();
    seed(&sandbox.workspace);
    sandbox.write_trusted_config("[checkpoints]\nenabled = false\n");
    run_command_turn(&sandbox, "rm b.txt", &[]);
    let output = undo(&sandbox, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("has no checkpoint"),
        "{}",
        stderr(&output)
    );
    assert!(!sandbox.workspace.join("b.txt").exists());

    // A bad value stops the run before anything happens, naming the key.
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[checkpoints]\nkeep_last = 0\n",
    )
    .unwrap();
    let output = sandbox.run_openai("http://127.0.0.1:9/v1", FLAGS, "hello");
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("checkpoints.keep_last"),
        "{}",
        stderr(&output)
    );
}
