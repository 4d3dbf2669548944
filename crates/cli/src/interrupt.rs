//! Ctrl-C: the first press cancels the running turn (cleanly, through its
//! `CancellationToken`); a second press, or one while nothing runs, exits with 130
//! after running the registered cleanup (killing MCP servers' process groups, which
//! a terminal's Ctrl-C does not reach and an immediate exit would leave behind).
//! SIGTERM cancels the running turn and exits with 143 after the same cleanup.
//! Every such exit first stops the local model's threads ([`crate::process_exit`]).

use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::exit_code::Exit;

/// What to do before an immediate exit.
type Cleanup = Box<dyn Fn() + Send + Sync>;

/// The process's Ctrl-C handling.
#[derive(Clone, Default)]
pub struct Interrupts {
    current: Arc<Mutex<Option<CancellationToken>>>,
    cleanup: Arc<Mutex<Option<Cleanup>>>,
}

impl Interrupts {
    /// Installs the handler (must run inside the tokio runtime). The handler is in
    /// place when this returns, so install it before anything worth cancelling starts
    /// (the MCP servers of `run` and `chat` start under [`Interrupts::begin_turn`] too),
    /// but after a rustyline editor is created: the editor sets a SIGINT handler of its
    /// own, which would replace this one, while this one chains to it.
    pub fn install() -> Self {
        let interrupts = Self::default();
        let mut signals =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
                Ok(signals) => signals,
                Err(error) => {
                    tracing::warn!("cannot handle Ctrl-C, it will end oxydra at once: {error}");
                    return interrupts;
                }
            };
        interrupts.on_terminate();
        let current = Arc::clone(&interrupts.current);
        let cleanup = Arc::clone(&interrupts.cleanup);
        tokio::spawn(async move {
            while signals.recv().await.is_some() {
                let token = lock(&current).clone();
                match token {
                    Some(token) if !token.is_cancelled() => {
                        token.cancel();
                        let _ = crate::output::write_stderr_lines(
                            "\ncancelling… (press Ctrl-C again to quit)\n".as_bytes(),
                        );
                    }
                    _ => exit_now(&cleanup, Exit::Cancelled.code()),
                }
            }
        });
        interrupts
    }

    /// SIGTERM (a service manager, `kill`, `timeout`): the running turn is
    /// cancelled and the process exits with 143 after the cleanup, not killed by
    /// the signal in the middle of a decode.
    fn on_terminate(&self) {
        let mut signals =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signals) => signals,
                Err(error) => {
                    tracing::warn!("cannot handle SIGTERM: {error}");
                    return;
                }
            };
        let current = Arc::clone(&self.current);
        let cleanup = Arc::clone(&self.cleanup);
        tokio::spawn(async move {
            if signals.recv().await.is_some() {
                if let Some(token) = lock(&current).clone() {
                    token.cancel();
                }
                exit_now(&cleanup, TERMINATED);
            }
        });
    }

    /// Runs `cleanup` before an immediate exit (replacing any earlier one).
    pub fn on_exit(&self, cleanup: impl Fn() + Send + Sync + 'static) {
        *lock(&self.cleanup) = Some(Box::new(cleanup));
    }

    /// A token for a turn (or a start-up) that is beginning; Ctrl-C cancels it.
    pub fn begin_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *lock(&self.current) = Some(token.clone());
        token
    }

    /// The turn ended: Ctrl-C exits again.
    pub fn end_turn(&self) {
        *lock(&self.current) = None;
    }
}

/// The exit code after SIGTERM (128 + 15, as a shell reports a process it ended).
const TERMINATED: u8 = 143;

/// Runs the cleanup, gives the terminal back and exits with `code`, once the local
/// model's threads have stopped.
fn exit_now(cleanup: &Mutex<Option<Cleanup>>, code: u8) -> ! {
    if let Some(cleanup) = lock(cleanup).as_ref() {
        cleanup();
    }
    crate::output::clear_terminal();
    // A turn's guard will not run: give the terminal its echo back.
    crate::terminal_echo::restore();
    // The spans that ended still go out (bounded by the export timeout); those of
    // the cut turn never end.
    crate::logging::shutdown();
    crate::process_exit::exit(code)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
