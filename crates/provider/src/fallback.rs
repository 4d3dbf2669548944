//! The one rule for when a stream that failed becomes a plain `complete` request.

use crate::error::ProviderError;

/// Whether a stream whose response was accepted but that failed before yielding
/// anything is answered by a plain `complete` request instead.
///
/// Falls back when the *stream* is what broke, so a non-streamed request may well
/// succeed: an unreadable or empty body (`Decode`), a connection cut or a body that
/// stopped coming (`Transport`, `Timeout`), and a server-side failure or overload
/// reported by an `error` event inside the 200 response (`Server`, `Overloaded`).
///
/// Never falls back when a second request would meet the same answer:
/// - `RateLimited`: a 429 is about the caller's quota, which the `complete` request
///   counts against too; the stream is retried after the provider's `Retry-After`
///   (or the backoff) instead.
/// - `Auth`, `InvalidRequest`, `ContextLengthExceeded`, `InvalidConfig`,
///   `UnsupportedPart`, `BadPartBytes`, `PartLimit`: the request itself is refused.
/// - `ResponseTooLarge`: a provider that sent this much once will do it again.
/// - `FirstByteTimeout`: the server took the request and never answered; a plain
///   request would wait for it just the same.
/// - `Cancelled`: the caller stopped.
/// - `RetryAdvised`: as the failure inside it, but never when the provider said not
///   to try again.
///
/// The match names every variant, so a new one has to be decided here.
pub(crate) fn falls_back(error: &ProviderError) -> bool {
    match error {
        ProviderError::Decode { .. }
        | ProviderError::Transport { .. }
        | ProviderError::Timeout(_)
        | ProviderError::Server { .. }
        | ProviderError::Overloaded { .. } => true,
        ProviderError::RateLimited { .. }
        | ProviderError::Auth { .. }
        | ProviderError::InvalidRequest { .. }
        | ProviderError::ContextLengthExceeded { .. }
        | ProviderError::ResponseTooLarge { .. }
        | ProviderError::FirstByteTimeout { .. }
        | ProviderError::InvalidConfig { .. }
        | ProviderError::UnsupportedPart { .. }
        | ProviderError::BadPartBytes { .. }
        | ProviderError::PartLimit { .. }
        | ProviderError::Cancelled => false,
        ProviderError::RetryAdvised { retry, error } => *retry && falls_back(error),
    }
}

/// Whether `error`, met before a stream yielded anything, shows that the endpoint
/// cannot stream this request at all: its body was empty or not an event stream.
/// Such an endpoint (llama.cpp-based servers answer a streamed request with tools by
/// 200 and an empty body) is asked with `complete` from then on.
pub(crate) fn stream_is_unusable(error: &ProviderError) -> bool {
    matches!(error, ProviderError::Decode { .. })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn only_transient_failures_fall_back() {
        assert!(falls_back(&ProviderError::Transport {
            message: "reset".into()
        }));
        assert!(falls_back(&ProviderError::Server {
            status: 502,
            message: "bad gateway".into()
        }));
        assert!(!falls_back(&ProviderError::Cancelled));
        assert!(!falls_back(&ProviderError::Auth {
            status: 401,
            message: "no".into()
        }));
        assert!(!falls_back(&ProviderError::InvalidRequest {
            message: "bad".into()
        }));
    }

    #[test]
    fn the_stream_breaking_falls_back_and_a_refusal_or_limit_does_not() {
        for error in [
            ProviderError::Decode {
                what: "event stream".into(),
                excerpt: String::new(),
            },
            ProviderError::Timeout(Duration::from_secs(1)),
            ProviderError::Overloaded {
                retry_after: None,
                message: "overloaded_error".into(),
            },
        ] {
            assert!(falls_back(&error), "{error}");
        }
        for error in [
            ProviderError::RateLimited {
                retry_after: Some(Duration::from_secs(1)),
                message: "slow down".into(),
            },
            ProviderError::ContextLengthExceeded {
                message: "too long".into(),
            },
            ProviderError::ResponseTooLarge {
                limit: 8,
                what: "the response body",
            },
        ] {
            assert!(!falls_back(&error), "{error}");
        }
    }

    #[test]
    fn only_an_unreadable_body_marks_the_stream_unusable() {
        assert!(stream_is_unusable(&ProviderError::Decode {
            what: "event stream: the body (0 bytes) held no events".into(),
            excerpt: String::new(),
        }));
        assert!(!stream_is_unusable(&ProviderError::Transport {
            message: "stream ended before [DONE]".into()
        }));
        assert!(!stream_is_unusable(&ProviderError::Server {
            status: 500,
            message: "x".into()
        }));
    }
}
