//! Credential scrubbing for Oxydra.
//!
//! `oxydra-scrubbing` owns [`scrub`]: every tool output passes through it before it
//! reaches the model or the database. It redacts
//!
//! - **labelled secrets** — the value of any key whose name says it is secret
//!   (`api_key: "…"`, `password=…`, `"access_token": "…"`, `export GITHUB_TOKEN=…`,
//!   `SMTP_PASS=…`, `X-Api-Key: …`, `--password …`), keeping the key and any quotes;
//!   also on the lines below the key (YAML), in markup (`<password>…</password>`),
//!   in name/value pairs (`{"name": "db_password", "value": "…"}`), in cookies and in
//!   prose (`the admin password is …`);
//! - **`Authorization` headers** (`Authorization: Bearer [REDACTED]`);
//! - **command-line passwords** (`mysql -p…`, `sshpass -p …`, `redis-cli -a …`);
//! - **private-key blocks** (`-----BEGIN … PRIVATE KEY-----` … `-----END …-----`);
//! - **credentials in URLs** (`postgres://user:[REDACTED]@host`, `?key=…`, a Sentry
//!   DSN's key) and `curl -u user:pass`;
//! - **well-known key formats** wherever they appear: AWS, GitHub, GitLab, Slack,
//!   OpenAI, Anthropic, Google, Stripe, npm, Hugging Face and SendGrid keys and JWTs,
//!   also when wrapped over two lines;
//! - **unlabelled high-entropy strings** (`[REDACTED:high-entropy]`), redacted whole
//!   over `.`, `~`, `%` and inner `=`, including base64 or hex of `user:password` or
//!   of text holding a secret, while leaving hashes, UUIDs, paths, identifiers, slugs,
//!   SSH public keys and base64-encoded prose alone;
//! - **disguised secrets**: text with zero-width characters, Unicode blanks,
//!   fullwidth forms or homoglyphs is folded to ASCII and scanned again.
//!
//! Names, placeholders and masks where a value is expected (`api-key`,
//! `YOUR_PASSWORD`, `xxxx`), URLs without credentials and code stay.
//!
//! A [`Scrubber`] adds user patterns and can turn entropy detection off. It depends on
//! no other Oxydra crate.
//!
//! ```
//! use std::borrow::Cow;
//! use oxydra_scrubbing::{scrub, RedactionKind, Keyword};
//!
//! let out = scrub(r#"{"user": "ada", "password": "correct horse battery"}"#);
//! assert_eq!(out.text, r#"{"user": "ada", "password": "[REDACTED]"}"#);
//! assert_eq!(out.redactions[0].kind, RedactionKind::Keyword(Keyword::Password));
//! assert_eq!(out.redactions[0].kind.as_str(), "password");
//!
//! // Clean text is borrowed, not copied.
//! let clean = scrub("cargo test: 42 passed");
//! assert!(clean.is_clean());
//! assert!(matches!(clean.text, Cow::Borrowed(_)));
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod block;
mod encoded;
mod entropy;
mod error;
mod fold;
mod key_names;
mod keyword_patterns;
mod labelled;
mod lazy_regex;
mod markup;
mod merge;
mod pem;
mod placeholder;
mod prose;
mod redaction;
mod rule_data;
mod rule_scan;
mod scrubber;
mod separator;
mod value_filter;
mod value_syntax;
mod whole_value;
mod word_shape;
mod wrapped;

pub use entropy::{ENTROPY_THRESHOLD, MAX_CANDIDATE_LEN, MIN_CANDIDATE_LEN, shannon_entropy};
pub use error::ScrubError;
pub use redaction::{KeyProvider, Keyword, Redaction, RedactionKind, Scrubbed};
pub use scrubber::Scrubber;

/// Scrubs `text` with the default [`Scrubber`] (all built-in patterns plus entropy
/// detection). Returns the input borrowed when nothing was found.
pub fn scrub(text: &str) -> Scrubbed<'_> {
    Scrubber::DEFAULT.scrub(text)
}
