//! How many connections fit the process's file limit (`RLIMIT_NOFILE`).
//!
//! Every connection is a file descriptor, and so is everything else the server opens:
//! the database and its pool, log files, the pipes of MCP servers and of commands,
//! fetched pages' sockets. A connection cap above what the limit leaves makes
//! `accept` fail with `EMFILE` once a flood holds the descriptors, and then nobody is
//! served (issue 42, attack 12). So the cap in force is the configured one, lowered to
//! the soft limit minus the descriptors open when serving starts minus a reserve for
//! what opens later ([`fd_reserve`]). `oxydra serve` first raises the soft limit to the
//! hard one ([`raise_fd_limit`]).

use crate::error::CoordinatorError;

/// Descriptors kept free whatever the configuration: the database's pool as it grows
/// (PostgreSQL: 16 connections and one for notifications; SQLite: a file, its journal
/// and its shared memory per connection), log files, DNS look-ups, and connections
/// being shed that have not closed yet.
pub const FD_RESERVE_FIXED: usize = 64;

/// Descriptors kept free per run executing at once: a command's pipes (both ends while
/// it starts), its sandbox's setup pipe, a fetched page's socket, a file being read.
pub const FD_RESERVE_PER_RUN: usize = 16;

/// Taken as open when the open descriptors cannot be counted.
const OPEN_WHEN_UNKNOWN: usize = 64;

/// The descriptors a server kept free for everything but connections, beyond those
/// open when it starts, when `max_concurrent_runs` runs execute at once.
pub fn fd_reserve(max_concurrent_runs: usize) -> usize {
    FD_RESERVE_PER_RUN
        .saturating_mul(max_concurrent_runs)
        .saturating_add(FD_RESERVE_FIXED)
}

/// The connection cap fitted to the file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdBudget {
    /// The soft file limit; `None` when there is none (or it cannot be read).
    pub fd_limit: Option<u64>,
    /// Descriptors kept out of the cap: those open when it was fitted plus the reserve.
    pub kept: usize,
    /// The cap configured (`max_connections`).
    pub configured: usize,
    /// The cap in force: the configured one, lowered to fit; never below 1.
    pub cap: usize,
}

impl FdBudget {
    /// The cap for `configured` connections under `fd_limit` with `open` descriptors
    /// open and `reserve` more kept free.
    pub fn fit(configured: usize, fd_limit: Option<u64>, open: usize, reserve: usize) -> Self {
        let kept = open.saturating_add(reserve);
        let cap = match fd_limit {
            None => configured,
            Some(limit) => {
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                configured.min(limit.saturating_sub(kept))
            }
        };
        Self {
            fd_limit,
            kept,
            configured,
            cap: cap.max(1),
        }
    }

    /// The cap for `configured` connections under this process's soft file limit and
    /// the descriptors open now, keeping `reserve` more free.
    pub fn measure(configured: usize, reserve: usize) -> Self {
        Self::fit(
            configured,
            soft_fd_limit(),
            open_fds().unwrap_or(OPEN_WHEN_UNKNOWN),
            reserve,
        )
    }

    /// Whether the cap is below the configured one.
    pub fn lowered(&self) -> bool {
        self.cap < self.configured
    }
}

/// The soft file limit before and after [`raise_fd_limit`]; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimitRaise {
    /// The soft limit found.
    pub before: Option<u64>,
    /// The soft limit now (the hard limit, unless that is unlimited).
    pub after: Option<u64>,
}

/// The soft limit set when the hard one is unlimited (Linux refuses more than
/// `fs.nr_open`, 1,048,576 by default; macOS more than `kern.maxfilesperproc`).
#[cfg(unix)]
const WHEN_UNLIMITED: u64 = 65_536;

/// Raises this process's soft file limit to its hard limit, so a server may hold as
/// many connections as the system allows it to. A hard limit of "unlimited" raises
/// the soft one to 65,536 at most; a soft limit already at or above it is kept.
pub fn raise_fd_limit() -> Result<FdLimitRaise, CoordinatorError> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let found = getrlimit(Resource::Nofile);
        let target = found.maximum.unwrap_or(WHEN_UNLIMITED);
        let raise = match found.current {
            None => false,
            Some(current) => current < target,
        };
        if !raise {
            return Ok(FdLimitRaise {
                before: found.current,
                after: found.current,
            });
        }
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: found.maximum,
            },
        )
        .map_err(|errno| CoordinatorError::Io {
            action: "raising the soft file limit (RLIMIT_NOFILE) to the hard limit",
            source: errno.into(),
        })?;
        Ok(FdLimitRaise {
            before: found.current,
            after: Some(target),
        })
    }
    #[cfg(not(unix))]
    {
        Ok(FdLimitRaise {
            before: None,
            after: None,
        })
    }
}

/// This process's soft file limit; `None` when unlimited or not a Unix.
fn soft_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// How many descriptors this process has open (Linux `/proc/self/fd`, else `/dev/fd`);
/// `None` when neither can be listed.
fn open_fds() -> Option<usize> {
    ["/proc/self/fd", "/dev/fd"]
        .into_iter()
        .find_map(|dir| std::fs::read_dir(dir).ok())
        .map(Iterator::count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_open_descriptors_and_the_reserve() {
        // `ulimit -n 256`, 20 open, 4 runs at once: 256 - 20 - (64 + 4 × 16) = 108.
        let budget = FdBudget::fit(256, Some(256), 20, fd_reserve(4));
        assert_eq!(budget.kept, 148);
        assert_eq!(budget.cap, 108);
        assert!(budget.lowered());
        assert!(budget.cap + budget.kept <= 256);
    }

    #[test]
    fn a_limit_with_room_keeps_the_configured_cap() {
        let budget = FdBudget::fit(256, Some(1_048_576), 20, fd_reserve(4));
        assert_eq!(budget.cap, 256);
        assert!(!budget.lowered());
        assert_eq!(FdBudget::fit(256, None, 20, fd_reserve(4)).cap, 256);
    }

    #[test]
    fn a_limit_below_the_reserve_still_serves_one_connection() {
        assert_eq!(FdBudget::fit(256, Some(64), 20, fd_reserve(4)).cap, 1);
        assert_eq!(FdBudget::fit(256, Some(0), usize::MAX, usize::MAX).cap, 1);
    }

    #[test]
    fn the_reserve_grows_with_the_runs_at_once() {
        assert_eq!(fd_reserve(0), FD_RESERVE_FIXED);
        assert_eq!(fd_reserve(8), FD_RESERVE_FIXED + 8 * FD_RESERVE_PER_RUN);
        assert_eq!(fd_reserve(usize::MAX), usize::MAX);
    }

    #[test]
    fn this_process_is_measured() {
        let budget = FdBudget::measure(usize::MAX, 0);
        assert!(
            budget.kept >= 3,
            "stdin, stdout and stderr at least: {budget:?}"
        );
        if let Some(limit) = budget.fd_limit {
            let limit = usize::try_from(limit).unwrap();
            assert!(budget.cap <= limit.saturating_sub(budget.kept).max(1));
        }
    }
}
