//! The command sandbox on the command line: a refusal because the kernel cannot build
//! the sandbox is an exit 2, and said once on stderr (docs/security.md, "The sandbox").
//! `[sandbox]` itself is `oxydra_config::sandbox`.

use std::sync::atomic::{AtomicBool, Ordering};

use oxydra::tools::{SandboxConfig, SandboxMode, SandboxSupport, sandbox_support};

/// The exit of a task that ended well: a usage error (exit 2) when a command was
/// refused because the kernel cannot build the sandbox, so that a refusal is never
/// taken for success; the error names what is missing and the flag that runs
/// commands unconfined.
pub fn refused_commands_exit() -> Result<crate::exit_code::Exit, crate::error::CliError> {
    let refused = oxydra::tools::commands_refused_unconfinable();
    if refused == 0 {
        return Ok(crate::exit_code::Exit::Done);
    }
    let reason = match sandbox_support() {
        SandboxSupport::Unavailable { reason } => reason.as_str(),
        SandboxSupport::Available => "the sandbox was unavailable",
    };
    Err(crate::error::CliError::Setup(format!(
        "{refused} command(s) were refused because the command sandbox cannot be built: \
         {reason}; run them unconfined only if you trust the task, with --sandbox full-access"
    )))
}

/// The warning printed when commands cannot run because the kernel cannot enforce the
/// sandbox: `reason` says what is missing.
fn warn_unavailable(reason: &str) {
    eprintln!(
        "warning: {reason}; shell_exec and shell steps are refused unless run with \
         --sandbox full-access"
    );
}

/// Says once, on stderr, when commands cannot run because the kernel cannot enforce
/// the sandbox (the tools refuse them unless the mode is `full-access`). `serve`'s way:
/// the kernel is probed (a forked process enters the box's namespaces and mounts an
/// overlay) on a thread of its own, started at once, so that a service's operator reads
/// it before the first run; no request waits on it. `run` and `chat` say it only when a
/// command was refused ([`SupportReport`]).
pub fn report_support(config: &SandboxConfig) {
    if config.mode == SandboxMode::FullAccess {
        return;
    }
    std::thread::spawn(|| {
        if let SandboxSupport::Unavailable { reason } = sandbox_support() {
            warn_unavailable(reason);
        }
    });
}

/// The sandbox report of `run` and `chat`: the warning comes with the first command the
/// tools refused because the kernel cannot build the box, read off the process's count
/// of such refusals after each event of the run (none is counted in `full-access`). The
/// kernel is probed by the command tool that runs first, never for the report: a run
/// that runs no command pays no probe (a fork that enters namespaces and mounts an
/// overlay: 1.5 ms of CPU and 0.5 MiB of peak RSS of the 20-turn scenario,
/// docs/performance.md). Nothing runs unconfined meanwhile: a command waits for the
/// probe's answer, and `run` ends with exit 2 naming what is missing
/// ([`refused_commands_exit`]).
#[derive(Debug, Default)]
pub struct SupportReport {
    warned: AtomicBool,
}

impl SupportReport {
    /// Called after each event of the run: the first call after a command was refused
    /// for want of the sandbox prints the warning, once.
    pub fn after_event(&self) {
        if oxydra::tools::commands_refused_unconfinable() == 0
            || self.warned.swap(true, Ordering::SeqCst)
        {
            return;
        }
        if let SandboxSupport::Unavailable { reason } = sandbox_support() {
            warn_unavailable(reason);
        }
    }

    /// Whether the warning has been printed.
    #[cfg(test)]
    fn warned(&self) -> bool {
        self.warned.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_refused_no_command_says_nothing() {
        // This test process runs no command, so none was refused.
        assert_eq!(oxydra::tools::commands_refused_unconfinable(), 0);
        let report = SupportReport::default();
        for _ in 0..3 {
            report.after_event();
        }
        assert!(!report.warned());
    }
}
