//! One-time login codes for the web console: `oxydra serve` prints a URL holding
//! one (`http://127.0.0.1:PORT/#login=CODE`); the page trades it once for the bearer
//! token (`POST /console/login`). A code is 256 random bits from the operating
//! system's generator (through `rand`'s cryptographic thread generator), lives
//! [`LOGIN_CODE_TTL`] and is kept in this process's memory only. Codes are compared in
//! constant time, and after [`MAX_LOGIN_FAILURES`] wrong ones within
//! [`LOGIN_FAILURE_WINDOW`] every code is refused until the window has passed.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::constant_time::constant_time_eq;

/// How long a code can be used.
pub const LOGIN_CODE_TTL: Duration = Duration::from_secs(10 * 60);
/// How many wrong codes lock the login, within [`LOGIN_FAILURE_WINDOW`].
pub const MAX_LOGIN_FAILURES: usize = 10;
/// The window over which wrong codes are counted.
pub const LOGIN_FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// The most codes outstanding at once (the oldest is dropped for a new one).
const MAX_CODES: usize = 16;

/// Now in Unix milliseconds, as the codes see it (a test moves it).
pub type LoginClock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Why a code was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefusal {
    /// Unknown, already used or expired (which of the three is not said).
    Invalid,
    /// Too many wrong codes lately: nothing is accepted for this many milliseconds.
    Locked {
        /// Until the lock lifts.
        retry_after_ms: i64,
    },
}

#[derive(Default)]
struct State {
    /// Outstanding codes and when each expires.
    codes: Vec<(String, i64)>,
    /// When the recent wrong codes were presented.
    failures: VecDeque<i64>,
}

/// The codes of one server and the token they are traded for.
pub struct LoginCodes {
    token: Option<String>,
    clock: LoginClock,
    state: Mutex<State>,
}

impl std::fmt::Debug for LoginCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginCodes").finish_non_exhaustive()
    }
}

impl LoginCodes {
    /// Codes traded for `token` (none are issued without one), on the wall clock.
    pub fn new(token: Option<String>) -> Self {
        Self::with_clock(token, Arc::new(crate::run::now_millis))
    }

    /// Codes on `clock`.
    pub fn with_clock(token: Option<String>, clock: LoginClock) -> Self {
        Self {
            token,
            clock,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new code, or `None` when there is no token to trade it for.
    pub fn issue(&self) -> Option<String> {
        self.token.as_ref()?;
        let bytes: [u8; 32] = rand::random();
        let mut code = String::with_capacity(64);
        for byte in bytes {
            let _ = write!(code, "{byte:02x}");
        }
        let now = (self.clock)();
        let ttl = i64::try_from(LOGIN_CODE_TTL.as_millis()).unwrap_or(i64::MAX);
        let mut state = self.state();
        state.codes.retain(|(_, expires)| *expires > now);
        if state.codes.len() >= MAX_CODES {
            state.codes.remove(0);
        }
        state.codes.push((code.clone(), now.saturating_add(ttl)));
        Some(code)
    }

    /// The token for `code`, which is used up; refused when it is unknown, used,
    /// expired, or the login is locked by wrong codes.
    pub fn redeem(&self, code: &str) -> Result<String, LoginRefusal> {
        let now = (self.clock)();
        let window = i64::try_from(LOGIN_FAILURE_WINDOW.as_millis()).unwrap_or(i64::MAX);
        let mut state = self.state();
        while state
            .failures
            .front()
            .is_some_and(|at| now.saturating_sub(*at) >= window)
        {
            state.failures.pop_front();
        }
        if state.failures.len() >= MAX_LOGIN_FAILURES {
            let oldest = state.failures.front().copied().unwrap_or(now);
            return Err(LoginRefusal::Locked {
                retry_after_ms: oldest.saturating_add(window).saturating_sub(now).max(1),
            });
        }
        state.codes.retain(|(_, expires)| *expires > now);
        // Every outstanding code is compared, matching or not.
        let mut found = None;
        for (index, (known, _)) in state.codes.iter().enumerate() {
            if constant_time_eq(known.as_bytes(), code.as_bytes()) {
                found = Some(index);
            }
        }
        match (found, &self.token) {
            (Some(index), Some(token)) => {
                state.codes.remove(index);
                Ok(token.clone())
            }
            _ => {
                state.failures.push_back(now);
                Err(LoginRefusal::Invalid)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    fn clocked() -> (LoginCodes, Arc<AtomicI64>) {
        let now = Arc::new(AtomicI64::new(1_000_000));
        let read = now.clone();
        let codes = LoginCodes::with_clock(
            Some("the-token".into()),
            Arc::new(move || read.load(Ordering::SeqCst)),
        );
        (codes, now)
    }

    #[test]
    fn a_code_is_random_and_redeemed_once() {
        let (codes, _) = clocked();
        let code = codes.issue().unwrap();
        assert_eq!(code.len(), 64, "256 bits in hex");
        assert!(code.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(codes.issue().unwrap(), code);
        assert_eq!(codes.redeem(&code).unwrap(), "the-token");
        assert_eq!(codes.redeem(&code), Err(LoginRefusal::Invalid));
    }

    #[test]
    fn a_code_expires_after_ten_minutes() {
        let (codes, now) = clocked();
        let early = codes.issue().unwrap();
        let late = codes.issue().unwrap();
        now.fetch_add(599_999, Ordering::SeqCst);
        assert_eq!(codes.redeem(&early).unwrap(), "the-token");
        now.fetch_add(1, Ordering::SeqCst);
        assert_eq!(codes.redeem(&late), Err(LoginRefusal::Invalid));
    }

    #[test]
    fn no_code_without_a_token() {
        let codes = LoginCodes::new(None);
        assert_eq!(codes.issue(), None);
        assert_eq!(codes.redeem(""), Err(LoginRefusal::Invalid));
    }

    #[test]
    fn wrong_codes_lock_the_login_for_a_minute() {
        let (codes, now) = clocked();
        let code = codes.issue().unwrap();
        // A prefix, an extension, the empty string and another code's shape are wrong.
        let wrong = [
            code[..63].to_owned(),
            format!("{code}0"),
            String::new(),
            "0".repeat(64),
        ];
        for attempt in 0..MAX_LOGIN_FAILURES {
            let guess = &wrong[attempt % wrong.len()];
            assert_eq!(codes.redeem(guess), Err(LoginRefusal::Invalid));
            now.fetch_add(1_000, Ordering::SeqCst);
        }
        // Locked: even the right code waits until the first failure is a minute old.
        assert_eq!(
            codes.redeem(&code),
            Err(LoginRefusal::Locked {
                retry_after_ms: 50_000
            })
        );
        now.fetch_add(50_000, Ordering::SeqCst);
        assert_eq!(codes.redeem(&code).unwrap(), "the-token");
    }

    #[test]
    fn outstanding_codes_are_bounded() {
        let (codes, _) = clocked();
        let first = codes.issue().unwrap();
        for _ in 0..MAX_CODES {
            codes.issue().unwrap();
        }
        assert_eq!(codes.redeem(&first), Err(LoginRefusal::Invalid));
    }
}
