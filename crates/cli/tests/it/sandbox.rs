//! `oxydra run` confines the model's commands: its `shell_exec` writes outside the
//! workspace are refused by the kernel by default, `--sandbox read-only` refuses
//! workspace writes too, `--sandbox full-access` lifts it, and an untrusted
//! `./oxydra.toml` cannot lift it.

use crate::common;

use common::{Sandbox, stderr};
use oxydra::tools::{SandboxSupport, sandbox_support};
use oxydra_test_support::{MockServer, openai};

const ESCAPE: &str = r#"{"command":"echo x > ../escaped.txt; echo y > inside.txt"}"#;

/// Runs a model that calls `shell_exec` with [`ESCAPE`]; returns the tool's output
/// as the provider got it back, and the CLI's stderr.
fn run_escape(sandbox: &Sandbox, extra: &[&str]) -> (String, String) {
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_sh", "shell_exec", ESCAPE)]),
        openai::text("done"),
    ])
    .unwrap();
    let mut args = vec!["--approve", "allow"];
    args.extend_from_slice(extra);
    let output = sandbox.run_openai(&server.openai_url(), &args, "write the files");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let tool = server.requests()[1].first_tool_result().unwrap();
    (tool, stderr(&output))
}

fn enforced() -> bool {
    if let SandboxSupport::Unavailable { reason } = sandbox_support() {
        eprintln!("skipping: no sandbox on this kernel: {reason}");
        return false;
    }
    true
}

#[test]
fn commands_write_only_inside_the_workspace_by_default() {
    if !enforced() {
        return;
    }
    let sandbox = Sandbox::new();
    let (tool, _) = run_escape(&sandbox, &[]);
    assert!(tool.contains("Permission denied"), "{tool}");
    assert!(!sandbox.path().join("escaped.txt").exists());
    assert!(sandbox.workspace.join("inside.txt").exists());
}

#[test]
fn read_only_refuses_workspace_writes_and_full_access_allows_all() {
    if !enforced() {
        return;
    }
    let sandbox = Sandbox::new();
    let (tool, _) = run_escape(&sandbox, &["--sandbox", "read-only"]);
    assert!(tool.contains("Permission denied"), "{tool}");
    assert!(!sandbox.workspace.join("inside.txt").exists());
    assert!(!sandbox.path().join("escaped.txt").exists());

    let (tool, _) = run_escape(&sandbox, &["--sandbox", "full-access"]);
    assert!(tool.starts_with("exit code: 0"), "{tool}");
    assert!(sandbox.workspace.join("inside.txt").exists());
    assert!(sandbox.path().join("escaped.txt").exists());
}

#[test]
fn an_untrusted_project_file_cannot_lift_the_sandbox() {
    if !enforced() {
        return;
    }
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[sandbox]\nmode = \"full-access\"\nnetwork = true\n",
    )
    .unwrap();
    let (tool, err) = run_escape(&sandbox, &[]);
    assert!(tool.contains("Permission denied"), "{tool}");
    assert!(!sandbox.path().join("escaped.txt").exists());
    assert!(err.contains("sandbox.mode"), "{err}");
    assert!(err.contains("sandbox.network"), "{err}");
}

#[test]
fn an_unknown_mode_names_the_flag() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .command()
        .args(["run", "--sandbox", "danger", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("--sandbox"), "{err}");
    assert!(err.contains("workspace-write"), "{err}");
}

/// `[sandbox] pass_env` never hands a command a provider's key, whichever names the
/// variable: a `[[provider.fallback]]` table's `api_key_env`, or `--api-key-env`. The
/// run stops before the provider is asked, naming the key and what made it one.
#[test]
fn a_fallback_or_flag_key_variable_is_never_passed_to_commands() {
    let server = MockServer::start(vec![openai::text("never")]).unwrap();
    let sandbox = Sandbox::new();
    let refused = |config: &str, extra: &[&str]| {
        sandbox.write_trusted_config(config);
        let mut command = sandbox.stored_command("run");
        command
            .args(["--base-url", &server.openai_url()])
            .args(extra)
            .env("BACKUP_KEY", "backup-key-value-0123456789")
            .env("FLAG_KEY", "flag-key-value-0123456789")
            .arg("hi");
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        stderr(&output)
    };
    let err = refused(
        r#"
[sandbox]
pass_env = ["PATH_EXTRA", "BACKUP_KEY"]

[[provider.fallback]]
kind = "openai"
model = "backup"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "BACKUP_KEY"
"#,
        &[],
    );
    assert!(err.contains("sandbox.pass_env"), "{err}");
    assert!(err.contains("`BACKUP_KEY`"), "{err}");
    assert!(err.contains("provider.fallback[0].api_key_env"), "{err}");
    assert!(!err.contains("backup-key-value"), "{err}");

    let err = refused(
        "[sandbox]\npass_env = [\"FLAG_KEY\"]\n",
        &["--api-key-env", "FLAG_KEY"],
    );
    assert!(err.contains("`FLAG_KEY`"), "{err}");
    assert!(err.contains("--api-key-env"), "{err}");
    assert!(server.requests().is_empty(), "the provider was never asked");

    // Without the flag the same name is an ordinary variable, passed.
    sandbox.write_trusted_config("[sandbox]\npass_env = [\"FLAG_KEY\"]\n");
    let mut command = sandbox.stored_command("run");
    command
        .args(["--base-url", &server.openai_url()])
        .env("FLAG_KEY", "flag-key-value-0123456789")
        .arg("hi");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}
