//! How [`ReliableProvider`](crate::ReliableProvider) retries: bounded attempts and
//! total time, exponential backoff with full jitter, `Retry-After` honoured.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::Rng;

use crate::error::ProviderError;

/// The retry policy of a [`ReliableProvider`](crate::ReliableProvider).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// Backoff before the first retry; doubles for each further retry.
    pub base_delay: Duration,
    /// Largest backoff between two attempts (a `Retry-After` may ask for more).
    pub max_delay: Duration,
    /// Total time allowed for all attempts and waits. Each attempt is cut off when
    /// it runs out (giving [`ProviderError::Timeout`]), and a wait that would end
    /// past it is not taken: the last error is returned instead. It also caps a
    /// provider's `Retry-After`.
    pub max_total: Duration,
    /// Whether a stream that fails before yielding anything falls back to `complete`.
    pub fallback_to_complete: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_total: Duration::from_secs(180),
            fallback_to_complete: true,
        }
    }
}

impl RetryPolicy {
    /// The default policy with `max_attempts`.
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// The default policy with `base_delay` (use 1 ms in tests).
    pub fn with_base_delay(mut self, base_delay: Duration) -> Self {
        self.base_delay = base_delay;
        self
    }

    /// The default policy with `max_delay`.
    pub fn with_max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// The default policy with `max_total`.
    pub fn with_max_total(mut self, max_total: Duration) -> Self {
        self.max_total = max_total;
        self
    }

    /// Turns the stream → complete fallback on or off.
    pub fn with_fallback(mut self, fallback_to_complete: bool) -> Self {
        self.fallback_to_complete = fallback_to_complete;
        self
    }

    /// The upper bound of the backoff after failed attempt `retry` (0 for the first
    /// retry): `min(max_delay, base_delay * 2^retry)`.
    pub fn backoff_ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The wait before retry `retry` (0-based): full jitter, uniform in
    /// `[0, backoff_ceiling(retry)]`, unless the provider asked for `retry_after`,
    /// which is then honoured, capped at [`max_total`](Self::max_total) (a wait that
    /// long can never fit in the budget, so the caller gives up instead).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_total);
        }
        let ceiling = self.backoff_ceiling(retry);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(rand::rng().random_range(0..=nanos))
    }
}

/// Whether `error` is worth another attempt: rate limits, overload, server errors,
/// broken connections and timeouts, unless the provider said otherwise
/// ([`ProviderError::RetryAdvised`]).
pub fn is_retryable(error: &ProviderError) -> bool {
    match error {
        ProviderError::RetryAdvised { retry, .. } => *retry,
        _ => matches!(
            error,
            ProviderError::RateLimited { .. }
                | ProviderError::Overloaded { .. }
                | ProviderError::Server { .. }
                | ProviderError::Transport { .. }
                | ProviderError::Timeout(_)
        ),
    }
}

/// The name of the header in which a provider says whether to retry (Anthropic).
pub(crate) const SHOULD_RETRY_HEADER: &str = "x-should-retry";

/// Reads an `x-should-retry` value: `true` or `false`; anything else is no advice.
pub(crate) fn parse_should_retry(value: &str) -> Option<bool> {
    match value.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// `error` with the provider's advice applied: wrapped in
/// [`ProviderError::RetryAdvised`] when the advice differs from what the error alone
/// would mean. An authentication failure or a cancellation is never retried, whatever
/// the header says.
pub(crate) fn with_retry_advice(error: ProviderError, advice: Option<bool>) -> ProviderError {
    match advice {
        Some(retry)
            if retry != is_retryable(&error)
                && !matches!(error, ProviderError::Auth { .. } | ProviderError::Cancelled) =>
        {
            ProviderError::RetryAdvised {
                retry,
                error: Box::new(error),
            }
        }
        _ => error,
    }
}

/// Reads a `Retry-After` header value: delay-seconds (`"3"`, `"1.5"`) or an HTTP date
/// (`"Wed, 21 Oct 2015 07:28:00 GMT"`, measured from `now`; a date in the past
/// gives zero). `None` when it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
/// `None` for anything else, including a date before 1970 or a year outside
/// 1..=9999 (the format's four digits).
fn parse_http_date(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':');
    let hour: u64 = clock.next()?.parse().ok()?;
    let minute: u64 = clock.next()?.parse().ok()?;
    let second: u64 = clock.next()?.parse().ok()?;
    if parts.next()? != "GMT"
        || !(1..=31).contains(&day)
        || !(1..=9999).contains(&year)
        || hour > 23
        || minute > 59
    {
        return None;
    }
    let days = days_from_civil(year, month, i64::try_from(day).ok()?)?;
    let days = u64::try_from(days).ok()?;
    days.checked_mul(86_400)?
        .checked_add(hour * 3_600 + minute * 60 + second.min(60))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm);
/// `month` in 1..=12 and `day` in 1..=31. `None` if it does not fit in an `i64`.
fn days_from_civil(year: i64, month: i64, day: i64) -> Option<i64> {
    let year = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era.checked_mul(146_097)?
        .checked_add(day_of_era)?
        .checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 2015-10-21 07:27:50
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 0.25 ", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(
            parse_retry_after("Wed, 21 Foo 2015 07:28:00 GMT", now),
            None
        );
    }

    #[test]
    fn epoch_arithmetic_is_right() {
        assert_eq!(days_from_civil(1970, 1, 1), Some(0));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT"),
            Some(1_709_164_800)
        );
    }

    #[test]
    fn nonsense_dates_are_absent_not_a_panic() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        for value in [
            "Wed, 21 Oct 9223372036854775807 07:28:00 GMT",
            "Wed, 21 Jan -9223372036854775808 07:28:00 GMT",
            "Wed, 21 Oct 99999999999 07:28:00 GMT",
            "Wed, 21 Oct 10000 07:28:00 GMT",
            "Wed, 21 Oct 0 07:28:00 GMT",
            "Wed, 21 Oct 1969 07:28:00 GMT",
            "Wed, 21 Oct 2015 99999999999999999999:28:00 GMT",
        ] {
            assert_eq!(parse_retry_after(value, now), None, "{value}");
        }
        // The arithmetic itself is checked, whatever the caller passes.
        assert_eq!(days_from_civil(i64::MAX, 10, 21), None);
        assert_eq!(days_from_civil(i64::MIN, 1, 21), None);
        assert!(days_from_civil(i64::MIN, 10, 21).is_none());
        // The latest date the format allows still works.
        assert_eq!(
            parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(253_402_300_799)
        );
    }

    #[test]
    fn huge_retry_after_is_capped_at_the_total_budget() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        let huge = parse_retry_after("18446744073709551615", now);
        assert_eq!(huge, Some(Duration::from_secs(u64::MAX)));
        let policy = RetryPolicy::default().with_max_total(Duration::from_secs(60));
        assert_eq!(policy.delay(0, huge), Duration::from_secs(60));
        assert_eq!(parse_retry_after("1e300", now), None);
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let policy = RetryPolicy::default()
            .with_base_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_millis(500));
        assert_eq!(policy.backoff_ceiling(0), Duration::from_millis(100));
        assert_eq!(policy.backoff_ceiling(2), Duration::from_millis(400));
        assert_eq!(policy.backoff_ceiling(3), Duration::from_millis(500));
        assert_eq!(policy.backoff_ceiling(40), Duration::from_millis(500));
        for retry in 0..10 {
            assert!(policy.delay(retry, None) <= policy.backoff_ceiling(retry));
        }
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
    }

    #[test]
    fn the_should_retry_header_overrides_only_when_it_disagrees() {
        assert_eq!(parse_should_retry(" true"), Some(true));
        assert_eq!(parse_should_retry("false"), Some(false));
        assert_eq!(parse_should_retry("TRUE!"), None);
        let limited = || ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
            message: "slow".into(),
        };
        let refused = with_retry_advice(limited(), Some(false));
        assert!(!is_retryable(&refused));
        assert_eq!(refused.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(refused.to_string(), limited().to_string());
        assert!(matches!(
            with_retry_advice(limited(), Some(true)),
            ProviderError::RateLimited { .. }
        ));
        let conflict = ProviderError::InvalidRequest {
            message: "HTTP 409: conflict".into(),
        };
        assert!(is_retryable(&with_retry_advice(conflict, Some(true))));
        let auth = ProviderError::Auth {
            status: 401,
            message: String::new(),
        };
        assert!(!is_retryable(&with_retry_advice(auth, Some(true))));
    }

    #[test]
    fn only_transient_errors_are_retryable() {
        assert!(is_retryable(&ProviderError::Overloaded {
            retry_after: None,
            message: String::new()
        }));
        assert!(is_retryable(&ProviderError::Server {
            status: 502,
            message: String::new()
        }));
        assert!(!is_retryable(&ProviderError::Auth {
            status: 401,
            message: String::new()
        }));
        assert!(!is_retryable(&ProviderError::InvalidRequest {
            message: String::new()
        }));
        assert!(!is_retryable(&ProviderError::Cancelled));
    }
}
