//! [`ConnectionLimits`]: the bounds the accept loop ([`serve_bounded`](crate::serve_bounded))
//! serves within and each connection's watchdog ([`activity`](super::activity))
//! enforces. Apart from both, so that neither imports the other for it.

use std::time::Duration;

use super::fd_budget::{FdBudget, fd_reserve};
use crate::config::CoordinatorConfig;

/// The connection bounds of [`serve_bounded`](crate::serve_bounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections served at once (lowered to fit the file limit, see
    /// [`ConnectionLimits::budget`]).
    pub max_connections: usize,
    /// Longest a client may take to send a request's headers once it began.
    pub header_read_timeout: Duration,
    /// Longest a connection may stay open with nothing in flight.
    pub idle_timeout: Duration,
    /// File descriptors kept free for everything but connections, beyond those open
    /// when serving starts ([`fd_reserve`]: the database, log files, commands' pipes).
    pub fd_reserve: usize,
}

impl ConnectionLimits {
    /// The limits `config` sets, with the reserve of its `max_concurrent_runs`.
    pub fn from_config(config: &CoordinatorConfig) -> Self {
        Self {
            max_connections: config.max_connections,
            header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
            idle_timeout: Duration::from_millis(config.idle_timeout_ms),
            fd_reserve: fd_reserve(config.max_concurrent_runs),
        }
    }

    /// The connection cap these limits give under this process's file limit now:
    /// what [`serve_bounded`](crate::serve_bounded) serves with when it starts.
    pub fn budget(&self) -> FdBudget {
        FdBudget::measure(self.max_connections, self.fd_reserve)
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self::from_config(&CoordinatorConfig::default())
    }
}
