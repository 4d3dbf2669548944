//! Deciding whether a labelled value is obviously not a secret.
//!
//! A key like `password` or `token` only tells us the value *might* be secret. These
//! checks let through values that cannot be: empty or very short values, booleans and
//! nulls, masks (`***`), template placeholders (`$VAR`, `${VAR}`, `{{ var }}`,
//! `<your-key>`), text that was already redacted, numbers under a `*token*` key
//! (`token_count: 42`), a path under `pwd`, and — for unquoted values — code: type
//! names (`password: String`), calls and generics (`token = get_token()`,
//! `Option<String>`) and field paths (`self.config.token`).

use crate::entropy::is_words;
use crate::key_names::KeyInfo;
use crate::redaction::Keyword;

/// Values shorter than this (in characters) are never redacted as labelled values.
pub(crate) const MIN_VALUE_CHARS: usize = 3;

const NON_SECRET_WORDS: &[&str] = &[
    "null",
    "nil",
    "none",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "n/a",
    "redacted",
    "required",
    "optional",
    "empty",
    "unset",
    "hidden",
    "masked",
];

const TYPE_NAMES: &[&str] = &[
    "str",
    "string",
    "bool",
    "boolean",
    "int",
    "integer",
    "float",
    "number",
    "bytes",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "f32",
    "f64",
    "impl",
    "dyn",
    "mut",
    "self",
    "option",
    "vec",
    "any",
    "object",
    "pathbuf",
    "path",
    "secretstring",
    "secret",
    "token",
    "uuid",
    "char",
    "list",
    "dict",
    "text",
    "varchar",
];

/// Where a labelled value sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueShape {
    /// Inside quotes.
    Quoted,
    /// Bare; `next` is the character right after it.
    Unquoted { next: Option<char> },
}

/// True when a value labelled by `key` is obviously not a secret.
pub(crate) fn is_non_secret_value(value: &str, key: KeyInfo, shape: ValueShape) -> bool {
    if value.chars().count() < MIN_VALUE_CHARS || is_placeholder(value) {
        return true;
    }
    if NON_SECRET_WORDS
        .iter()
        .any(|w| value.eq_ignore_ascii_case(w))
    {
        return true;
    }
    if key.keyword == Keyword::Token && value.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return true;
    }
    if key.is_pwd && (value.starts_with('/') || value.starts_with('~')) {
        return true;
    }
    if key.weak && is_word_or_path(value) {
        return true;
    }
    match shape {
        ValueShape::Quoted => false,
        ValueShape::Unquoted { next } => {
            matches!(next, Some('(' | '<' | '['))
                || TYPE_NAMES.iter().any(|t| value.eq_ignore_ascii_case(t))
                || is_field_path(value)
        }
    }
}

/// A weak label's value that is a word, identifier or path rather than data: no digit
/// and made of words (`basic`, `BASIC`, `TestParseYAMLBlock`, `oauth-proxy`, not
/// `dXNlcjpwYXNz`); or a path (`/etc/creds.json`, `~/.netrc`).
fn is_word_or_path(value: &str) -> bool {
    let wordy = !value.bytes().any(|b| b.is_ascii_digit())
        && value
            .split(['.', ':', '/'])
            .all(|part| part.is_empty() || is_words(part));
    wordy
        || ["/", "~/", "./", "../"]
            .iter()
            .any(|p| value.starts_with(p))
}

/// True when a bare value is a lowercase word followed by more words: prose such as
/// a commit subject `token: fix the refresh` rather than `token: a1b2c3`.
pub(crate) fn is_prose(value: &str, rest: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_lowercase())
        && rest
            .strip_prefix(' ')
            .is_some_and(|r| r.bytes().next().is_some_and(|b| b.is_ascii_lowercase()))
}

/// True when a value found in prose (`the admin password is X`) looks like a
/// password rather than a word: at least 3 characters with a digit, a symbol or an
/// inner capital, and not a path, URL or placeholder.
pub(crate) fn looks_like_password(value: &str) -> bool {
    let chars = value.chars().count();
    if chars < MIN_VALUE_CHARS
        || is_placeholder(value)
        || value.starts_with(['/', '(', '[', '{', '<', '`'])
    {
        return false;
    }
    if value.contains("://")
        || NON_SECRET_WORDS
            .iter()
            .any(|w| value.eq_ignore_ascii_case(w))
    {
        return false;
    }
    let digits = value.bytes().filter(u8::is_ascii_digit).count();
    if digits == value.len() {
        return digits >= 4;
    }
    let symbol = value
        .bytes()
        .any(|b| !b.is_ascii_alphanumeric() && !matches!(b, b'-' | b'\'' | b'.' | b','));
    let inner_capital = value.bytes().skip(1).any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_lowercase());
    digits > 0 || symbol || inner_capital
}

/// True for values that stand for a secret without being one: already redacted
/// text, masks and template placeholders. Used for every kind of labelled secret.
pub(crate) fn is_placeholder(value: &str) -> bool {
    let value = value.trim();
    let mut chars = value.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    if value.starts_with("[REDACTED") {
        return true;
    }
    // A mask: one character repeated (`***`, `xxxx`, `••••`).
    if chars.all(|c| c == first) && value.chars().count() >= 3 {
        return matches!(first, '*' | 'x' | 'X' | '•' | '.' | '#' | '-' | '?');
    }
    // An elided example: `sk-...`, `ghp_…`, `…`.
    let elided = value
        .strip_suffix("...")
        .or_else(|| value.strip_suffix('…'))
        .is_some_and(|head| head.len() <= 10);
    elided
        || is_variable_reference(value)
        || (value.starts_with("{{") && value.ends_with("}}"))
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('%') && value.ends_with('%') && value.len() > 2)
}

/// `$VAR`, `${VAR}`, `${VAR:-default}`, `$(command)`.
fn is_variable_reference(value: &str) -> bool {
    let Some(rest) = value.strip_prefix('$') else {
        return false;
    };
    if rest.starts_with('{') && rest.ends_with('}') || rest.starts_with('(') && rest.ends_with(')')
    {
        return true;
    }
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `self.config.token`, `settings.api_key`: two or more identifiers joined by dots,
/// each starting with a lowercase letter or underscore.
fn is_field_path(value: &str) -> bool {
    let mut parts = 0;
    for part in value.split('.') {
        let mut bytes = part.bytes();
        let starts_ok = bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
        if !starts_ok || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: KeyInfo = KeyInfo {
        keyword: Keyword::Token,
        is_pwd: false,
        weak: false,
    };
    const PASSWORD: KeyInfo = KeyInfo {
        keyword: Keyword::Password,
        is_pwd: false,
        weak: false,
    };
    const PWD: KeyInfo = KeyInfo {
        keyword: Keyword::Password,
        is_pwd: true,
        weak: false,
    };
    const BARE: ValueShape = ValueShape::Unquoted { next: None };

    #[test]
    fn obvious_non_secrets() {
        for value in [
            "",
            "ab",
            "null",
            "None",
            "true",
            "FALSE",
            "***",
            "xxxxxxxx",
            "$TOKEN",
            "${GITHUB_TOKEN}",
            "$(cat token.txt)",
            "{{ secrets.token }}",
            "<your-token>",
            "[REDACTED]",
            "%API_TOKEN%",
            "sk-...",
            "ghp_…",
            "…",
        ] {
            assert!(
                is_non_secret_value(value, TOKEN, ValueShape::Quoted),
                "{value:?}"
            );
        }
        assert!(is_non_secret_value("1024", TOKEN, BARE));
        assert!(is_non_secret_value("/home/user", PWD, BARE));
        assert!(is_non_secret_value("String", PASSWORD, BARE));
        assert!(is_non_secret_value("self.config.password", PASSWORD, BARE));
        assert!(is_non_secret_value(
            "get_password",
            PASSWORD,
            ValueShape::Unquoted { next: Some('(') }
        ));
    }

    #[test]
    fn weak_labels_need_data() {
        let weak = KeyInfo {
            weak: true,
            ..PASSWORD
        };
        for value in [
            "basic",
            "oauth-proxy",
            "/etc/app/creds.json",
            "~/.netrc",
            "TestParseConfig",
            "TestScrubYAMLBlock",
            "include",
        ] {
            assert!(is_non_secret_value(value, weak, BARE), "{value}");
        }
        for value in ["dXNlcjpwYXNz", "Summer2024!", "a1b2c3"] {
            assert!(!is_non_secret_value(value, weak, BARE), "{value}");
        }
    }

    #[test]
    fn prose_values_do_not_start_with_brackets() {
        assert!(!looks_like_password("(`SMTP_PASS=x1`);"));
        assert!(!looks_like_password("[x1]"));
    }

    #[test]
    fn prose_values() {
        assert!(is_prose("fix", " the refresh"));
        assert!(!is_prose("fix", ""));
        assert!(!is_prose("a1b2", " the"));
        for value in [
            "Summer2024!",
            "hunter2",
            "x9k2",
            "P@ss",
            "correctHorse",
            "123456",
        ] {
            assert!(looks_like_password(value), "{value}");
        }
        for value in [
            "stored",
            "invalid",
            "required",
            "12",
            "Vault",
            "/etc/passwd",
            "https://x.io",
        ] {
            assert!(!looks_like_password(value), "{value}");
        }
    }

    #[test]
    fn real_values_are_secret() {
        assert!(!is_non_secret_value("hunter2", PASSWORD, BARE));
        assert!(!is_non_secret_value("123456", PASSWORD, BARE));
        assert!(!is_non_secret_value("/abc", PASSWORD, BARE));
        assert!(!is_non_secret_value("abc", TOKEN, ValueShape::Quoted));
        assert!(!is_non_secret_value("String", PASSWORD, ValueShape::Quoted));
        assert!(!is_non_secret_value("$2b$12$abcdefghijk", PASSWORD, BARE));
        assert!(!is_non_secret_value("pässwört", PASSWORD, BARE));
    }
}
