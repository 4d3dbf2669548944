//! The one error type of `oxydra-provider`.

use std::time::Duration;

use thiserror::Error;

/// Why a provider call failed.
#[derive(Debug, Error)]
pub enum ProviderError {
    /// The API key is missing, wrong or lacks permission (HTTP 401/403).
    /// The message starts with whether a key was sent and from which variable.
    #[error("authentication failed ({status}): {message}")]
    Auth {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Too many requests (HTTP 429).
    #[error("rate limited{}: {message}", retry_after.map(|d| format!(" (retry after {} ms)", d.as_millis())).unwrap_or_default())]
    RateLimited {
        /// How long the provider asked us to wait.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The provider is overloaded or unavailable (Anthropic 529, `overloaded_error`,
    /// HTTP 503).
    #[error("provider overloaded{}: {message}", retry_after.map(|d| format!(" (retry after {} ms)", d.as_millis())).unwrap_or_default())]
    Overloaded {
        /// How long the provider asked us to wait (`Retry-After`), if it said.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The prompt does not fit the model's context window.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded {
        /// The provider's message.
        message: String,
    },
    /// The provider refused the request as malformed (HTTP 400 and similar).
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// The provider's message.
        message: String,
    },
    /// A server-side failure (HTTP 5xx).
    #[error("server error ({status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed or broke. The message says what and where in one line
    /// (`cannot connect to http://…: Connection refused (os error 111)`).
    #[error("{message}")]
    Transport {
        /// What failed.
        message: String,
    },
    /// No answer in time.
    #[error("timed out after {} ms", .0.as_millis())]
    Timeout(Duration),
    /// A streamed request got no response (no status, no headers) within the
    /// config's [`first_byte_timeout`](crate::ProviderConfig::first_byte_timeout): the
    /// server took the connection and never answered. Not retried: a hung server
    /// would only make the caller wait that long again.
    #[error(
        "no response from {url} within {} ms of sending the request (first-byte timeout)",
        after.as_millis()
    )]
    FirstByteTimeout {
        /// The request's URL, without its query.
        url: String,
        /// How long the client waited.
        after: Duration,
    },
    /// The response could not be read.
    #[error("could not decode {what}: {excerpt}")]
    Decode {
        /// What was being read.
        what: String,
        /// The offending input, shortened.
        excerpt: String,
    },
    /// The response was larger than the configured cap
    /// ([`ProviderConfig::max_response_bytes`](crate::ProviderConfig::max_response_bytes));
    /// reading stopped there. Neither retried nor a reason to fall back: a provider
    /// that sent this much once will do it again.
    #[error("the response exceeded {limit} {what}; reading stopped")]
    ResponseTooLarge {
        /// The cap that was passed.
        limit: usize,
        /// What it counts: bytes of text, reasoning and tool calls, bytes of one event or of the
        /// body, or tool calls.
        what: &'static str,
    },
    /// A client setting is invalid (an unknown reasoning effort, a thinking budget the
    /// API refuses); found before anything is sent.
    #[error("invalid {what}: {message}")]
    InvalidConfig {
        /// The setting at fault.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// The provider said whether this failure is worth another attempt
    /// (Anthropic's `x-should-retry` header) and its word differs from what the
    /// failure alone would suggest: a 429 not to be retried, or a 409 that may be.
    /// The failure itself is `error`.
    #[error("{error}")]
    RetryAdvised {
        /// Whether the provider said to try again.
        retry: bool,
        /// What failed.
        error: Box<ProviderError>,
    },
    /// A message part (an image, a document) the provider cannot send: a kind it does
    /// not take, a media type it refuses, a URL it cannot fetch, bytes that are not what
    /// they claim. Found before anything is sent; the part is never silently dropped.
    #[error("{provider} cannot send this {part} part: {reason}")]
    UnsupportedPart {
        /// The provider's name (`openai`, `anthropic`, `gemini`, `ollama`, `local`, …).
        provider: String,
        /// The part's kind: `image`, `image_url` or `document`.
        part: &'static str,
        /// Why not.
        reason: String,
    },
    /// A part's bytes are not what it says: its base64 is invalid (a character
    /// outside the alphabet, misplaced padding, a length cut mid-quantum) or its bytes
    /// are not of its declared media type (a "PNG" that is text, a GIF declared as a
    /// PNG). Found before anything is sent.
    #[error("{provider} cannot send part {index} of the request ({part}): {reason}")]
    BadPartBytes {
        /// The provider's name.
        provider: String,
        /// The part's position among the request's parts (every message's, in
        /// order), counting from 1.
        index: usize,
        /// The part's kind: `image`, `image_url` or `document`.
        part: &'static str,
        /// What is wrong with its bytes.
        reason: String,
    },
    /// The request's parts are past the provider's documented limit: an image or
    /// document too large, too many parts, too many bytes of them. Found before
    /// anything is sent.
    #[error("{provider} refuses the request's parts: {message}")]
    PartLimit {
        /// The provider's name.
        provider: String,
        /// Which limit, and by how much.
        message: String,
    },
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl ProviderError {
    /// How long the provider asked to wait before another attempt (`Retry-After` of a
    /// rate limit or overload), if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Overloaded { retry_after, .. } => {
                *retry_after
            }
            Self::RetryAdvised { error, .. } => error.retry_after(),
            _ => None,
        }
    }
}
