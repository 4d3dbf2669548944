//! Whether a value found in prose (`the admin password is X`) reads as a password
//! rather than a word: prose has no key and separator to say where a value is, so the
//! value must look like one itself.

use crate::code_value::{is_call_head, is_scoped_path};
use crate::placeholder::is_placeholder;
use crate::prose_value::is_markup_word;
use crate::value_filter::{MIN_VALUE_CHARS, NON_SECRET_WORDS};

/// True when a value found in prose (`the admin password is X`) looks like a
/// password rather than a word: at least 3 characters with a digit, a symbol or an
/// inner capital, and not a path, URL or placeholder.
pub(crate) fn looks_like_password(value: &str) -> bool {
    let chars = value.chars().count();
    if chars < MIN_VALUE_CHARS
        || is_placeholder(value)
        || value.starts_with(['/', '(', '[', '{', '<', '`'])
        || is_call_head(value)
        || is_scoped_path(value)
        || is_emphasis(value)
        || is_markup_word(value)
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

/// `*valid*`, `**not**`, `_once_`: a word in Markdown's emphasis, prose.
fn is_emphasis(value: &str) -> bool {
    ["**", "*", "__", "_"].iter().any(|mark| {
        value
            .strip_prefix(mark)
            .and_then(|v| v.strip_suffix(mark))
            .is_some_and(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_values_do_not_start_with_brackets() {
        assert!(!looks_like_password("(`SMTP_PASS=x1`);"));
        assert!(!looks_like_password("[x1]"));
    }

    #[test]
    fn prose_values() {
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
            "*valid*",
            "**unique**",
            "Session::open",
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
}
