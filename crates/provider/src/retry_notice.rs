//! Telling the caller of a provider call that [`ReliableProvider`](crate::ReliableProvider)
//! waits before another attempt: the runtime shows "rate limited, retrying in 5 s (2/4)"
//! instead of a spinner that seems frozen for the length of a `Retry-After`.
//!
//! The retry happens inside the call, before any stream exists, so the notice cannot
//! travel on the stream: the caller runs the call inside [`observing_retries`], and each
//! wait is handed to its observer as it begins. Outside such a scope nothing is told.

use std::future::Future;
use std::sync::Arc;

use oxydra_types::ProviderRetry;

use crate::error::ProviderError;

/// What is told of each retry.
pub type RetryObserver = Arc<dyn Fn(&ProviderRetry) + Send + Sync>;

tokio::task_local! {
    static OBSERVER: RetryObserver;
}

/// Runs `call` (a provider call) with `observer` told of every wait before a retry
/// that the call's [`ReliableProvider`](crate::ReliableProvider)s make.
pub async fn observing_retries<F: Future>(observer: RetryObserver, call: F) -> F::Output {
    OBSERVER.scope(observer, call).await
}

/// Tells the observer of the current call, if any, of `retry`.
pub(crate) fn notify(retry: &ProviderRetry) {
    let _ = OBSERVER.try_with(|observer| observer(retry));
}

/// Why a retried call failed, in a few words a person reads on the spinner's line.
pub(crate) fn reason(error: &ProviderError) -> String {
    match error {
        ProviderError::RateLimited { .. } => "rate limited".to_owned(),
        ProviderError::Overloaded { .. } => "overloaded".to_owned(),
        ProviderError::Server { status, .. } => format!("server error {status}"),
        ProviderError::Timeout(_) | ProviderError::FirstByteTimeout { .. } => {
            "timed out".to_owned()
        }
        ProviderError::Transport { .. } => "connection failed".to_owned(),
        ProviderError::RetryAdvised { error, .. } => reason(error),
        _ => "failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[tokio::test]
    async fn only_a_call_inside_the_scope_is_observed() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let retry = ProviderRetry {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 500,
            reason: "overloaded".into(),
        };
        notify(&retry);
        let kept = Arc::clone(&seen);
        let observer: RetryObserver = Arc::new(move |retry| {
            kept.lock().unwrap().push(retry.clone());
        });
        observing_retries(observer, async { notify(&retry) }).await;
        notify(&retry);
        assert_eq!(*seen.lock().unwrap(), vec![retry]);
    }

    #[test]
    fn reasons_are_a_few_words() {
        let error = ProviderError::Server {
            status: 503,
            message: "a long body".into(),
        };
        assert_eq!(reason(&error), "server error 503");
        let wrapped = ProviderError::RetryAdvised {
            retry: true,
            error: Box::new(ProviderError::Transport {
                message: "reset".into(),
            }),
        };
        assert_eq!(reason(&wrapped), "connection failed");
    }
}
