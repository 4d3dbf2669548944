//! `shell_exec`: `sh -c <command>` in the workspace, in its own process group, confined
//! by the command sandbox ([`crate::sandbox`]).
//!
//! The group is killed with SIGKILL on timeout and on cancellation, and also when
//! the shell itself exits, so a call never leaves background processes behind
//! (or holds the output pipes open).

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use oxydra_types::{SafetyTier, Source};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;

use super::policy;
use crate::call_preview::{CallPreview, cap_text};
use crate::config::{BuiltinToolsConfig, ShellConfig};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::protected::ProtectedPaths;
use crate::sandbox::SandboxConfig;
use crate::tool::ToolOutput;
use crate::truncate::truncate_with_dropped;
use crate::typed_tool::TypedTool;

/// How long to wait for the output pipes to close once the group is killed.
const PIPE_GRACE: Duration = Duration::from_secs(1);
/// Bytes of the output reserved for the headers.
const HEADER_BYTES: usize = 64;

/// Arguments of `shell_exec`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellExecArgs {
    /// The command line, run by `sh -c` in the workspace root.
    pub command: String,
    /// Seconds before the command is killed (default 60, capped by the configuration).
    pub timeout_secs: Option<u64>,
    /// Values for the command's positional parameters `$1`, `$2`, …: they reach the
    /// shell as data, never parsed as part of the command.
    #[serde(default)]
    pub args: Vec<String>,
}

/// Runs a shell command in the workspace (Privileged).
#[derive(Debug, Clone)]
pub struct ShellExec {
    output_limit: usize,
    shell: ShellConfig,
    sandbox: SandboxConfig,
    /// The protected paths: those inside the workspace are read-only to commands.
    protected: ProtectedPaths,
    program: PathBuf,
}

impl ShellExec {
    /// The tool, with the output limit and timeouts of `config`.
    pub fn new(config: &BuiltinToolsConfig) -> Self {
        Self {
            output_limit: config.output_limit_bytes,
            shell: config.shell,
            sandbox: config.sandbox.clone(),
            protected: config.protected.clone(),
            program: PathBuf::from("sh"),
        }
    }

    /// The sandbox of one command: the protected-paths policy rules on what it
    /// changed in the workspace once it has ended.
    fn sandbox(&self) -> SandboxConfig {
        SandboxConfig {
            protected: self.protected.clone(),
            ..self.sandbox.clone()
        }
    }

    /// Runs commands with `program` (a POSIX shell, called as `program -c COMMAND sh
    /// ARGS…`) instead of the `sh` found on `PATH`.
    pub fn with_shell(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// The longest timeout a call may ask for (at least 1 s).
    fn max_secs(&self) -> u64 {
        self.shell.max_timeout_secs.max(1)
    }
}

/// Time beyond a command's timeout for killing its group and reading its pipes.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

#[async_trait]
impl TypedTool for ShellExec {
    type Args = ShellExecArgs;
    const NAME: &'static str = "shell_exec";
    const TIER: SafetyTier = SafetyTier::Privileged;

    /// What the tool returns comes from a command.
    fn output_source_args(&self, _args: &ShellExecArgs) -> Option<Source> {
        Some(Source::Command)
    }

    fn description(&self) -> String {
        format!(
            "Run a shell command (`sh -c`) in the workspace root and return its exit code, \
             stdout and stderr. It is killed, with every process it started, after \
             timeout_secs (default {}, at most {}); background processes do not outlive it. \
             Sandbox: {}.",
            self.shell.default_timeout_secs,
            self.shell.max_timeout_secs,
            self.sandbox.describe()
        )
    }

    fn max_execution_time(&self) -> Option<Duration> {
        // The longest timeout a call may ask for, plus time to kill the group and
        // collect what it printed.
        Some(Duration::from_secs(self.max_secs()) + KILL_GRACE)
    }

    /// The command line and its positional parameters.
    fn preview_args(
        &self,
        args: &ShellExecArgs,
        _workspace_root: &std::path::Path,
    ) -> Option<CallPreview> {
        Some(CallPreview::Command {
            command: cap_text(args.command.clone()),
            args: args
                .args
                .iter()
                .map(|value| cap_text(value.clone()))
                .collect(),
        })
    }

    async fn run(&self, args: ShellExecArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let secs = match args.timeout_secs {
            Some(0) => {
                return Err(ToolError::InvalidArguments {
                    message: "`shell_exec`: timeout_secs must be at least 1".to_owned(),
                });
            }
            Some(secs) => secs,
            None => self.shell.default_timeout_secs,
        }
        .min(self.max_secs());
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments {
                message: "`shell_exec`: command must not be empty".to_owned(),
            });
        }
        let root = policy(ctx)?.root().to_owned();
        let mut command = std::process::Command::new(&self.program);
        command
            .arg("-c")
            .arg(&args.command)
            .arg("sh")
            .args(&args.args)
            .current_dir(&root);
        // Lives until the command has ended: its private temporary directory and the
        // layers of its view of the workspace.
        let confinement = self.sandbox().confine(&mut command, &root)?;
        let mut child = Command::from(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| {
                ToolError::Failed(format!("cannot start `{}`: {err}", self.program.display()))
            })?;
        let mut group = ProcessGroup(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .map(Pid::from_raw),
        );
        tracing::debug!(pgid = ?group.0, timeout_secs = secs, "shell command started");
        let keep = self.output_limit;
        let stdout = child
            .stdout
            .take()
            .map(|pipe| tokio::spawn(capture(pipe, keep)));
        let stderr = child
            .stderr
            .take()
            .map(|pipe| tokio::spawn(capture(pipe, keep)));

        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => Ending::Exited(status),
                Err(err) => {
                    group.kill();
                    return Err(ToolError::Failed(format!("waiting for the command failed: {err}")));
                }
            },
            () = tokio::time::sleep(Duration::from_secs(secs)) => Ending::TimedOut,
            () = ctx.cancel.cancelled() => Ending::Cancelled,
        };
        // Whatever happened, nothing of the group may outlive the call.
        group.kill();
        if !matches!(ending, Ending::Exited(_)) {
            // Reap the shell; its status no longer matters.
            let _reaped = child.wait().await;
        }
        let stdout = collect(stdout).await;
        let stderr = collect(stderr).await;
        let streams = format_streams(&stdout, &stderr, self.output_limit);
        // Every process of the command has ended: what it wrote is applied (a command
        // that timed out or was cancelled keeps what it had done, as it would have
        // without a sandbox).
        let changes = confinement.apply_changes().await?;
        let refused = changes
            .describe_refused()
            .map(|text| format!("{text}\n"))
            .unwrap_or_default();
        match ending {
            Ending::Exited(status) => Ok(ToolOutput::structured(
                format!("{}\n{streams}{refused}", describe(status)),
                serde_json::json!({ "exit_code": status.code() }),
            )),
            Ending::TimedOut => {
                tracing::debug!(timeout_secs = secs, "shell command timed out; group killed");
                Err(ToolError::CommandTimedOut {
                    secs,
                    partial_output: streams,
                })
            }
            Ending::Cancelled => Err(ToolError::Cancelled),
        }
    }
}

/// The shell's process group. It is killed once: explicitly when the call ends,
/// or on drop when the call's future is dropped mid-run (e.g. by an executor
/// timeout), so no process of the group outlives the call either way.
struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    /// SIGKILL every process of the group (gone already is fine).
    fn kill(&mut self) {
        let Some(pgid) = self.0.take() else {
            return;
        };
        match killpg(pgid, Signal::SIGKILL) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(err) => {
                tracing::warn!(%pgid, error = %err, "could not kill the shell's process group");
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a stream printed: its first `keep` bytes and its total length.
#[derive(Debug, Default)]
struct Captured {
    head: Vec<u8>,
    total: usize,
}

async fn capture(mut pipe: impl AsyncRead + Unpin, keep: usize) -> Captured {
    let mut captured = Captured::default();
    let mut buf = vec![0_u8; 16 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
            break;
        };
        let room = keep.saturating_sub(captured.head.len());
        captured
            .head
            .extend_from_slice(chunk.get(..room.min(n)).unwrap_or_default());
        captured.total += n;
    }
    captured
}

/// The captured stream, waiting at most [`PIPE_GRACE`] for a pipe some escaped
/// process still holds open.
async fn collect(task: Option<JoinHandle<Captured>>) -> Captured {
    let Some(mut task) = task else {
        return Captured::default();
    };
    match tokio::time::timeout(PIPE_GRACE, &mut task).await {
        Ok(Ok(captured)) => captured,
        _ => {
            task.abort();
            Captured::default()
        }
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code: {code}"),
        (None, Some(signal)) => {
            let name =
                Signal::try_from(signal).map_or_else(|_| signal.to_string(), |s| s.to_string());
            format!("killed by signal {name}")
        }
        (None, None) => "exit status unknown".to_owned(),
    }
}

/// `stdout:` and `stderr:` sections within `limit` bytes; stderr keeps at least
/// half of the room when both are long.
fn format_streams(stdout: &Captured, stderr: &Captured, limit: usize) -> String {
    let room = limit.saturating_sub(HEADER_BYTES);
    let err_room = stderr
        .head
        .len()
        .min(room / 2)
        .max(room.saturating_sub(stdout.head.len()));
    let out_room = room.saturating_sub(stderr.head.len().min(err_room));
    let mut out = String::new();
    for (name, stream, stream_room) in [("stdout", stdout, out_room), ("stderr", stderr, err_room)]
    {
        if stream.total == 0 {
            continue;
        }
        let text = String::from_utf8_lossy(&stream.head);
        let dropped = stream.total - stream.head.len();
        let text = truncate_with_dropped(&text, stream_room, dropped);
        out.push_str(name);
        out.push_str(":\n");
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    if out.is_empty() {
        out.push_str("(no output)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::workspace;
    use super::*;
    use crate::tool::Tool;

    fn tool() -> ShellExec {
        ShellExec::new(&BuiltinToolsConfig::default())
    }

    #[tokio::test]
    async fn reports_exit_code_stdout_and_stderr() {
        let (_dir, ctx) = workspace();
        let out = tool()
            .execute(json!({"command": "echo out; echo err >&2; exit 3"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "exit code: 3\nstdout:\nout\nstderr:\nerr\n");
        assert_eq!(out.structured, Some(json!({"exit_code": 3})));
        let out = tool()
            .execute(json!({"command": "true"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "exit code: 0\n(no output)\n");
        let out = tool()
            .execute(json!({"command": "kill -SEGV $$"}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content.starts_with("killed by signal SIGSEGV"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn runs_in_the_workspace() {
        let (dir, ctx) = workspace();
        let out = tool()
            .execute(json!({"command": "pwd -P; touch made"}), &ctx)
            .await
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            out.content,
            format!("exit code: 0\nstdout:\n{}\n", root.display())
        );
        assert!(dir.path().join("made").exists());
    }

    #[tokio::test]
    async fn long_output_is_truncated_with_a_marker() {
        let (_dir, ctx) = workspace();
        let config = BuiltinToolsConfig {
            output_limit_bytes: 1000,
            ..BuiltinToolsConfig::default()
        };
        let out = ShellExec::new(&config)
            .execute(
                json!({"command": "head -c 100000 /dev/zero | tr '\\0' a; echo tail >&2"}),
                &ctx,
            )
            .await
            .unwrap();
        assert!(out.content.len() <= 1000 + 40, "{}", out.content.len());
        assert!(out.content.contains("[... truncated "), "{}", out.content);
        assert!(out.content.ends_with("stderr:\ntail\n"), "{}", out.content);
    }

    #[tokio::test]
    async fn bad_arguments_are_refused() {
        let (_dir, ctx) = workspace();
        for args in [
            json!({"command": "true", "timeout_secs": 0}),
            json!({"command": "  "}),
            json!({}),
        ] {
            let err = tool().execute(args, &ctx).await.unwrap_err();
            assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
        }
    }

    #[test]
    fn format_gives_stderr_room() {
        let stdout = Captured {
            head: vec![b'o'; 500],
            total: 5000,
        };
        let stderr = Captured {
            head: vec![b'e'; 500],
            total: 500,
        };
        let text = format_streams(&stdout, &stderr, 564);
        assert!(text.contains("[... truncated 4750 bytes ...]"), "{text}");
        assert!(text.contains("[... truncated 250 bytes ...]"), "{text}");
    }
}
