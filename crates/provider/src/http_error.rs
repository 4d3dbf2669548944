//! Turning HTTP statuses and provider error bodies into [`ProviderError`]s.

use std::time::Duration;

use serde::Deserialize;

use crate::error::ProviderError;

/// The longest excerpt of foreign input kept in an error.
const EXCERPT_CHARS: usize = 300;

/// `text` shortened to at most [`EXCERPT_CHARS`] characters (with `…` when cut).
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_owned(),
    }
}

/// The most of a provider's own error message kept (in characters): enough for a
/// whole validation error, bounded against a body of any size.
pub(crate) const MESSAGE_CHARS: usize = 4096;

/// The provider's error `message`, cut to [`MESSAGE_CHARS`] (with `…` when cut).
fn provider_message(message: &str) -> String {
    match message.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", message.get(..cut).unwrap_or(message)),
        None => message.to_owned(),
    }
}

/// The fields of a JSON object built with `json!({...})` (empty for anything else).
pub(crate) fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// The error object both APIs use: `{"error": {"type", "code", "message", ...}}`
/// (Anthropic adds `"type": "error"` at the top level).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireError {
    /// `type` (Anthropic: `overloaded_error`, …; OpenAI: `invalid_request_error`, …).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// `code` (OpenAI: `context_length_exceeded`; OpenRouter: the HTTP status number).
    #[serde(default)]
    pub code: Option<serde_json::Value>,
    /// The message.
    #[serde(default)]
    pub message: Option<String>,
    /// OpenRouter: `metadata.raw` holds the upstream provider's message.
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// Google APIs: typed details, among them `RetryInfo` with its `retryDelay`.
    #[serde(default)]
    pub details: Option<Vec<serde_json::Value>>,
}

impl WireError {
    /// The wait a Google API asks for in a `RetryInfo` detail (`"retryDelay": "30s"`).
    fn retry_delay(&self) -> Option<Duration> {
        self.details.iter().flatten().find_map(|detail| {
            let kind = detail.get("@type")?.as_str()?;
            if !kind.ends_with("google.rpc.RetryInfo") {
                return None;
            }
            let delay = detail.get("retryDelay")?.as_str()?.strip_suffix('s')?;
            let seconds = delay.parse::<f64>().ok()?;
            (seconds.is_finite() && seconds >= 0.0)
                .then(|| Duration::from_secs_f64(seconds.min(86_400.0)))
        })
    }

    fn code_str(&self) -> Option<&str> {
        self.code.as_ref().and_then(serde_json::Value::as_str)
    }

    /// The message, with OpenRouter's upstream detail appended when present.
    fn full_message(&self) -> String {
        let mut message = self.message.clone().unwrap_or_default();
        if let Some(raw) = self
            .metadata
            .as_ref()
            .and_then(|m| m.get("raw"))
            .and_then(serde_json::Value::as_str)
        {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(raw);
        }
        provider_message(&message)
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: WireError,
}

/// The error for an HTTP response with a non-success `status`, its `Retry-After`
/// and its `body`.
pub(crate) fn error_from_status(
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> ProviderError {
    let wire = serde_json::from_str::<ErrorBody>(body)
        .map(|b| b.error)
        .unwrap_or_else(|_| WireError {
            message: Some(if body.trim().is_empty() {
                format!("HTTP {status}")
            } else {
                provider_message(body.trim())
            }),
            ..WireError::default()
        });
    let retry_after = retry_after.or_else(|| wire.retry_delay());
    classify(Some(status), retry_after, &wire)
}

/// The error for an error object, with the HTTP status when there is one (an error
/// event inside a 200 stream has none).
pub(crate) fn classify(
    status: Option<u16>,
    retry_after: Option<Duration>,
    wire: &WireError,
) -> ProviderError {
    let message = wire.full_message();
    let kind = wire.kind.as_deref().unwrap_or("");
    let code = wire.code_str().unwrap_or("");
    let lower = message.to_ascii_lowercase();
    let context_exceeded = code == "context_length_exceeded"
        || kind == "request_too_large"
        // llama.cpp's server (its `code` is the HTTP status number).
        || kind == "exceed_context_size_error"
        || lower.contains("prompt is too long")
        || lower.contains("maximum context length")
        || lower.contains("context length exceeded")
        || lower.contains("context_length_exceeded")
        || lower.contains("context window")
        // Gemini: "The input token count (…) exceeds the maximum number of tokens allowed".
        || lower.contains("exceeds the maximum number of tokens");
    let status = status.or(match kind {
        "authentication_error" => Some(401),
        "permission_error" => Some(403),
        "rate_limit_error" => Some(429),
        "api_error" | "server_error" => Some(500),
        "invalid_request_error" | "not_found_error" => Some(400),
        _ => None,
    });
    match status {
        Some(401 | 403) => ProviderError::Auth {
            status: status.unwrap_or(401),
            message,
        },
        // 503 Service Unavailable is the generic "overloaded, come back later"; like
        // 529 it often carries a `Retry-After`.
        _ if kind == "overloaded_error" || matches!(status, Some(503 | 529)) => {
            ProviderError::Overloaded {
                retry_after,
                message,
            }
        }
        Some(429) if code == "insufficient_quota" || kind == "insufficient_quota" => {
            ProviderError::InvalidRequest { message }
        }
        Some(429) => ProviderError::RateLimited {
            retry_after,
            message,
        },
        _ if context_exceeded => ProviderError::ContextLengthExceeded { message },
        Some(status @ (408 | 500..=599)) => ProviderError::Server { status, message },
        Some(status) => ProviderError::InvalidRequest {
            message: format!("HTTP {status}: {message}"),
        },
        None => ProviderError::Server {
            status: 500,
            message: if kind.is_empty() {
                message
            } else {
                format!("{kind}: {message}")
            },
        },
    }
}

/// A transport-level failure from reqwest.
pub(crate) fn transport_error(error: &reqwest::Error, timeout: Duration) -> ProviderError {
    if error.is_timeout() {
        return ProviderError::Timeout(timeout);
    }
    let what = if error.is_connect() {
        "cannot connect to"
    } else if error.is_body() || error.is_decode() {
        "the response broke off from"
    } else {
        "the request failed to"
    };
    let place = error
        .url()
        .map_or_else(|| "the provider".to_owned(), |url| url.as_str().to_owned());
    // reqwest's chain repeats itself at each level ("error sending request: client
    // error (Connect): tcp connect error: …"): only the innermost cause says what
    // happened.
    let mut root = None;
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        root = Some(cause);
        source = cause.source();
    }
    let message = match root {
        Some(root) => format!("{what} {place}: {root}"),
        None => format!("{what} {place}"),
    };
    ProviderError::Transport { message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_bodies_map_to_their_kinds() {
        let openrouter =
            oxydra_test_support::fixture_text("openai/openrouter_429_rate_limited.json");
        match error_from_status(429, Some(Duration::from_secs(2)), &openrouter) {
            ProviderError::RateLimited {
                retry_after,
                message,
            } => {
                assert_eq!(retry_after, Some(Duration::from_secs(2)));
                assert!(message.starts_with("Provider returned error: google/gemini"));
            }
            other => panic!("{other:?}"),
        }
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(
            error_from_status(529, None, overloaded),
            ProviderError::Overloaded { message, retry_after: None } if message == "Overloaded"
        ));
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 16385 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            error_from_status(400, None, openai_ctx),
            ProviderError::ContextLengthExceeded { .. }
        ));
        let llamacpp_ctx = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/local/llamacpp_400_exceed_context_size.json"
        ));
        assert!(matches!(
            error_from_status(400, None, llamacpp_ctx),
            ProviderError::ContextLengthExceeded { message }
                if message.contains("exceeds the available context size (512 tokens)")
        ));
        let anthropic_ctx = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            error_from_status(400, None, anthropic_ctx),
            ProviderError::ContextLengthExceeded { .. }
        ));
        assert!(matches!(
            error_from_status(400, None, r#"{"error":{"message":"bad tools"}}"#),
            ProviderError::InvalidRequest { message } if message.contains("bad tools")
        ));
        assert!(matches!(
            error_from_status(401, None, "nope"),
            ProviderError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            error_from_status(503, None, "<html>busy</html>"),
            ProviderError::Overloaded { message, retry_after: None } if message == "<html>busy</html>"
        ));
        let gemini = oxydra_test_support::fixture_text("gemini/gemini_429_resource_exhausted.json");
        assert!(matches!(
            error_from_status(429, None, &gemini),
            ProviderError::RateLimited { retry_after: None, message } if message.starts_with("Resource exhausted.")
        ));
        let gemini_retry = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        assert!(matches!(
            error_from_status(429, None, gemini_retry),
            ProviderError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_millis(1500)
        ));
        for hostile in ["-3s", "NaNs", "1e400s", "soon"] {
            let body = gemini_retry.replace("1.5s", hostile);
            assert!(matches!(
                error_from_status(429, None, &body),
                ProviderError::RateLimited {
                    retry_after: None | Some(_),
                    ..
                }
            ));
        }
        let gemini_400 = r#"{"error":{"code":400,"message":"Please ensure that function call turn comes immediately after a user turn or after a function response turn.","status":"INVALID_ARGUMENT"}}"#;
        assert!(matches!(
            error_from_status(400, None, gemini_400),
            ProviderError::InvalidRequest { message } if message.ends_with("after a function response turn.")
        ));
        let gemini_ctx = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
        assert!(matches!(
            error_from_status(400, None, gemini_ctx),
            ProviderError::ContextLengthExceeded { .. }
        ));
        assert!(matches!(
            error_from_status(502, None, "<html>bad gateway</html>"),
            ProviderError::Server { status: 502, .. }
        ));
    }

    #[test]
    fn retry_after_is_kept_for_503_and_529() {
        let wait = Some(Duration::from_secs(7));
        for status in [503, 529] {
            match error_from_status(status, wait, "busy") {
                ProviderError::Overloaded { retry_after, .. } => assert_eq!(retry_after, wait),
                other => panic!("{status}: {other:?}"),
            }
        }
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(
            error_from_status(529, wait, overloaded),
            ProviderError::Overloaded { retry_after, .. } if retry_after == wait
        ));
    }

    #[test]
    fn error_events_without_status_use_the_type() {
        let wire = WireError {
            kind: Some("rate_limit_error".into()),
            message: Some("slow down".into()),
            ..WireError::default()
        };
        assert!(matches!(
            classify(None, None, &wire),
            ProviderError::RateLimited { .. }
        ));
        let wire = WireError {
            kind: Some("api_error".into()),
            ..WireError::default()
        };
        assert!(matches!(
            classify(None, None, &wire),
            ProviderError::Server { status: 500, .. }
        ));
    }

    #[test]
    fn a_long_validation_message_is_kept_whole() {
        let long = "x".repeat(1500);
        let body = format!(r#"{{"error":{{"message":"{long}","type":"invalid_request_error"}}}}"#);
        match error_from_status(400, None, &body) {
            ProviderError::InvalidRequest { message } => assert!(message.ends_with(&long)),
            other => panic!("{other:?}"),
        }
        match error_from_status(422, None, &long) {
            ProviderError::InvalidRequest { message } => assert!(message.ends_with(&long)),
            other => panic!("{other:?}"),
        }
        let huge = "é".repeat(64 * 1024);
        match error_from_status(400, None, &huge) {
            ProviderError::InvalidRequest { message } => {
                assert!(message.chars().count() <= MESSAGE_CHARS + 20);
                assert!(message.ends_with('…'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_refused_connection_says_so_once() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let error = oxydra_http::client()
            .get(format!("http://{addr}/v1/chat"))
            .send()
            .await
            .unwrap_err();
        let message = transport_error(&error, Duration::from_secs(1)).to_string();
        assert!(
            message.starts_with(&format!("cannot connect to http://{addr}/v1/chat")),
            "{message}"
        );
        // At most the system's own "(os error 111)".
        assert!(message.matches("error").count() <= 1, "{message}");
        assert_eq!(message.lines().count(), 1);
    }

    #[test]
    fn excerpts_are_bounded_and_char_safe() {
        let long = "é".repeat(1000);
        let short = excerpt(&long);
        assert_eq!(short.chars().count(), EXCERPT_CHARS + 1);
        assert_eq!(excerpt("ok"), "ok");
    }
}
