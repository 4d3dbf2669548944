//! Nothing the model writes is run by another program, performed through the real
//! binary: `oxydra run` (stdin not a terminal, so approvals are `never`) with a model
//! that edits `.git/config`, overwrites an executable git hook, writes a hook where
//! `core.hooksPath` points, writes `.cargo/config.toml`, `.envrc` and
//! `.vscode/tasks.json`, and writes through a symlink to `.git/config`. Each is refused
//! with a reason the model sees, every file is byte-identical afterwards, and a real
//! `git status` / `git commit` runs nothing. Then the user config as a dotfiles symlink
//! with the home folder as workspace, `--config` as a symlink, and a trusted project
//! file's MCP script: the link and its target stay untouched, and a script changed
//! behind Oxydra's back untrusts the file.

use crate::common;

use std::collections::HashMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Sandbox, assert_exit_code, spawn_chat_in_pty, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

/// What the model was told each of its calls returned, by call id.
fn tool_results(server: &MockServer) -> HashMap<String, String> {
    let requests = server.requests();
    assert!(requests.len() >= 2, "the model got no tool results");
    requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// A model that makes `calls` (id, tool, arguments) in one turn, then answers.
fn model(calls: &[(String, &str, String)]) -> MockServer {
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, tool, args)| (id.as_str(), *tool, args.as_str()))
        .collect();
    MockServer::start(vec![openai::tool_calls(&calls), openai::text("Done.")]).unwrap()
}

fn write(id: &str, path: &str, content: &str) -> (String, &'static str, String) {
    let args = serde_json::json!({"path": path, "content": content});
    (id.to_owned(), "file_write", args.to_string())
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> (String, &'static str, String) {
    let args = serde_json::json!({"path": path, "old": old, "new": new});
    (id.to_owned(), "file_edit", args.to_string())
}

/// `git ARGS` in `dir`, with the sandbox's home and no system config.
fn git(sandbox: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    let output = Command::new("git")
        .current_dir(dir)
        .env("HOME", sandbox.path().join("home"))
        .env("XDG_CONFIG_HOME", sandbox.path().join("config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", stderr(&output));
    output
}

/// Every file under `dir` with its bytes (symlinks as their target's name).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = path.symlink_metadata().unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.push((path, target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn assert_refused(results: &HashMap<String, String>, id: &str, program: &str) {
    let result = &results[id];
    assert!(result.contains("refused: `"), "{id}: {result}");
    assert!(result.contains(program), "{id}: {result}");
}

#[test]
fn a_model_cannot_plant_what_git_runs() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace.clone();
    let marker = sandbox.path().join("git-ran-the-model");
    git(&sandbox, &ws, &["init", "-q"]);
    std::fs::write(ws.join("README.md"), "hello\n").unwrap();
    git(&sandbox, &ws, &["add", "README.md"]);
    // An existing executable hook, and a second hooks directory git is pointed at.
    let hook = ws.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    symlink(".git/config", ws.join("innocent")).unwrap();
    let before = snapshot(&ws);

    let payload = format!("#!/bin/sh\ntouch '{}'\n", marker.display());
    let fsmonitor = format!(
        "[core]\n\tfsmonitor = \"touch '{}'; false\"\n",
        marker.display()
    );
    let server = model(&[
        edit("call_fsmonitor", ".git/config", "[core]\n", &fsmonitor),
        write("call_hook", ".git/hooks/pre-commit", &payload),
        write("call_new_hook", ".git/hooks/post-checkout", &payload),
        write("call_case", ".GIT/config", "[core]\n\tbare = true\n"),
        write("call_link", "innocent", &fsmonitor),
    ]);
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "Set up git");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let results = tool_results(&server);
    for id in ["call_fsmonitor", "call_hook", "call_new_hook", "call_case"] {
        assert_refused(&results, id, "git");
        assert!(
            results[id].contains("`[tools] allow_protected`"),
            "{id}: {}",
            results[id]
        );
    }
    assert_refused(&results, "call_link", "`innocent` → `.git/config`");
    assert_eq!(snapshot(&ws), before, "the workspace changed");
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o777,
        0o755
    );

    // The user's next git commands run nothing of the model's.
    git(&sandbox, &ws, &["status"]);
    git(&sandbox, &ws, &["commit", "-q", "-m", "first"]);
    git(&sandbox, &ws, &["checkout", "-q", "-b", "other"]);
    assert!(!marker.exists(), "git ran the model's command");
}

#[test]
fn a_hooks_directory_set_by_core_hooks_path_is_protected() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace.clone();
    let marker = sandbox.path().join("hook-ran");
    git(&sandbox, &ws, &["init", "-q"]);
    git(&sandbox, &ws, &["config", "core.hooksPath", ".githooks"]);
    std::fs::create_dir(ws.join(".githooks")).unwrap();
    let hook = ws.join(".githooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = snapshot(&ws);

    let payload = format!("#!/bin/sh\ntouch '{}'\n", marker.display());
    let server = model(&[
        write("call_existing", ".githooks/pre-commit", &payload),
        write("call_new", ".githooks/commit-msg", &payload),
        edit("call_edit", ".githooks/pre-commit", "exit 0", &payload),
    ]);
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "Add hooks");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_results(&server);
    for id in ["call_existing", "call_new", "call_edit"] {
        assert_refused(&results, id, "core.hooksPath");
    }
    assert_eq!(snapshot(&ws), before);
    std::fs::write(ws.join("a.txt"), "a").unwrap();
    git(&sandbox, &ws, &["add", "a.txt"]);
    git(&sandbox, &ws, &["commit", "-q", "-m", "a"]);
    assert!(!marker.exists(), "git ran the model's hook");
}

#[test]
fn a_model_cannot_plant_what_cargo_direnv_or_an_editor_runs() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace.clone();
    std::fs::create_dir(ws.join(".vscode")).unwrap();
    std::fs::write(ws.join(".vscode/settings.json"), "{}\n").unwrap();
    let before = snapshot(&ws);
    let server = model(&[
        write(
            "call_cargo",
            ".cargo/config.toml",
            "[target.x86_64-unknown-linux-gnu]\nrunner = \"sh -c 'touch /tmp/pwned'\"\n",
        ),
        write(
            "call_cargo_old",
            ".cargo/config",
            "[build]\nrustc-wrapper = \"x\"\n",
        ),
        write("call_envrc", ".envrc", "touch /tmp/pwned\n"),
        write("call_nested_envrc", "app/.envrc", "touch /tmp/pwned\n"),
        write(
            "call_tasks",
            ".vscode/tasks.json",
            r#"{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch /tmp/pwned","runOptions":{"runOn":"folderOpen"}}]}"#,
        ),
        edit("call_settings", ".vscode/settings.json", "{}", "{\"x\": 1}"),
        write("call_bashrc", ".bashrc", "touch /tmp/pwned\n"),
        write("call_fine", "notes.md", "an ordinary file\n"),
    ]);
    let output = sandbox.run_openai(&server.openai_url(), &["--output", "jsonl"], "Set up");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_results(&server);
    for (id, program) in [
        ("call_cargo", "cargo"),
        ("call_cargo_old", "cargo"),
        ("call_envrc", "direnv"),
        ("call_nested_envrc", "direnv"),
        ("call_tasks", "VS Code"),
        ("call_settings", "VS Code"),
        ("call_bashrc", "shell"),
    ] {
        assert_refused(&results, id, program);
    }
    assert!(results["call_fine"].starts_with("Created"), "{results:?}");
    std::fs::remove_file(ws.join("notes.md")).unwrap();
    assert_eq!(snapshot(&ws), before, "only notes.md was written");
}

#[test]
fn a_dotfiles_symlinked_user_config_is_safe_through_link_and_target() {
    // The workspace is the home folder; the user config is a symlink (rcm, dotbot,
    // stow) to a file of another name in `dotfiles/`.
    let sandbox = Sandbox::new();
    let home = sandbox.path().join("home");
    std::fs::create_dir_all(home.join("dotfiles")).unwrap();
    std::fs::create_dir_all(home.join(".config/oxydra")).unwrap();
    let target = home.join("dotfiles/oxydra-config");
    std::fs::write(&target, "[runtime]\nmax_turns = 4\n").unwrap();
    symlink(&target, home.join(".config/oxydra/config.toml")).unwrap();
    let before = snapshot(&home);
    let planted =
        "[runtime]\napprove = \"allow\"\n[[mcp_servers]]\nname = \"x\"\ncommand = \"touch\"\n";
    let server = model(&[
        write("call_target", "dotfiles/oxydra-config", planted),
        write("call_link", ".config/oxydra/config.toml", planted),
        write("call_case", "DotFiles/Oxydra-Config", planted),
        edit(
            "call_edit",
            "dotfiles/oxydra-config",
            "max_turns = 4",
            "max_turns = 4\napprove = \"allow\"",
        ),
    ]);
    let mut command = sandbox.command();
    command
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .args(["run", "--db"])
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&home)
        .args(["--base-url", &server.openai_url(), "--output", "jsonl"])
        .arg("Configure yourself");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_results(&server);
    for id in ["call_target", "call_link", "call_edit"] {
        assert_refused(&results, id, "Oxydra's own configuration");
    }
    assert!(results["call_case"].contains("refused"), "{results:?}");
    assert_eq!(snapshot(&home), before, "{}", stdout(&output));
}

#[test]
fn config_and_db_given_as_symlinks_are_protected_as_link_and_target() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace.clone();
    std::fs::create_dir(ws.join("real")).unwrap();
    let config_target = ws.join("real/agent-settings");
    std::fs::write(&config_target, "[runtime]\nmax_turns = 4\n").unwrap();
    let config_link = sandbox.path().join("cfg.toml");
    symlink(&config_target, &config_link).unwrap();
    let db_target = ws.join("real/store");
    let db_link = sandbox.path().join("db-link");
    symlink(&db_target, &db_link).unwrap();
    let server = model(&[
        write(
            "call_config",
            "real/agent-settings",
            "[runtime]\napprove = \"allow\"\n",
        ),
        (
            "call_db".to_owned(),
            "file_read",
            serde_json::json!({"path": "real/store"}).to_string(),
        ),
        write("call_wal", "real/store-wal", "x"),
    ]);
    let mut command = sandbox.command();
    command
        .arg("run")
        .arg("--config")
        .arg(&config_link)
        .arg("--db")
        .arg(&db_link)
        .arg("--workspace")
        .arg(&ws)
        .args(["--base-url", &server.openai_url(), "--output", "jsonl"])
        .arg("Look around");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_results(&server);
    assert_refused(&results, "call_config", "Oxydra's own configuration");
    assert_refused(&results, "call_db", "session database");
    assert_refused(&results, "call_wal", "session database");
    assert_eq!(
        std::fs::read_to_string(&config_target).unwrap(),
        "[runtime]\nmax_turns = 4\n"
    );
    assert!(!ws.join("real/store-wal").exists());
}

#[test]
fn a_script_a_trusted_config_runs_is_protected_and_a_change_untrusts_it() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace.clone();
    let marker = sandbox.path().join("mcp-script-ran");
    std::fs::create_dir(ws.join("tools")).unwrap();
    let script = ws.join("tools/mcp.sh");
    std::fs::write(&script, "exit 0\n").unwrap();
    std::fs::write(
        ws.join("oxydra.toml"),
        "[[mcp_servers]]\nname = \"local\"\ncommand = \"sh\"\nargs = [\"tools/mcp.sh\"]\n\
         init_timeout_secs = 5\n",
    )
    .unwrap();
    let mut trust = sandbox.command();
    let trusted = trust.current_dir(&ws).arg("trust").output().unwrap();
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    assert!(
        stdout(&trusted).contains("tools/mcp.sh (sha256 "),
        "{}",
        stdout(&trusted)
    );

    // The model tries to rewrite the script the trusted file runs.
    let payload = format!("touch '{}'\n", marker.display());
    let server = model(&[
        write("call_write", "tools/mcp.sh", &payload),
        edit("call_edit", "tools/mcp.sh", "exit 0", &payload),
    ]);
    let mut run = sandbox.oxydra_command(&server, "run");
    let output = run
        .current_dir(&ws)
        .arg("Improve the tools")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_results(&server);
    for id in ["call_write", "call_edit"] {
        assert_refused(&results, id, "run by Oxydra");
    }
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "exit 0\n");
    assert!(!stderr(&output).contains("trusted"), "{}", stderr(&output));

    // Changed by something else (a shell command, another program): no longer trusted.
    std::fs::write(&script, &payload).unwrap();
    let server = MockServer::start(vec![openai::text("Hello.")]).unwrap();
    let mut run = sandbox.oxydra_command(&server, "run");
    let output = run.current_dir(&ws).arg("Hello").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!marker.exists(), "the changed script ran");
    let err = stderr(&output);
    assert!(err.contains("tools/mcp.sh, which changed since"), "{err}");
    assert!(err.contains("mcp_servers"), "{err}");
}

const QUESTION: &str = "Allow? [y/a/n]: ";

#[test]
fn chat_asks_before_a_protected_write_and_says_why() {
    let sandbox = Sandbox::new();
    let args = serde_json::json!({"path": ".envrc", "content": "touch pwned\n"}).to_string();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("w1", "file_write", &args)]),
        openai::text("Refused."),
        openai::tool_calls(&[("w2", "file_write", &args)]),
        openai::text("Written."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_pty_command(&server, "chat");
    command.args(["--approve", "ask"]);
    let (mut child, mut pty) = spawn_chat_in_pty(command);
    let asked = |n: usize| move |text: &str| text.matches(QUESTION).count() >= n;

    pty.type_text("write it\r");
    // chat's own question before any change, then the protected path's.
    pty.output
        .wait_until("the question before a change", asked(1));
    pty.type_text("y\r");
    let shown = pty
        .output
        .wait_until("the protected path's question", asked(2));
    // The protected path's question: why, and the change itself (a diff), not JSON.
    let second = shown.split(QUESTION).nth(1).unwrap();
    assert!(
        second.contains("a protected path, `.envrc` is a direnv file, run by direnv"),
        "{second}"
    );
    assert!(second.contains("+++ b/.envrc"), "{second}");
    assert!(second.contains("+touch pwned"), "{second}");
    assert!(!second.contains("\"path\""), "{second}");
    pty.type_text("n\r");
    pty.output
        .wait_for_after(r#""text":"Refused.""#, "oxydra> ");
    assert!(!sandbox.workspace.join(".envrc").exists());

    pty.type_text("write it anyway\r");
    pty.output.wait_until("the third question", asked(3));
    pty.type_text("y\r");
    pty.output.wait_until("the fourth question", asked(4));
    pty.type_text("y\r");
    pty.output
        .wait_for_after(r#""text":"Written.""#, "oxydra> ");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join(".envrc")).unwrap(),
        "touch pwned\n"
    );
    pty.type_text("/exit\r");
    assert_exit_code(&mut child, 0, &pty.output);
}
