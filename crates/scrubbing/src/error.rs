//! The crate's one error type.

use thiserror::Error;

/// Why a [`Scrubber`](crate::Scrubber) could not be built.
#[derive(Debug, Error)]
pub enum ScrubError {
    /// A user pattern is not a valid regular expression.
    #[error("scrub pattern `{name}` is not a valid regex: {source}")]
    InvalidPattern {
        /// The name the caller gave the pattern.
        name: String,
        /// What the regex parser or compiler reported.
        #[source]
        source: regex::Error,
    },
    /// A user pattern matches the empty string, so it would redact nothing visible
    /// and could match at every position.
    #[error("scrub pattern `{name}` matches the empty string")]
    MatchesEmpty {
        /// The name the caller gave the pattern.
        name: String,
    },
    /// A user pattern was given an empty name (the name is the redaction kind).
    #[error("scrub pattern `{pattern}` has an empty name")]
    EmptyName {
        /// The regex source of the unnamed pattern.
        pattern: String,
    },
    /// The user patterns are valid one by one but too large to compile as a set.
    #[error("the {count} user scrub patterns could not be compiled together: {source}")]
    PatternSet {
        /// How many user patterns there were.
        count: usize,
        /// What the regex compiler reported.
        #[source]
        source: regex::Error,
    },
    /// A known secret's value is too short to be told from ordinary text.
    #[error(
        "known secret `{name}` is {length} bytes long; a secret searched by value needs at least {minimum}"
    )]
    KnownSecretTooShort {
        /// The name the caller gave the secret (never its value).
        name: String,
        /// The value's length in bytes.
        length: usize,
        /// The shortest value accepted.
        minimum: usize,
    },
    /// The known secrets could not be compiled into one search (too many or too long).
    #[error("the known secrets could not be compiled into one search: {message}")]
    KnownSecrets {
        /// What the automaton builder reported.
        message: String,
    },
    /// The built-in patterns failed to compile (a bug in this crate; the default
    /// scrubber then withholds all text rather than let a secret through).
    #[error("the built-in scrub patterns failed to compile: {message}")]
    Builtin {
        /// The compiler's message.
        message: String,
    },
}
