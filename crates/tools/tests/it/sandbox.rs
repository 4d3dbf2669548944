//! The command sandbox, attacked through `shell_exec` with real commands: the kernel
//! (Landlock, the namespaces, the seccomp filter) refuses each write outside the
//! workspace or connection, and the protected-paths policy refuses each change to a
//! protected path when the command's overlay is applied — not a check of ours on the
//! command text.

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};

use oxydra_tools::builtin::ShellExec;
use oxydra_tools::{
    BuiltinToolsConfig, SandboxConfig, SandboxMode, SandboxSupport, Tool, ToolContext, ToolError,
    ToolOutput, sandbox_support,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Setup {
    workspace: tempfile::TempDir,
    /// A directory beside the workspace, outside it.
    outside: tempfile::TempDir,
}

fn setup() -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join(".git")).unwrap();
    std::fs::write(workspace.path().join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir(workspace.path().join("src")).unwrap();
    Setup {
        workspace,
        outside: tempfile::tempdir().unwrap(),
    }
}

fn sandbox(mode: SandboxMode, network: bool) -> SandboxConfig {
    SandboxConfig {
        mode,
        network,
        read_only: vec![PathBuf::from(".git")],
        ..SandboxConfig::default()
    }
}

/// Runs `command` (with positional `args`) through `shell_exec` under `config`.
async fn run(
    config: &SandboxConfig,
    workspace: &Path,
    command: &str,
    args: &[&str],
) -> Result<ToolOutput, ToolError> {
    let tools = BuiltinToolsConfig {
        sandbox: config.clone(),
        ..BuiltinToolsConfig::default()
    };
    let ctx = ToolContext::new(workspace, CancellationToken::new(), "call-sandbox".into());
    ShellExec::new(&tools)
        .execute(json!({"command": command, "args": args}), &ctx)
        .await
}

/// The exit code of a command that ran.
fn exit_code(output: &ToolOutput) -> i64 {
    output.structured.as_ref().unwrap()["exit_code"]
        .as_i64()
        .unwrap()
}

/// Whether this kernel enforces the sandbox; when it does not, a confined command
/// must be refused, which is checked here instead.
async fn enforced(workspace: &Path) -> bool {
    if let SandboxSupport::Unavailable { reason } = sandbox_support() {
        let err = run(&SandboxConfig::default(), workspace, "true", &[])
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::SandboxUnavailable { .. }), "{err}");
        eprintln!("skipping: no sandbox on this kernel: {reason}");
        return false;
    }
    true
}

#[tokio::test]
async fn writing_outside_the_workspace_is_refused_by_the_kernel() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    let target = s.outside.path().join("escaped");
    let config = sandbox(SandboxMode::WorkspaceWrite, false);
    let out = run(
        &config,
        s.workspace.path(),
        "echo x > \"$1\"",
        &[target.to_str().unwrap()],
    )
    .await
    .unwrap();
    assert_ne!(exit_code(&out), 0, "{}", out.content);
    assert!(out.content.contains("Permission denied"), "{}", out.content);
    assert!(!target.exists());
    // Neither through `..` nor by renaming a workspace file out.
    std::fs::write(s.workspace.path().join("f"), "f").unwrap();
    let out = run(
        &config,
        s.workspace.path(),
        "mv f \"$1\"",
        &[target.to_str().unwrap()],
    )
    .await
    .unwrap();
    assert_ne!(exit_code(&out), 0, "{}", out.content);
    assert!(!target.exists());
}

#[tokio::test]
async fn writing_through_a_symlink_that_leads_out_is_refused() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    std::os::unix::fs::symlink(s.outside.path(), s.workspace.path().join("link")).unwrap();
    std::fs::write(s.outside.path().join("victim"), "kept").unwrap();
    let config = sandbox(SandboxMode::WorkspaceWrite, false);
    let out = run(
        &config,
        s.workspace.path(),
        "echo x > link/new; echo x > link/victim; rm -f link/victim",
        &[],
    )
    .await
    .unwrap();
    assert!(out.content.contains("Permission denied"), "{}", out.content);
    assert!(!s.outside.path().join("new").exists());
    assert_eq!(
        std::fs::read_to_string(s.outside.path().join("victim")).unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn read_only_paths_stay_read_only_while_the_workspace_is_writable() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    let config = sandbox(SandboxMode::WorkspaceWrite, false);
    for attack in [
        "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config",
        "echo x > .git/config",
        "mkdir -p .git/hooks && echo 'touch pwned' > .git/hooks/pre-commit",
        "rm -rf .git",
        "mv .git moved",
        "mv .git/config config",
    ] {
        let out = run(&config, s.workspace.path(), attack, &[]).await.unwrap();
        // The command ran on its own view; the change was not applied, and the model
        // is told so by path.
        assert!(
            out.content.contains("did not apply") && out.content.contains(".git"),
            "{attack}: {}",
            out.content
        );
        assert_eq!(
            std::fs::read_to_string(s.workspace.path().join(".git/config")).unwrap(),
            "[core]\n",
            "{attack}"
        );
        assert!(!s.workspace.path().join(".git/hooks").exists(), "{attack}");
        let _ = std::fs::remove_dir_all(s.workspace.path().join("moved"));
    }
    // The rest of the workspace stays writable, new files at its root included.
    let out = run(
        &config,
        s.workspace.path(),
        "echo x > out.txt && mkdir -p src/deep && echo y > src/deep/f && rm out.txt && echo z > kept",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(exit_code(&out), 0, "{}", out.content);
    assert!(s.workspace.path().join("src/deep/f").exists());
    assert!(s.workspace.path().join("kept").exists());
}

#[tokio::test]
async fn the_workspace_and_the_private_tmpdir_are_writable() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    let config = sandbox(SandboxMode::WorkspaceWrite, false);
    let out = run(
        &config,
        s.workspace.path(),
        "echo in > in.txt && t=$(mktemp) && echo tmp > \"$t\" && cat \"$t\" && \
         case \"$t\" in \"$TMPDIR\"/*) echo private;; esac && echo gone > /dev/null",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(exit_code(&out), 0, "{}", out.content);
    assert!(out.content.contains("tmp\nprivate\n"), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(s.workspace.path().join("in.txt")).unwrap(),
        "in\n"
    );
}

#[tokio::test]
async fn read_only_mode_refuses_workspace_writes() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    let config = sandbox(SandboxMode::ReadOnly, false);
    let out = run(
        &config,
        s.workspace.path(),
        "cat .git/config; echo x > out.txt",
        &[],
    )
    .await
    .unwrap();
    assert_ne!(exit_code(&out), 0, "{}", out.content);
    assert!(out.content.contains("[core]"), "{}", out.content);
    assert!(!s.workspace.path().join("out.txt").exists());
    let out = run(&config, s.workspace.path(), "echo t > \"$TMPDIR/t\"", &[])
        .await
        .unwrap();
    assert_eq!(exit_code(&out), 0, "{}", out.content);
}

/// A bash `/dev/tcp` connection to a listener the test holds; whether it got one.
async fn tcp_connects(config: &SandboxConfig, workspace: &Path) -> (ToolOutput, bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let out = run(
        config,
        workspace,
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1 && echo connected' _ \"$1\"",
        &[&port],
    )
    .await
    .unwrap();
    let accepted = match listener.accept() {
        Ok(_) => true,
        Err(err) if err.kind() == ErrorKind::WouldBlock => false,
        Err(err) => panic!("{err}"),
    };
    (out, accepted)
}

/// A bash `/dev/udp` datagram to a socket the test holds; whether it arrived.
async fn udp_arrives(config: &SandboxConfig, workspace: &Path) -> bool {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    run(
        config,
        workspace,
        "bash -c 'echo hi > /dev/udp/127.0.0.1/$1' _ \"$1\"",
        &[&port],
    )
    .await
    .unwrap();
    let mut buf = [0_u8; 16];
    match socket.recv(&mut buf) {
        Ok(_) => true,
        Err(err) if err.kind() == ErrorKind::WouldBlock => false,
        Err(err) => panic!("{err}"),
    }
}

#[tokio::test]
async fn the_network_is_off_unless_allowed() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    let off = sandbox(SandboxMode::WorkspaceWrite, false);
    let (out, accepted) = tcp_connects(&off, s.workspace.path()).await;
    assert!(!accepted, "{}", out.content);
    assert_ne!(exit_code(&out), 0, "{}", out.content);
    assert!(!out.content.contains("connected"), "{}", out.content);
    assert!(!udp_arrives(&off, s.workspace.path()).await);

    let on = sandbox(SandboxMode::WorkspaceWrite, true);
    let (out, accepted) = tcp_connects(&on, s.workspace.path()).await;
    assert!(accepted, "{}", out.content);
    assert!(out.content.contains("connected"), "{}", out.content);
    assert!(udp_arrives(&on, s.workspace.path()).await);
}

#[tokio::test]
async fn full_access_allows_all_of_it() {
    let s = setup();
    let config = sandbox(SandboxMode::FullAccess, false);
    let target = s.outside.path().join("written");
    let out = run(
        &config,
        s.workspace.path(),
        "echo x > \"$1\" && echo y >> .git/config",
        &[target.to_str().unwrap()],
    )
    .await
    .unwrap();
    assert_eq!(exit_code(&out), 0, "{}", out.content);
    assert!(target.exists());
    assert_eq!(
        std::fs::read_to_string(s.workspace.path().join(".git/config")).unwrap(),
        "[core]\ny\n"
    );
    let (out, accepted) = tcp_connects(&config, s.workspace.path()).await;
    assert!(accepted, "{}", out.content);
}

#[tokio::test]
async fn positional_arguments_reach_the_command_as_data() {
    let s = setup();
    let config = sandbox(SandboxMode::FullAccess, false);
    let payload = "$(touch pwned); `touch pwned` 'x";
    let out = run(
        &config,
        s.workspace.path(),
        "printf '%s|' \"$@\"",
        &[payload, "two"],
    )
    .await
    .unwrap();
    assert!(
        out.content.contains(&format!("{payload}|two|")),
        "{}",
        out.content
    );
    assert!(!s.workspace.path().join("pwned").exists());
}

/// The protected paths of the workspace are kept from commands without anyone listing
/// them: `shell_exec` asks the protected-paths policy about each change the command
/// made (the CLI leaves `read_only` empty).
#[tokio::test]
async fn the_protected_paths_of_the_workspace_are_read_only_to_commands() {
    let s = setup();
    if !enforced(s.workspace.path()).await {
        return;
    }
    let ws = s.workspace.path();
    std::fs::create_dir(ws.join(".cargo")).unwrap();
    std::fs::write(ws.join(".cargo/config.toml"), "[build]\n").unwrap();
    std::fs::write(ws.join(".envrc"), "export A=1\n").unwrap();
    let config = SandboxConfig {
        mode: SandboxMode::WorkspaceWrite,
        ..SandboxConfig::default()
    };
    for (attack, file, before) in [
        (
            "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config",
            ".git/config",
            "[core]\n",
        ),
        (
            "printf '[target.x86_64-unknown-linux-gnu]\\nrunner = \"touch pwned\"\\n' >> .cargo/config.toml",
            ".cargo/config.toml",
            "[build]\n",
        ),
        ("echo 'touch pwned' >> .envrc", ".envrc", "export A=1\n"),
    ] {
        let out = run(&config, ws, attack, &[]).await.unwrap();
        assert!(out.content.contains(file), "{attack}: {}", out.content);
        assert_eq!(
            std::fs::read_to_string(ws.join(file)).unwrap(),
            before,
            "{attack}"
        );
    }
    let out = run(&config, ws, "echo x > out.txt", &[]).await.unwrap();
    assert_eq!(exit_code(&out), 0, "{}", out.content);
    assert!(ws.join("out.txt").exists());
}
