//! The box a command starts in, attacked from inside with real programs (issue 42):
//! terminal injection, root's capabilities, device nodes, raw sockets, escaping
//! processes, inherited keys, and protected names that do not exist yet. Each attack
//! is performed; the test asserts the kernel or the overlay's policy stopped it.
//! They run as whichever user runs the tests: CI runs them as root and again as an
//! unprivileged user (`cargo xtask ci`).

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use oxydra_tools::builtin::ShellExec;
use oxydra_tools::{
    BuiltinToolsConfig, SandboxConfig, SandboxMode, SandboxSupport, Tool, ToolContext, ToolOutput,
    sandbox_support,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn available() -> bool {
    match sandbox_support() {
        SandboxSupport::Available => true,
        SandboxSupport::Unavailable { reason } => {
            eprintln!("skipping: no sandbox on this kernel: {reason}");
            false
        }
    }
}

async fn shell(workspace: &Path, network: bool, command: &str) -> ToolOutput {
    let tools = BuiltinToolsConfig {
        sandbox: SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            network,
            ..SandboxConfig::default()
        },
        ..BuiltinToolsConfig::default()
    };
    let ctx = ToolContext::new(workspace, CancellationToken::new(), "call-box".into());
    ShellExec::new(&tools)
        .execute(json!({ "command": command }), &ctx)
        .await
        .unwrap()
}

fn exit_code(output: &ToolOutput) -> i64 {
    output.structured.as_ref().unwrap()["exit_code"]
        .as_i64()
        .unwrap()
}

/// Runs `script` with `sh -c` confined by `config` through the library's own API,
/// with `stdin` as its standard input; returns (exit code, stdout + stderr).
fn confined(config: &SandboxConfig, workspace: &Path, stdin: Stdio, script: &str) -> (i32, String) {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script).current_dir(workspace);
    let confinement = config.confine(&mut command, workspace).unwrap();
    let output = command
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    confinement.apply_changes_blocking();
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

#[tokio::test]
async fn a_command_has_no_terminal_and_cannot_push_input_into_one() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    // Attack 1, on the terminal a command could still hold: the test gives it a real
    // pseudo-terminal as stdin, and the command pushes a line into it with TIOCSTI.
    let pty = nix::pty::openpty(None, None).unwrap();
    let stdin = Stdio::from(std::fs::File::from(pty.slave.try_clone().unwrap()));
    let script = "python3 -c 'import fcntl, termios\n\
                  try:\n    fcntl.ioctl(0, termios.TIOCSTI, b\"x\")\n    print(\"INJECTED\")\n\
                  except OSError as e:\n    print(\"refused\", e.errno)'";
    let (code, text) = confined(&SandboxConfig::default(), ws.path(), stdin, script);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("refused 1"), "{text}");
    assert!(!text.contains("INJECTED"), "{text}");
    // Nothing arrived on the terminal's input side.
    let mut flags = nix::fcntl::OFlag::from_bits_truncate(
        nix::fcntl::fcntl(&pty.master, nix::fcntl::FcntlArg::F_GETFL).unwrap(),
    );
    flags.insert(nix::fcntl::OFlag::O_NONBLOCK);
    nix::fcntl::fcntl(&pty.master, nix::fcntl::FcntlArg::F_SETFL(flags)).unwrap();
    let mut buf = [0u8; 64];
    let read = nix::unistd::read(&pty.master, &mut buf);
    assert!(
        !matches!(read, Ok(n) if buf[..n].contains(&b'x')),
        "the injected byte reached the terminal: {read:?}"
    );
    let _ = pty.master.as_raw_fd();

    // No controlling terminal, and no `/dev/tty` to open.
    let out = shell(
        ws.path(),
        false,
        "ps -o tty= -p $$; (exec 3<>/dev/tty) 2>/dev/null && echo TTY-OPENED; echo done",
    )
    .await;
    assert!(out.content.contains("?"), "{}", out.content);
    assert!(!out.content.contains("TTY-OPENED"), "{}", out.content);
    assert!(out.content.contains("done"), "{}", out.content);
}

#[tokio::test]
async fn a_command_has_no_capabilities_and_cannot_make_devices_or_raw_sockets() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let out = shell(
        ws.path(),
        false,
        "grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status",
    )
    .await;
    for line in out.content.lines().filter(|line| line.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{}", out.content);
    }
    assert_eq!(out.content.matches("Cap").count(), 4, "{}", out.content);

    // Attack 3: a block device for a loop device, in the workspace and in $TMPDIR.
    let out = shell(
        ws.path(),
        false,
        "mknod blk b 7 0 && echo MADE-WS; mknod \"$TMPDIR/blk\" b 7 0 && echo MADE-TMP; \
         mknod chr c 1 3 && echo MADE-CHR; echo done",
    )
    .await;
    assert!(!out.content.contains("MADE"), "{}", out.content);
    assert!(!ws.path().join("blk").exists());

    // Raw and packet sockets, with the network on or off.
    for network in [false, true] {
        let out = shell(
            ws.path(),
            network,
            "python3 -c 'import socket\n\
             for family, kind in ((socket.AF_PACKET, socket.SOCK_RAW), \
             (socket.AF_INET, socket.SOCK_RAW), (socket.AF_INET6, socket.SOCK_RAW)):\n\
             \x20   try:\n        socket.socket(family, kind); print(\"OPENED\", family)\n\
             \x20   except OSError as e:\n        print(\"refused\", family, e.errno)'",
        )
        .await;
        assert!(
            !out.content.contains("OPENED"),
            "network {network}: {}",
            out.content
        );
        assert_eq!(out.content.matches("refused").count(), 3, "{}", out.content);
    }
    // Disks and the other devices cannot be read.
    let out = shell(
        ws.path(),
        false,
        "for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/mem /dev/loop0 /dev/tty /dev/console; do \
         [ -e \"$d\" ] && head -c1 \"$d\" >/dev/null 2>&1 && echo \"READ $d\"; done; \
         head -c1 /dev/urandom | wc -c",
    )
    .await;
    assert!(!out.content.contains("READ"), "{}", out.content);
    assert!(out.content.contains('1'), "{}", out.content);
}

#[tokio::test]
async fn no_unix_socket_is_reachable_with_the_network_off() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let path = outside.path().join("engine.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = format!(
        "python3 -c 'import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect(\"{}\")\nprint(\"CONNECTED\")'",
        path.display()
    );
    let out = shell(ws.path(), false, &script).await;
    assert!(!out.content.contains("CONNECTED"), "{}", out.content);
    assert!(listener.accept().is_err());
}

fn alive(marker: &str) -> bool {
    oxydra_test_support::processes::running_with_argument(marker)
}

#[tokio::test]
async fn nothing_a_command_starts_outlives_the_call() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let marker = format!("4242.{}", std::process::id());
    // Attack 5 and its cousins: setsid -f, a double fork, nohup, and a daemon that
    // ignores SIGTERM, each sleeping with the marker as its argument.
    let script = format!(
        "setsid -f sleep {marker}1; (sleep {marker}2 &) ; nohup sleep {marker}3 >/dev/null 2>&1 & \
         sh -c 'trap \"\" TERM HUP; exec sleep {marker}4' & echo started"
    );
    let out = shell(ws.path(), false, &script).await;
    assert!(out.content.contains("started"), "{}", out.content);
    assert!(
        !alive(&marker),
        "a process of the command outlived the call"
    );

    // And on timeout: the whole namespace is killed with the keeper.
    let tools = BuiltinToolsConfig::default();
    let ctx = ToolContext::new(ws.path(), CancellationToken::new(), "call-timeout".into());
    let err = ShellExec::new(&tools)
        .execute(
            json!({ "command": format!("setsid -f sleep {marker}5; sleep {marker}6"), "timeout_secs": 1 }),
            &ctx,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(
        !alive(&marker),
        "a process of the command outlived its timeout"
    );
}

#[tokio::test]
async fn a_command_gets_a_cleared_environment() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    // Cargo and nextest set CARGO_MANIFEST_DIR for every test process: a variable of
    // Oxydra's own environment that is not on the allow-list.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let out = shell(ws.path(), false, "env").await;
    assert!(
        !out.content.contains("CARGO_MANIFEST_DIR"),
        "{}",
        out.content
    );
    assert!(out.content.contains("PATH="), "{}", out.content);
    assert!(out.content.contains("TMPDIR="), "{}", out.content);
    // Nor through another process's environment.
    let out = shell(
        ws.path(),
        false,
        &format!(
            "cat /proc/{}/environ >/dev/null 2>&1 && echo READ-ENVIRON; echo done",
            std::process::id()
        ),
    )
    .await;
    assert!(!out.content.contains("READ-ENVIRON"), "{}", out.content);
}

#[tokio::test]
async fn protected_names_a_command_creates_are_not_applied() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    // Attack 6: a repository made in a sub-folder, with core.fsmonitor set; an .envrc.
    let out = shell(
        ws.path(),
        false,
        "git init -q sub && git -C sub config core.fsmonitor 'touch pwned' && \
         echo 'touch pwned' > .envrc && echo kept > sub/notes.txt && echo ok",
    )
    .await;
    assert_eq!(exit_code(&out), 0, "{}", out.content);
    assert!(!ws.path().join("sub/.git").exists(), "{}", out.content);
    assert!(!ws.path().join(".envrc").exists(), "{}", out.content);
    assert!(out.content.contains("sub/.git"), "{}", out.content);
    assert!(out.content.contains(".envrc"), "{}", out.content);
    // The rest of what the command did is applied.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("sub/notes.txt")).unwrap(),
        "kept\n"
    );

    // Attack 7: a bare repository made by hand in docs/.
    let out = shell(
        ws.path(),
        false,
        "mkdir -p docs/objects docs/refs/heads && echo 'ref: refs/heads/main' > docs/HEAD && \
         printf '[core]\\n\\tfsmonitor = touch pwned\\n\\tworktree = ..\\n' > docs/config",
    )
    .await;
    let is_repo = ["HEAD", "objects", "refs"]
        .iter()
        .all(|name| ws.path().join("docs").join(name).exists());
    assert!(!is_repo, "docs became a repository: {}", out.content);
    let git = Command::new("git")
        .args(["-C", "docs", "rev-parse", "--git-dir"])
        .current_dir(ws.path())
        .env("GIT_CEILING_DIRECTORIES", ws.path())
        .output()
        .unwrap();
    assert!(!git.status.success(), "git takes docs/ for a repository");
}

#[tokio::test]
async fn a_command_s_changes_are_applied_exactly() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::write(w.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(w.join("gone.txt"), "x").unwrap();
    std::fs::write(w.join("old-name"), "moved").unwrap();
    std::fs::create_dir_all(w.join("tree/deep")).unwrap();
    std::fs::write(w.join("tree/deep/f"), "f").unwrap();
    std::fs::write(w.join("script.sh"), "echo hi\n").unwrap();
    let out = shell(
        w,
        false,
        "sed -i s/two/TWO/ a.txt && rm gone.txt && mv old-name new-name && rm -r tree && \
         mkdir tree && echo replaced > tree/g && chmod 755 script.sh && ln -s a.txt link && \
         mkfifo pipe && cp /bin/true suid && chmod 4755 suid && echo ok",
    )
    .await;
    assert_eq!(exit_code(&out), 0, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(w.join("a.txt")).unwrap(),
        "one\nTWO\n"
    );
    assert!(!w.join("gone.txt").exists());
    assert!(!w.join("old-name").exists());
    assert_eq!(
        std::fs::read_to_string(w.join("new-name")).unwrap(),
        "moved"
    );
    assert!(!w.join("tree/deep").exists());
    assert_eq!(
        std::fs::read_to_string(w.join("tree/g")).unwrap(),
        "replaced\n"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(w.join("script.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    assert_eq!(
        std::fs::read_link(w.join("link")).unwrap(),
        Path::new("a.txt")
    );
    // A FIFO is never applied, and the model is told.
    assert!(!w.join("pipe").exists());
    assert!(out.content.contains("pipe"), "{}", out.content);
}

#[tokio::test]
async fn oxydra_s_database_and_trust_store_are_hidden_from_commands() {
    if !available() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("oxydra.db");
    let trust = data.path().join("trusted.json");
    std::fs::write(&db, "SQLite format 3 secret-session").unwrap();
    std::fs::write(&trust, "{\"trusted\": \"secret-trust\"}").unwrap();
    // Inside the workspace too, where the overlay would otherwise show it.
    let inner_db = ws.path().join("inner.db");
    std::fs::write(&inner_db, "secret-inner").unwrap();
    let protected = oxydra_tools::ProtectedPaths::default()
        .with(oxydra_tools::ProtectedKind::Database, &db)
        .with(oxydra_tools::ProtectedKind::TrustStore, &trust)
        .with(oxydra_tools::ProtectedKind::Database, &inner_db);
    let tools = BuiltinToolsConfig {
        protected,
        ..BuiltinToolsConfig::default()
    };
    let ctx = ToolContext::new(ws.path(), CancellationToken::new(), "call-hidden".into());
    let command = format!(
        "cat '{}' '{}' inner.db; echo; ls -la inner.db | wc -l",
        db.display(),
        trust.display()
    );
    let out = ShellExec::new(&tools)
        .execute(json!({ "command": command }), &ctx)
        .await
        .unwrap();
    assert!(!out.content.contains("secret"), "{}", out.content);
    // The files are still there, untouched.
    assert_eq!(std::fs::read_to_string(&inner_db).unwrap(), "secret-inner");
}
