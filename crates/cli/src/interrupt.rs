//! Ctrl-C: the first press cancels the running turn (cleanly, through its
//! `CancellationToken`); a second press, or one while nothing runs, exits with 130
//! after running the registered cleanup (killing MCP servers' process groups, which
//! a terminal's Ctrl-C does not reach and an immediate exit would leave behind).

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
                    _ => {
                        if let Some(cleanup) = lock(&cleanup).as_ref() {
                            cleanup();
                        }
                        crate::output::clear_terminal();
                        // A turn's guard will not run: give the terminal its echo back.
                        crate::terminal_echo::restore();
                        // The spans that ended still go out (bounded by the export
                        // timeout); those of the cut turn never end.
                        crate::logging::shutdown();
                        std::process::exit(i32::from(Exit::Cancelled.code()));
                    }
                }
            }
        });
        interrupts
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
