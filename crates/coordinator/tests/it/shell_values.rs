//! No parameter value is ever parsed as code by a POSIX shell: a deterministic
//! `shell_exec` step runs under dash, bash, zsh and busybox, each called as `sh`, with
//! payloads that run `touch marker` wherever a shell parses or evaluates them (the
//! bash arithmetic of `[[ {{n}} -gt 100 ]]` included); the marker never appears. The
//! shells come from `scripts/install-test-shells.sh`.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxydra_coordinator::{BlueprintConfig, CoordinatorConfig, RunnerDeps, StepConfig};
use oxydra_executor::AlwaysApprove;
use oxydra_tools::BuiltinToolsConfig;
use oxydra_tools::builtin::ShellExec;
use serde_json::{Value, json};
use support::{Served, registry};

/// `program` on `PATH`, or a failure that says how to install it.
fn find_shell(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!("`{program}` is not installed: run scripts/install-test-shells.sh")
        })
}

/// A directory holding `sh`, a link to `program` (busybox picks its applet by name).
fn as_sh(program: &str, into: &Path) -> PathBuf {
    let dir = into.join(program);
    std::fs::create_dir_all(&dir).unwrap();
    let sh = dir.join("sh");
    std::os::unix::fs::symlink(find_shell(program), &sh).unwrap();
    sh
}

/// `check`: steps that put `{{n}}` where bash and zsh evaluate arithmetic, where
/// every shell tests numbers, and where it is plain data.
fn blueprint() -> BlueprintConfig {
    let steps = [
        "[[ {{n}} -gt 100 ]] && echo big || echo small",
        "test {{n}} -gt 100 2>/dev/null && echo big2 || echo small2",
        "x={{n}}; echo $((x + 1)); echo after",
        "printf '<%s>\\n' {{n}} n={{n}}",
        "echo {{n}} | cat; case {{n}} in *) echo case;; esac",
    ];
    let mut blueprint = BlueprintConfig::deterministic(
        "check",
        "Compares a number",
        json!({"type": "object", "required": ["n"],
            "properties": {"n": {"type": "string"}}}),
        steps
            .iter()
            .map(|command| StepConfig::new("shell_exec", json!({"command": command})))
            .collect(),
    );
    blueprint.allow_privileged = vec!["shell_exec".into()];
    blueprint
}

async fn serve(sh: &Path, workspace: &Path) -> Served {
    let shell = ShellExec::new(&BuiltinToolsConfig::default()).with_shell(sh);
    let mut deps = RunnerDeps::new(registry(vec![Arc::new(shell)]), workspace);
    deps.permission_broker = Some(Arc::new(AlwaysApprove));
    Served::with(CoordinatorConfig::default(), vec![blueprint()], deps).await
}

async fn run(server: &Served, n: &str) -> Value {
    let (status, created) = server
        .post_run(json!({"agent_name": "check", "parameters": {"n": n}}))
        .await;
    assert_eq!(status, 201, "{created}");
    server.finished(created["run_id"].as_str().unwrap()).await
}

const PAYLOADS: [&str; 9] = [
    "a[$(touch marker)]",
    "a[`touch marker`]",
    "x[$(touch marker)]+1",
    "$(touch marker)",
    "`touch marker`",
    "1; touch marker",
    "'; touch marker; '",
    "\"; touch marker; \"",
    "1 -o -n x ]] || touch marker; [[ 1",
];

#[tokio::test]
async fn no_shell_runs_a_parameter_value_as_code() {
    let shells = tempfile::tempdir().unwrap();
    for program in ["dash", "bash", "zsh", "busybox"] {
        let sh = as_sh(program, shells.path());
        let workspace = tempfile::tempdir().unwrap();
        let server = serve(&sh, workspace.path()).await;
        for payload in PAYLOADS {
            let run = run(&server, payload).await;
            let marker = workspace.path().join("marker");
            assert!(!marker.exists(), "{program} ran `{payload}`: {run}");
            if payload.contains('[') && payload.contains(['$', '`']) {
                // Refused before any step ran: bash arithmetic would run it.
                assert_eq!(run["status"], "failed", "{program} {payload}: {run}");
                assert_eq!(run["error"]["detail"]["error_kind"], "unsafe_parameter");
                assert_eq!(run["error"]["detail"]["step"], 1);
            } else {
                assert_eq!(run["status"], "completed", "{program} {payload}: {run}");
                // The value reached the commands whole, as one word.
                let printed = run["result"]["steps"][3]["output"].as_str().unwrap();
                assert!(
                    printed.contains(&format!("<{payload}>\n<n={payload}>")),
                    "{program} {payload}: {printed}"
                );
            }
        }
        // An honest value still works: every shell tests it, bash and zsh in `[[`.
        let run = run(&server, "150").await;
        assert_eq!(run["status"], "completed", "{program}: {run}");
        let steps = &run["result"]["steps"];
        assert!(
            steps[1]["output"].as_str().unwrap().contains("big2"),
            "{program}: {run}"
        );
        if matches!(program, "bash" | "zsh") {
            assert!(
                steps[0]["output"].as_str().unwrap().contains("big"),
                "{program}: {run}"
            );
            assert!(
                steps[2]["output"].as_str().unwrap().contains("151"),
                "{program}: {run}"
            );
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn shell_steps_run_in_the_sandbox() {
    if let oxydra_tools::SandboxSupport::Unavailable { reason } = oxydra_tools::sandbox_support() {
        eprintln!("skipping: no sandbox on this kernel: {reason}");
        return;
    }
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let mut write = blueprint();
    write.steps = vec![StepConfig::new(
        "shell_exec",
        json!({"command": "echo x > {{n}}; echo y > inside"}),
    )];
    let shell = oxydra_tools::builtin_tool("shell_exec", &BuiltinToolsConfig::default()).unwrap();
    let mut deps = RunnerDeps::new(registry(vec![shell]), workspace.path());
    deps.permission_broker = Some(Arc::new(AlwaysApprove));
    let server = Served::with(CoordinatorConfig::default(), vec![write], deps).await;
    let run = run(&server, target.to_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    let output = run["result"]["output"].as_str().unwrap();
    assert!(output.contains("Permission denied"), "{output}");
    assert!(!target.exists());
    assert!(workspace.path().join("inside").exists());
    server.stop().await;
}
