//! The command sandbox on the command line: a refusal because the kernel cannot build
//! the sandbox is an exit 2, and said once on stderr (docs/security.md, "The sandbox").
//! `[sandbox]` itself is `oxydra_config::sandbox`.

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

/// Says once, on stderr, when commands cannot run because the kernel cannot enforce
/// the sandbox (the tools refuse them unless the mode is `full-access`). The kernel is
/// probed (a forked process enters the box's namespaces and mounts an overlay) on a
/// thread of its own, so the probe does not hold up the run's first request.
pub fn report_support(config: &SandboxConfig) {
    if config.mode == SandboxMode::FullAccess {
        return;
    }
    std::thread::spawn(|| {
        if let SandboxSupport::Unavailable { reason } = sandbox_support() {
            eprintln!(
                "warning: {reason}; shell_exec and shell steps are refused unless run with \
                 --sandbox full-access"
            );
        }
    });
}
