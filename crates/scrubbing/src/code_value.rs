//! A bare labelled value that is code rather than data: a constant's or variable's
//! name, a field path, a reference by a sigil, a call, a language keyword before a
//! call, or a list of validation rules (`password => 'required|min:8'`). The value
//! filter asks these before a value under a secret's label is redacted.

use crate::word_shape::{is_word_or_path, is_words};

/// `ADMIN_PASSWORD_FROM_VAULT`, `GITHUB_TOKEN_READONLY`: a bare constant's name, two
/// or more capitalised words joined by `_` (letters only).
pub(crate) fn is_constant_name(value: &str) -> bool {
    value.contains('_')
        && value.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        && value.split('_').filter(|p| !p.is_empty()).count() >= 2
        && is_words(&value.to_ascii_lowercase())
}

/// `required|string|confirmed`, `required|min:8`: words joined by `|`, each maybe
/// with a `:` and a number.
pub(crate) fn is_rule_list(value: &str) -> bool {
    value.contains('|')
        && value.split('|').all(|rule| {
            let (name, arg) = rule.split_once(':').unwrap_or((rule, "0"));
            !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                && !arg.is_empty()
                && arg.bytes().all(|b| b.is_ascii_digit() || b == b',')
        })
}

/// Where a secret is kept rather than the secret: a path (`/` in it) whose pieces
/// between `/`, `:`, `#`, `.`, `-`, `_` and `@` are all words or numbers, one of them
/// longer than four letters (`vault:secret/data/ci#token`, `file:/run/secrets/x`).
pub(crate) fn is_secret_reference(value: &str) -> bool {
    let pieces = || {
        value
            .split(['/', ':', '#', '.', '-', '_', '@'])
            .filter(|p| !p.is_empty())
    };
    value.contains('/')
        && pieces().all(|p| p.bytes().all(|b| b.is_ascii_digit()) || is_words(p))
        && pieces().any(|p| p.len() > 4 && p.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// A bare value that refers to something by a sigil: a variable or field (`@password`,
/// `*password`, `&cfg.password`) or a YAML tag whose value follows (`!vault |`,
/// `!Ref DbPassword`). What follows the sigil is a name made of words, not data.
pub(crate) fn is_sigil_reference(value: &str) -> bool {
    value
        .strip_prefix(['@', '*', '&', '!'])
        .is_some_and(|name| !name.is_empty() && (is_field_path(name) || is_word_or_path(name)))
}

/// `tokenFromEnv`, `apiKeyValue`: a bare camelCase identifier of two or more words,
/// letters only, starting in lower case — a variable. A generated key or token is
/// never made of words; a password may be, so the caller leaves passwords out.
pub(crate) fn is_camel_identifier(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.iter().all(u8::is_ascii_alphabetic)
        && bytes.iter().any(u8::is_ascii_uppercase)
        && is_words(value)
}

/// A bare value that is a language keyword before a call: `await GetTokenAsync()`,
/// `new Credentials(…)`, `yield fetch(…)` — a lowercase word, a blank, then a name and
/// its opening bracket.
pub(crate) fn is_keyword_before_call(value: &str, rest: &str) -> bool {
    if !value.bytes().all(|b| b.is_ascii_lowercase()) {
        return false;
    }
    let Some(call) = rest.strip_prefix(' ') else {
        return false;
    };
    let name_len = call
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
        .count();
    name_len > 0
        && call
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && call.as_bytes().get(name_len) == Some(&b'(')
}

/// `VARCHAR(255`, `getToken(`: a name of letters followed by an opening bracket — a call or a
/// type with its size, not a password.
pub(crate) fn is_call_head(value: &str) -> bool {
    // Letters only: `pa55(word` is a password with a bracket, not a call.
    let name_len = value
        .bytes()
        .take_while(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.'))
        .count();
    name_len >= 2 && value.as_bytes().get(name_len) == Some(&b'(')
}

/// `self.config.token`, `settings.api_key`, `process.env.API_KEY`: two or more
/// identifiers joined by dots, the first starting with a lowercase letter or
/// underscore, each made of words
/// (`pat14.e33f14eb…`, a dotted token, is not a path).
pub(crate) fn is_field_path(value: &str) -> bool {
    let mut parts = 0;
    for part in value.split('.') {
        let mut bytes = part.bytes();
        // The first part is an object or module; a later one may be a constant
        // (`settings.GOOGLE_CLIENT_SECRET`, `process.env.API_KEY`).
        let starts_ok = bytes.next().is_some_and(|b| {
            b.is_ascii_lowercase() || b == b'_' || (parts > 0 && b.is_ascii_uppercase())
        });
        if !starts_ok
            || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || part.len() > MAX_FIELD_LEN
            || !is_words(part)
        {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// Longest part of a field path (`self.config.token`).
const MAX_FIELD_LEN: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_references_and_calls_are_code() {
        assert!(is_constant_name("ADMIN_PASSWORD_FROM_VAULT"));
        assert!(!is_constant_name("PASSWORD"));
        assert!(!is_constant_name("AKIA_ZX9QL2MN8VB4KP7W"));
        assert!(is_rule_list("required|min:8"));
        assert!(is_rule_list("required|string|confirmed"));
        assert!(!is_rule_list("p4ss|w0rd"));
        assert!(is_sigil_reference("@password"));
        assert!(is_sigil_reference("!Ref"));
        assert!(is_sigil_reference("&cfg.password"));
        assert!(!is_sigil_reference("@dm1n!2024"));
        assert!(is_camel_identifier("tokenFromEnv"));
        assert!(!is_camel_identifier("hunter"));
        assert!(!is_camel_identifier("zX9qLmNvBkPwRtY"));
        assert!(is_keyword_before_call("await", " GetTokenAsync();"));
        assert!(is_keyword_before_call("new", " auth.Credentials(user)"));
        assert!(!is_keyword_before_call("await", " the call"));
        assert!(!is_keyword_before_call("S3cret", " Get()"));
        assert!(is_call_head("VARCHAR(255"));
        assert!(!is_call_head("(abc"));
        assert!(!is_call_head("pa55(word"), "a digit-led name is no call");
        assert!(is_call_head("Microsoft.KeyVault(SecretUri=x)"));
        assert!(is_secret_reference("vault:secret/data/ci#token"));
        assert!(is_secret_reference(
            "projects/my-proj/secrets/api-key/versions/latest"
        ));
        assert!(!is_secret_reference("ab12/cd34"));
        assert!(!is_secret_reference(
            "T0DCUJB1Q/B0DD08H5G/bJtrpFi1fO1JMCcwLx8uZyAg"
        ));
        assert!(is_field_path("settings.GOOGLE_CLIENT_SECRET"));
        assert!(is_field_path("process.env.API_KEY"));
        assert!(!is_field_path("GOOGLE.client"));
        assert!(!is_field_path("pat14.e33f14eb9a7c2d81f0"));
    }
}
