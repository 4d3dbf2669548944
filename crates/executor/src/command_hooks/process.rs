//! Running one hook command: confined by the run's sandbox ([`SandboxConfig::confine`],
//! what it changed in the workspace applied by [`oxydra_tools::Confinement::apply_changes`]
//! once it has ended), in its own process group, started outside the workspace with the
//! interpreter settings that load code from elsewhere removed (see [`super::launch`]),
//! the event JSON on stdin, stdout and stderr read up to a cap, killed (the whole group)
//! on timeout or cancellation.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use oxydra_tools::SandboxConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::error::HookError;

/// The most a hook may print on stdout; more is an invalid decision.
pub const MAX_HOOK_STDOUT_BYTES: usize = 64 * 1024;

/// The most of a hook's stderr kept (for the reason of a denial or a failure).
const MAX_HOOK_STDERR_BYTES: usize = 4 * 1024;

/// What a hook command printed before it exited.
#[derive(Debug)]
pub(crate) struct HookOutput {
    /// Its exit code (`None`: killed by a signal).
    pub(crate) code: Option<i32>,
    /// Its stdout (at most [`MAX_HOOK_STDOUT_BYTES`]).
    pub(crate) stdout: Vec<u8>,
    /// The start of its stderr, lossily decoded and trimmed.
    pub(crate) stderr: String,
}

/// How a hook command runs.
pub(crate) struct HookProcess<'a> {
    /// Program and arguments.
    pub(crate) command: &'a [String],
    /// The workspace: what the sandbox lets it write.
    pub(crate) workspace: &'a Path,
    /// The working directory (never the workspace: see [`super::launch`]).
    pub(crate) cwd: &'a Path,
    /// The run's sandbox.
    pub(crate) sandbox: &'a SandboxConfig,
    /// The time limit.
    pub(crate) timeout: Duration,
}

/// The process group of a running hook, killed once (on drop too).
struct Group(Option<Pid>);

impl Group {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // Gone already is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

impl HookProcess<'_> {
    /// Runs the command with `input` on stdin until it exits, `timeout` passes
    /// ([`HookError::TimedOut`]) or `cancel` fires ([`HookError::Cancelled`]).
    pub(crate) async fn run(
        &self,
        input: &[u8],
        cancel: &CancellationToken,
    ) -> Result<HookOutput, HookError> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(failed("the command is empty".to_owned()));
        };
        let mut command = std::process::Command::new(program);
        command.args(args).current_dir(self.cwd);
        // Lives until the command has ended: its private temporary directory and the
        // layers of its view of the workspace.
        let confinement = self
            .sandbox
            .confine(&mut command, self.workspace)
            .map_err(|error| failed(format!("cannot confine `{program}`: {error}")))?;
        // After the sandbox has set the environment: a hook sets no variables itself.
        oxydra_tools::neutralize_interpreter_env(&mut command, |_| false);
        let mut child = Command::from(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| failed(format!("cannot start `{program}`: {error}")))?;
        let mut group = Group(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .map(Pid::from_raw),
        );
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let input = input.to_vec();
        let work = async {
            let write = async {
                if let Some(mut stdin) = stdin {
                    // A hook that does not read its input may close the pipe early.
                    let _ = stdin.write_all(&input).await;
                    drop(stdin);
                }
            };
            let (_, out, err, status) = tokio::join!(
                write,
                capture(stdout, MAX_HOOK_STDOUT_BYTES + 1),
                capture(stderr, MAX_HOOK_STDERR_BYTES),
                child.wait(),
            );
            (out, err, status)
        };
        let ended = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(HookError::Cancelled),
            () = tokio::time::sleep(self.timeout) => Err(HookError::TimedOut { after: self.timeout }),
            done = work => Ok(done),
        };
        // Whatever happened, nothing the hook started outlives it.
        group.kill();
        let (stdout, stderr, status) = ended?;
        let status =
            status.map_err(|error| failed(format!("waiting for `{program}` failed: {error}")))?;
        // Every process of the hook has ended: what it wrote to the workspace is applied
        // as the protected-paths policy allows (a hook that timed out or was cancelled
        // leaves nothing).
        let changes = confinement
            .apply_changes()
            .await
            .map_err(|error| failed(format!("applying what `{program}` changed: {error}")))?;
        if let Some(refused) = changes.describe_refused() {
            tracing::warn!(hook = %program, "{refused}");
        }
        if stdout.len() > MAX_HOOK_STDOUT_BYTES {
            return Err(HookError::InvalidDecision {
                message: format!(
                    "the hook printed more than {MAX_HOOK_STDOUT_BYTES} bytes on stdout"
                ),
            });
        }
        Ok(HookOutput {
            code: status.code(),
            stdout,
            stderr: String::from_utf8_lossy(&stderr).trim().to_owned(),
        })
    }
}

fn failed(message: String) -> HookError {
    HookError::Failed { message }
}

/// Reads `pipe` to its end, keeping its first `keep` bytes (the rest is drained so the
/// hook never blocks on a full pipe).
async fn capture(pipe: Option<impl AsyncRead + Unpin>, keep: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buf = vec![0_u8; 8 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        let Some(chunk) = buf.get(..n).filter(|chunk| !chunk.is_empty()) else {
            break;
        };
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(chunk.get(..room.min(n)).unwrap_or_default());
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    fn open() -> SandboxConfig {
        SandboxConfig {
            mode: oxydra_tools::SandboxMode::FullAccess,
            ..SandboxConfig::default()
        }
    }

    async fn run(script: &str, timeout: Duration, input: &[u8]) -> Result<HookOutput, HookError> {
        let dir = tempfile::tempdir().unwrap();
        let command = sh(script);
        let sandbox = open();
        HookProcess {
            command: &command,
            workspace: dir.path(),
            cwd: dir.path(),
            sandbox: &sandbox,
            timeout,
        }
        .run(input, &CancellationToken::new())
        .await
    }

    #[tokio::test]
    async fn the_input_goes_in_and_stdout_comes_back() {
        let output = run(
            "cat; echo oops >&2; exit 3",
            Duration::from_secs(5),
            b"{\"a\":1}",
        )
        .await
        .unwrap();
        assert_eq!(output.stdout, b"{\"a\":1}");
        assert_eq!(output.stderr, "oops");
        assert_eq!(output.code, Some(3));
    }

    #[tokio::test]
    async fn a_hanging_hook_is_killed_at_its_timeout_with_its_children() {
        let started = std::time::Instant::now();
        let error = run("sleep 30 & sleep 30", Duration::from_millis(300), b"{}")
            .await
            .unwrap_err();
        assert_eq!(
            error,
            HookError::TimedOut {
                after: Duration::from_millis(300)
            }
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_cancelled_hook_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let command = sh("sleep 30");
        let sandbox = open();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let error = HookProcess {
            command: &command,
            workspace: dir.path(),
            cwd: dir.path(),
            sandbox: &sandbox,
            timeout: Duration::from_secs(30),
        }
        .run(b"{}", &cancel)
        .await
        .unwrap_err();
        assert_eq!(error, HookError::Cancelled);
    }

    #[tokio::test]
    async fn too_much_output_is_refused_and_a_missing_program_fails() {
        let error = run("head -c 200000 /dev/zero", Duration::from_secs(5), b"")
            .await
            .unwrap_err();
        assert!(
            matches!(error, HookError::InvalidDecision { .. }),
            "{error:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        let command = vec!["/nonexistent/hook".to_owned()];
        let sandbox = open();
        let error = HookProcess {
            command: &command,
            workspace: dir.path(),
            cwd: dir.path(),
            sandbox: &sandbox,
            timeout: Duration::from_secs(5),
        }
        .run(b"", &CancellationToken::new())
        .await
        .unwrap_err();
        assert!(matches!(error, HookError::Failed { .. }), "{error:?}");
    }

    #[tokio::test]
    async fn a_hook_that_ignores_its_input_still_finishes() {
        let big = vec![b'x'; 1024 * 1024];
        let output = run("echo '{}'", Duration::from_secs(5), &big)
            .await
            .unwrap();
        assert_eq!(output.stdout, b"{}\n");
    }

    #[tokio::test]
    async fn a_hook_starts_in_its_directory_without_interpreter_settings() {
        let workspace = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let command = sh("pwd; echo \"[$PYTHONSAFEPATH][${PYTHONPATH-unset}][${BASH_ENV-unset}]\"");
        let sandbox = open();
        let output = HookProcess {
            command: &command,
            workspace: workspace.path(),
            cwd: cwd.path(),
            sandbox: &sandbox,
            timeout: Duration::from_secs(5),
        }
        .run(b"", &CancellationToken::new())
        .await
        .unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let cwd = cwd.path().canonicalize().unwrap();
        assert_eq!(text, format!("{}\n[1][unset][unset]\n", cwd.display()));
    }
}
