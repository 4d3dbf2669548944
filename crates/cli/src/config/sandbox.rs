//! The command sandbox on the command line: a refusal because the kernel cannot build
//! the sandbox is an exit 2, and said once on stderr (docs/security.md, "The sandbox").
//! `[sandbox]` itself is `oxydra_config::sandbox`.

use std::sync::atomic::{AtomicBool, Ordering};

use oxydra::tools::{SandboxConfig, SandboxMode, SandboxSupport, sandbox_support};
use oxydra::types::{RuntimeEvent, RuntimeProgressKind};

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
/// thread of its own, started at once: `serve`'s way, whose start-up no request waits
/// on. `run` and `chat` start it later ([`SupportReport`]).
pub fn report_support(config: &SandboxConfig) {
    SupportReport::new(config).start();
}

/// The sandbox report of `run` and `chat`: the probe starts once the run's first
/// provider call has been answered (the first event after the first `provider_call`),
/// while the run waits on the model. Started with the process, the probe's fork and the
/// namespaces it sets up took two of the 10.5 ms from exec to the first provider request
/// on the 2-core machine (`--sandbox full-access`, which never probes: 8.4 ms). A
/// command tool probes for itself when it runs first (`sandbox_support` is probed once,
/// whoever asks first), so nothing runs unconfined for the wait.
#[derive(Debug)]
pub struct SupportReport {
    /// Whether there is anything to report: not in `full-access`.
    wanted: bool,
    called: AtomicBool,
    started: AtomicBool,
}

impl SupportReport {
    /// The report for a run confined by `config`.
    pub fn new(config: &SandboxConfig) -> Self {
        Self {
            wanted: config.mode != SandboxMode::FullAccess,
            called: AtomicBool::new(false),
            started: AtomicBool::new(false),
        }
    }

    /// Reads one event of the run: the first after the first `provider_call` starts
    /// the probe.
    pub fn on_event(&self, event: &RuntimeEvent) {
        let is_call = matches!(
            event,
            RuntimeEvent::Progress(progress)
                if matches!(progress.kind, RuntimeProgressKind::ProviderCall)
        );
        if is_call {
            self.called.store(true, Ordering::SeqCst);
        } else if self.called.load(Ordering::SeqCst) {
            self.start();
        }
    }

    /// Probes the kernel on a thread of its own, once, and says on stderr when the
    /// sandbox is unavailable.
    pub fn start(&self) {
        if !self.wanted || self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        std::thread::spawn(|| {
            if let SandboxSupport::Unavailable { reason } = sandbox_support() {
                eprintln!(
                    "warning: {reason}; shell_exec and shell steps are refused unless run \
                     with --sandbox full-access"
                );
            }
        });
    }

    /// Whether the probe has been started.
    #[cfg(test)]
    fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use oxydra::types::RuntimeProgressEvent;

    use super::*;

    fn progress(kind: RuntimeProgressKind) -> RuntimeEvent {
        RuntimeEvent::Progress(RuntimeProgressEvent::new(kind, 1, 10))
    }

    #[test]
    fn the_probe_starts_after_the_first_provider_call_is_answered() {
        let report = SupportReport::new(&SandboxConfig::default());
        report.on_event(&RuntimeEvent::TextDelta { text: "x".into() });
        assert!(!report.started(), "nothing was asked of the model yet");
        report.on_event(&progress(RuntimeProgressKind::ProviderCall));
        assert!(!report.started(), "the request is on its way");
        report.on_event(&RuntimeEvent::TextDelta { text: "y".into() });
        assert!(report.started());
    }

    #[test]
    fn full_access_never_probes() {
        let config = SandboxConfig {
            mode: SandboxMode::FullAccess,
            ..SandboxConfig::default()
        };
        let report = SupportReport::new(&config);
        report.on_event(&progress(RuntimeProgressKind::ProviderCall));
        report.on_event(&RuntimeEvent::TextDelta { text: "y".into() });
        report.start();
        assert!(!report.started());
    }
}
