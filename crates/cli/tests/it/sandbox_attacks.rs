//! The box a command starts in, attacked through the `oxydra` binary as a model would
//! attack it (issue 42): each test has a scripted model call `shell_exec` with the
//! attack under `--approve allow`, then checks what the command could do from the
//! tool result the provider got back and from the machine itself. Every attack runs as
//! the user running the tests and, when that is root, again as an unprivileged user
//! (uid 65534) with a copy of the binary it can execute.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common;

use common::{Sandbox, stderr};
use oxydra::tools::{SandboxSupport, sandbox_support};
use oxydra_test_support::{MockServer, openai};

/// Who runs the binary.
struct User {
    /// `None`: the user running the tests.
    ids: Option<(u32, u32)>,
    binary: PathBuf,
}

/// The user running the tests, and an unprivileged one when that user is root.
fn users() -> Vec<User> {
    let mut users = vec![User {
        ids: None,
        binary: PathBuf::from(env!("CARGO_BIN_EXE_oxydra")),
    }];
    // `/proc/self` belongs to the process's effective user.
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        users.push(User {
            ids: Some((65534, 65534)),
            binary: unprivileged_binary().to_path_buf(),
        });
    }
    users
}

/// A copy of the binary in a directory every user may enter (the build directory
/// may be under a home only root can read).
fn unprivileged_binary() -> &'static Path {
    static BINARY: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = BINARY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("oxydra");
        std::fs::copy(env!("CARGO_BIN_EXE_oxydra"), &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, path)
    });
    path
}

fn enforced() -> bool {
    if let SandboxSupport::Unavailable { reason } = sandbox_support() {
        eprintln!("skipping: no sandbox on this kernel: {reason}");
        return false;
    }
    true
}

/// A sandbox the user may use: its directories belong to that user.
fn sandbox_for(user: &User) -> Sandbox {
    let sandbox = Sandbox::new();
    if let Some((uid, gid)) = user.ids {
        chown_tree(sandbox.path(), uid, gid);
    }
    sandbox
}

fn chown_tree(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).unwrap();
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), uid, gid);
        }
    }
}

/// `oxydra run --approve allow` as `user` in `sandbox`, with a model that runs
/// `command` with `shell_exec` and then answers; `env` is added to the binary's
/// environment. Returns the tool result the provider got and the run's output.
fn attack(user: &User, sandbox: &Sandbox, command: &str, env: &[(&str, &str)]) -> (String, Output) {
    attack_with(user, sandbox, &[], command, env)
}

/// [`attack`] with more flags for `oxydra run`.
fn attack_with(
    user: &User,
    sandbox: &Sandbox,
    flags: &[&str],
    command: &str,
    env: &[(&str, &str)],
) -> (String, Output) {
    let args = serde_json::json!({ "command": command }).to_string();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_attack", "shell_exec", &args)]),
        openai::text("done"),
    ])
    .unwrap();
    let mut run = Command::new(&user.binary);
    sandbox.configure(&mut run);
    run.arg("run")
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .args(["--base-url", &server.openai_url(), "--approve", "allow"])
        .args(flags)
        .arg("go")
        .envs(env.iter().copied());
    if let Some((uid, gid)) = user.ids {
        run.uid(uid).gid(gid);
    }
    let output = run.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tool = server.requests()[1].first_tool_result().unwrap();
    (tool, output)
}

#[test]
fn a_command_has_no_terminal_to_type_into() {
    if !enforced() {
        return;
    }
    for user in users() {
        let sandbox = sandbox_for(&user);
        // Attack 1: open the terminal and push a line into it.
        let (tool, _) = attack(
            &user,
            &sandbox,
            "python3 -c 'import fcntl, termios\n\
             try:\n    t = open(\"/dev/tty\", \"wb\")\n    fcntl.ioctl(t, termios.TIOCSTI, b\"x\")\n    print(\"INJECTED\")\n\
             except OSError as e:\n    print(\"refused\", e.errno)'; ps -o tty= -p $$",
            &[],
        );
        assert!(tool.contains("refused"), "{tool}");
        assert!(!tool.contains("INJECTED"), "{tool}");
        assert!(tool.contains('?'), "{tool}");
    }
}

#[test]
fn root_keeps_no_capability_and_makes_no_device_or_raw_socket() {
    if !enforced() {
        return;
    }
    for user in users() {
        let sandbox = sandbox_for(&user);
        // Attack 3, in a fresh workspace and in read-only mode.
        for mode in ["workspace-write", "read-only"] {
            let (tool, _) = attack_with(
                &user,
                &sandbox,
                &["--sandbox", mode],
                "grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status; \
                 mknod \"$TMPDIR/blk\" b 7 0 && echo MADE-DEVICE; \
                 python3 -c 'import socket\ntry:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print(\"RAW-OPENED\")\nexcept OSError as e:\n    print(\"refused\", e.errno)'",
                &[],
            );
            assert_eq!(tool.matches("0000000000000000").count(), 3, "{tool}");
            assert!(!tool.contains("MADE-DEVICE"), "{tool}");
            assert!(!tool.contains("RAW-OPENED"), "{tool}");
            assert!(tool.contains("refused"), "{tool}");
        }
    }
}

#[test]
fn nothing_a_command_starts_outlives_the_run() {
    if !enforced() {
        return;
    }
    for (index, user) in users().into_iter().enumerate() {
        let sandbox = sandbox_for(&user);
        let marker = format!("30.{}{index}7", std::process::id());
        // Attack 5: setsid -f, a double fork, nohup, and a daemon that ignores SIGTERM.
        let (tool, _) = attack(
            &user,
            &sandbox,
            &format!(
                "setsid -f sleep {marker}; (sleep {marker} &); nohup sleep {marker} >/dev/null 2>&1 & \
                 sh -c 'trap \"\" TERM HUP; exec sleep {marker}' & echo started"
            ),
            &[],
        );
        assert!(tool.contains("started"), "{tool}");
        assert!(
            !oxydra_test_support::processes::running_with_argument(&marker),
            "a process the command started outlived the run"
        );
    }
}

#[test]
fn the_environment_does_not_carry_the_keys() {
    if !enforced() {
        return;
    }
    for user in users() {
        let sandbox = sandbox_for(&user);
        // Attack 9: the keys as decimal bytes, which no scrubber recognises.
        let (tool, output) = attack(
            &user,
            &sandbox,
            "env | od -An -tu1 | tr -s ' \\n' ' '; echo; env | cut -d= -f1",
            &[
                ("OPENAI_API_KEY", "sk-proj-attackAAAAAAAAAAAAAAAAAAAAAAAA"),
                ("GITHUB_TOKEN", "ghp_attackBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"),
                (
                    "AWS_SECRET_ACCESS_KEY",
                    "attackCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
                ),
            ],
        );
        for name in ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"] {
            assert!(!tool.contains(name), "{name} reached the command: {tool}");
        }
        // "attack" as decimal bytes.
        assert!(!tool.contains("97 116 116 97 99 107"), "{tool}");
        assert!(tool.contains("PATH"), "{tool}");
        assert_eq!(output.status.code(), Some(0));
    }
}

#[test]
fn protected_names_a_command_creates_stay_out_of_the_workspace() {
    if !enforced() {
        return;
    }
    for user in users() {
        let sandbox = sandbox_for(&user);
        let ws = &sandbox.workspace;
        std::fs::create_dir(ws.join("sub")).unwrap();
        if let Some((uid, gid)) = user.ids {
            chown_tree(&ws.join("sub"), uid, gid);
        }
        // Attacks 6 and 7: a repository in a sub-folder with core.fsmonitor, an
        // .envrc, and a bare repository made by hand.
        let (tool, _) = attack(
            &user,
            &sandbox,
            "git init -q sub && git -C sub config core.fsmonitor 'touch pwned'; \
             echo 'touch pwned' > .envrc; \
             mkdir -p docs/objects docs/refs && echo 'ref: refs/heads/main' > docs/HEAD; \
             echo kept > notes.txt; echo ok",
            &[],
        );
        assert!(tool.contains("did not apply"), "{tool}");
        assert!(!ws.join("sub/.git").exists(), "{tool}");
        assert!(!ws.join(".envrc").exists(), "{tool}");
        let repo = ["HEAD", "objects", "refs"]
            .iter()
            .all(|name| ws.join("docs").join(name).exists());
        assert!(!repo, "{tool}");
        assert!(ws.join("notes.txt").exists(), "{tool}");
    }
}

#[test]
fn a_kernel_that_cannot_confine_makes_commands_refuse() {
    if !enforced() {
        return;
    }
    // A user namespace in which no further user namespace may be made: the box
    // cannot be built there. (`user.max_user_namespaces` is per user namespace.)
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_sh", "shell_exec", r#"{"command":"touch ran"}"#)]),
        openai::text("done"),
    ])
    .unwrap();
    let mut run = Command::new("unshare");
    sandbox.configure(&mut run);
    run.args(["-U", "-r", "sh", "-c"])
        .arg("echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_oxydra"))
        .arg("run")
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .args([
            "--base-url",
            &server.openai_url(),
            "--approve",
            "allow",
            "go",
        ]);
    let output = run.output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("user namespace"), "{err}");
    assert!(err.contains("--sandbox full-access"), "{err}");
    // Said once, when the command was refused, besides the exit's own error.
    assert_eq!(
        err.matches("shell_exec and shell steps are refused unless run with --sandbox full-access")
            .count(),
        1,
        "{err}"
    );
    assert!(!sandbox.workspace.join("ran").exists());
}

#[test]
fn files_other_programs_load_by_themselves_stay_out_of_reach() {
    if !enforced() {
        return;
    }
    let sandbox = Sandbox::new();
    let ws = &sandbox.workspace;
    // Attack 8: `core.hooksPath` set by a file that the user's ~/.gitconfig includes,
    // pointing at an existing executable hook of the workspace.
    let included = sandbox.path().join("home/gitinc");
    std::fs::write(
        sandbox.path().join("home/.gitconfig"),
        format!("[include]\n\tpath = {}\n", included.display()),
    )
    .unwrap();
    std::fs::write(&included, "[core]\n\thooksPath = .githooks\n").unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(git.status.success());
    std::fs::create_dir(ws.join(".githooks")).unwrap();
    std::fs::write(ws.join(".githooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let targets = [
        ".githooks/pre-commit",
        ".venv/lib/python3.11/site-packages/zz.pth",
        ".claude/settings.json",
        ".mcp.json",
        ".cursor/mcp.json",
        ".zed/settings.json",
        ".helix/languages.toml",
        ".nvim.lua",
        ".exrc",
        "mise.toml",
    ];
    let payload = "import os; os.system('touch pwned')";
    let writes: Vec<(String, String)> = targets
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let args = serde_json::json!({ "path": path, "content": payload }).to_string();
            (format!("call_{index}"), args)
        })
        .collect();
    let mut calls: Vec<(&str, &str, &str)> = writes
        .iter()
        .map(|(id, args)| (id.as_str(), "file_write", args.as_str()))
        .collect();
    // The same through a command.
    let script = targets
        .iter()
        .map(|path| format!("mkdir -p \"$(dirname '{path}')\"; echo x > '{path}'"))
        .collect::<Vec<_>>()
        .join("; ");
    let shell = serde_json::json!({ "command": script }).to_string();
    calls.push(("call_shell", "shell_exec", &shell));
    let server = MockServer::start(vec![openai::tool_calls(&calls), openai::text("done")]).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--approve", "allow"],
        "set up the editors",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let hook = std::fs::read_to_string(ws.join(".githooks/pre-commit")).unwrap();
    assert_eq!(hook, "#!/bin/sh\nexit 0\n");
    for path in &targets[1..] {
        assert!(!ws.join(path).exists(), "{path} was written");
    }
}
