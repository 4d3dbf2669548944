//! Ctrl-C: the first press cancels the running turn (cleanly, through its
//! `CancellationToken`); a second press, or one while nothing runs, exits with 130.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::exit_code::Exit;

/// The process's Ctrl-C handling.
#[derive(Clone, Default)]
pub struct Interrupts {
    current: Arc<Mutex<Option<CancellationToken>>>,
}

impl Interrupts {
    /// Installs the handler (must run inside the tokio runtime).
    pub fn install() -> Self {
        let interrupts = Self::default();
        let current = Arc::clone(&interrupts.current);
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let token = lock(&current).clone();
                match token {
                    Some(token) if !token.is_cancelled() => {
                        token.cancel();
                        eprintln!("\ncancelling… (press Ctrl-C again to quit)");
                    }
                    _ => std::process::exit(i32::from(Exit::Cancelled.code())),
                }
            }
        });
        interrupts
    }

    /// A token for a turn that is starting; Ctrl-C cancels it.
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
