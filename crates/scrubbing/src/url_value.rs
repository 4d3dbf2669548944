//! A URL under a secret's label that holds no credential: no token before the host and
//! no random piece in its path or query (`mongodb://localhost:27017/database`), as
//! opposed to a webhook's or a DSN's URL.

use crate::word_shape::is_words;

/// A URL that holds no credential: no `user:password@` or token before the host and
/// no path or query piece that looks random (`mongodb://localhost:27017/database`).
/// A URL with a credential keeps its label's redaction (a webhook's
/// `https://hooks.slack.com/services/T0/B0/Zx9q…`, a DSN's key).
pub(crate) fn is_plain_url(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
    {
        return false;
    }
    // Credentials before the host are the URL pattern's to redact (`://user:[REDACTED]@`,
    // a DSN's key), keeping the host readable; judge the rest.
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let after_userinfo = match rest.get(..authority_len).and_then(|a| a.rfind('@')) {
        Some(at) => rest.get(at + 1..).unwrap_or_default(),
        None => rest,
    };
    !after_userinfo
        .split(['/', '?', '#', '&', '=', '.', ':', ';'])
        .any(looks_random)
}

/// A piece of a URL that looks like a key: 16+ characters of letters and digits (and
/// `-_`), with a letter and a digit, not made of words.
fn looks_random(piece: &str) -> bool {
    piece.len() >= 16
        && piece
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~' | b'%'))
        && piece.bytes().any(|b| b.is_ascii_digit())
        && piece.bytes().any(|b| b.is_ascii_alphabetic())
        && !is_words(piece)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_without_credentials_are_plain() {
        assert!(is_plain_url("mongodb://localhost:27017/database"));
        assert!(is_plain_url("https://api.example.com/v1/users?page=2"));
        // The URL pattern redacts the userinfo alone.
        assert!(is_plain_url("postgres://app:s3cr3t@db/app"));
        assert!(!is_plain_url(
            "https://hooks.slack.com/services/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"
        ));
        assert!(is_plain_url(
            "https://0123456789abcdef0123@o1.ingest.sentry.io/1"
        ));
        assert!(!is_plain_url(
            "https://x.io/hook?token=Zx9qL2mN8vB4kR7tY1wE3"
        ));
    }
}
