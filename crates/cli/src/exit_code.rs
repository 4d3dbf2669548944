//! The process exit codes (docs/cli.md).

/// How `oxydra` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done.
    Done,
    /// 1: the run failed (provider, memory, I/O …).
    Runtime,
    /// 2: bad usage or configuration.
    Usage,
    /// 3: a budget (turns, cost, time) ran out.
    Budget,
    /// 130: cancelled with Ctrl-C.
    Cancelled,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Runtime => 1,
            Self::Usage => 2,
            Self::Budget => 3,
            Self::Cancelled => 130,
        }
    }

    /// The exit for a runtime error kind (`RuntimeError::kind()` / the `error` event's `kind`).
    ///
    /// `prompt_too_long` (the prompt cannot fit the context budget) is a usage error, 2:
    /// the input is too big.
    ///
    /// `session_busy` (another run is writing the session) is a runtime error, 1: the
    /// command was right and succeeds once the other run has finished.
    pub fn for_error_kind(kind: &str) -> Self {
        match kind {
            "budget_exceeded" => Self::Budget,
            "cancelled" => Self::Cancelled,
            "config" | "prompt_too_long" => Self::Usage,
            _ => Self::Runtime,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_contract() {
        assert_eq!(Exit::Done.code(), 0);
        assert_eq!(Exit::Runtime.code(), 1);
        assert_eq!(Exit::Usage.code(), 2);
        assert_eq!(Exit::Budget.code(), 3);
        assert_eq!(Exit::Cancelled.code(), 130);
        assert_eq!(Exit::for_error_kind("budget_exceeded"), Exit::Budget);
        assert_eq!(Exit::for_error_kind("cancelled"), Exit::Cancelled);
        assert_eq!(Exit::for_error_kind("provider"), Exit::Runtime);
        assert_eq!(Exit::for_error_kind("prompt_too_long"), Exit::Usage);
        assert_eq!(Exit::for_error_kind("session_busy"), Exit::Runtime);
    }
}
