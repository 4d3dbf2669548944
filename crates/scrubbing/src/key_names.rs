//! Deciding whether a key name labels a secret, word by word.
//!
//! A key such as `OPENAI_API_KEY`, `x-api-key`, `clientSecret` or `db.password` is split
//! into words at `_`, `-`, `.` and camelCase humps. It labels a secret when one of its
//! words is (or ends with) a secret word — `token`, `secret`, `password`, `passwd`,
//! `passphrase`, `pwd`, `apikey` — or when `api`, `private`, `signing`, `encryption`,
//! `master` or `access` is followed by `key`. A secret word followed by a word that
//! describes metadata (`token_count`, `token_type`, `password_file`, `api_key_env`)
//! does not count, and neither do plurals like `max_tokens`.

use crate::redaction::Keyword;

/// What a key name says about its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyInfo {
    /// Which secret word the key contains.
    pub(crate) keyword: Keyword,
    /// The word was `pwd` (the shell's working directory is a path, not a password).
    pub(crate) is_pwd: bool,
}

/// Words that, following a secret word, make the key describe the secret rather than
/// hold it.
const METADATA_SUFFIXES: &[&str] = &[
    "count",
    "counts",
    "type",
    "types",
    "endpoint",
    "url",
    "uri",
    "limit",
    "limits",
    "len",
    "length",
    "size",
    "file",
    "path",
    "dir",
    "name",
    "names",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "field",
    "header",
    "env",
    "var",
    "policy",
    "min",
    "max",
    "hint",
    "prompt",
    "usage",
    "budget",
    "ref",
    "source",
    "provider",
    "id",
    "index",
    "idx",
    "kind",
    "format",
    "label",
    "manager",
    "store",
    "location",
    "validation",
    "strength",
    "reset",
    "changed",
    "set",
];

const KEY_PREFIXES: &[&str] = &[
    "api",
    "private",
    "signing",
    "encryption",
    "master",
    "access",
];

/// Classifies a key name; `None` when it does not label a secret.
pub(crate) fn classify_key(key: &str) -> Option<KeyInfo> {
    let mut found: Option<KeyInfo> = None;
    let mut previous: Option<&str> = None;
    for word in words(key) {
        // The word after a secret word decides whether it was metadata.
        if let Some(info) = found
            && !METADATA_SUFFIXES
                .iter()
                .any(|m| word.eq_ignore_ascii_case(m))
        {
            return Some(info);
        }
        found = word_keyword(word).or_else(|| {
            let after_prefix =
                previous.is_some_and(|p| KEY_PREFIXES.iter().any(|k| p.eq_ignore_ascii_case(k)));
            (after_prefix && word.eq_ignore_ascii_case("key")).then(|| KeyInfo {
                keyword: if previous.is_some_and(|p| p.eq_ignore_ascii_case("api")) {
                    Keyword::ApiKey
                } else {
                    Keyword::Key
                },
                is_pwd: false,
            })
        });
        previous = Some(word);
    }
    found
}

fn word_keyword(word: &str) -> Option<KeyInfo> {
    let info = |keyword| {
        Some(KeyInfo {
            keyword,
            is_pwd: false,
        })
    };
    if ends_with_ci(word, "pwd") {
        return Some(KeyInfo {
            keyword: Keyword::Password,
            is_pwd: true,
        });
    }
    for stem in ["password", "passwd", "passphrase"] {
        if starts_with_ci(word, stem) || ends_with_ci(word, stem) {
            return info(Keyword::Password);
        }
    }
    if starts_with_ci(word, "secret") || ends_with_ci(word, "secret") {
        return info(Keyword::Secret);
    }
    if ends_with_ci(word, "apikey") || starts_with_ci(word, "apikey") {
        return info(Keyword::ApiKey);
    }
    if ends_with_ci(word, "token") {
        return info(Keyword::Token);
    }
    for stem in [
        "privatekey",
        "signingkey",
        "encryptionkey",
        "masterkey",
        "accesskey",
    ] {
        if ends_with_ci(word, stem) {
            return info(Keyword::Key);
        }
    }
    None
}

fn starts_with_ci(word: &str, stem: &str) -> bool {
    word.get(..stem.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(stem))
}

fn ends_with_ci(word: &str, stem: &str) -> bool {
    word.len()
        .checked_sub(stem.len())
        .and_then(|start| word.get(start..))
        .is_some_and(|tail| tail.eq_ignore_ascii_case(stem))
}

/// Splits a key name into words at non-alphanumeric characters and camelCase humps
/// (`clientSecret` → `client`, `Secret`; `APIKey` → `API`, `Key`).
fn words(key: &str) -> impl Iterator<Item = &str> {
    let bytes = key.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        while bytes.get(pos).is_some_and(|b| !b.is_ascii_alphanumeric()) {
            pos += 1;
        }
        let start = pos;
        if start >= bytes.len() {
            return None;
        }
        let mut end = start + 1;
        while let Some(&b) = bytes.get(end) {
            if !b.is_ascii_alphanumeric() {
                break;
            }
            let prev = bytes.get(end - 1).copied().unwrap_or(b' ');
            let next = bytes.get(end + 1).copied().unwrap_or(b' ');
            let lower_to_upper = prev.is_ascii_lowercase() && b.is_ascii_uppercase();
            let acronym_end =
                prev.is_ascii_uppercase() && b.is_ascii_uppercase() && next.is_ascii_lowercase();
            if lower_to_upper || acronym_end {
                break;
            }
            end += 1;
        }
        pos = end;
        key.get(start..end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyword(key: &str) -> Option<Keyword> {
        classify_key(key).map(|info| info.keyword)
    }

    #[test]
    fn splits_words() {
        assert_eq!(
            words("OPENAI_API_KEY").collect::<Vec<_>>(),
            ["OPENAI", "API", "KEY"]
        );
        assert_eq!(
            words("clientSecret").collect::<Vec<_>>(),
            ["client", "Secret"]
        );
        assert_eq!(words("APIKey").collect::<Vec<_>>(), ["API", "Key"]);
        assert_eq!(
            words("--x-api-key").collect::<Vec<_>>(),
            ["x", "api", "key"]
        );
        assert_eq!(
            words("db.password2").collect::<Vec<_>>(),
            ["db", "password2"]
        );
    }

    #[test]
    fn secret_keys() {
        for (key, expected) in [
            ("api_key", Keyword::ApiKey),
            ("apikey", Keyword::ApiKey),
            ("x-api-key", Keyword::ApiKey),
            ("X-Api-Key", Keyword::ApiKey),
            ("OPENAI_API_KEY", Keyword::ApiKey),
            ("apiKey", Keyword::ApiKey),
            ("client_secret", Keyword::Secret),
            ("secret_key", Keyword::Secret),
            ("SECRETKEY", Keyword::Secret),
            ("aws_secret_access_key", Keyword::Secret),
            ("access_token", Keyword::Token),
            ("accessToken", Keyword::Token),
            ("GITHUB_TOKEN", Keyword::Token),
            ("authtoken", Keyword::Token),
            ("password", Keyword::Password),
            ("DB_PASSWORD", Keyword::Password),
            ("passwd", Keyword::Password),
            ("pwd", Keyword::Password),
            ("private_key", Keyword::Key),
            ("signingKey", Keyword::Key),
        ] {
            assert_eq!(keyword(key), Some(expected), "{key}");
        }
    }

    #[test]
    fn non_secret_keys() {
        for key in [
            "max_tokens",
            "token_count",
            "tokens",
            "tokenizer",
            "token_type",
            "password_file",
            "API_KEY_ENV",
            "key",
            "monkey",
            "primary_key",
            "input",
        ] {
            assert_eq!(keyword(key), None, "{key}");
        }
    }

    #[test]
    fn pwd_is_marked() {
        assert_eq!(
            classify_key("OLDPWD"),
            Some(KeyInfo {
                keyword: Keyword::Password,
                is_pwd: true
            })
        );
    }
}
