//! The *name* of a secret where its value is expected: `api-key`, `PASSWORD`,
//! `ACCESS_TOKEN`, `spring.datasource.password`, `EXPORTER_SECRET`, and a value that
//! restates its kind with stand-in words (`testtoken123`, `invalid-secret`).

use crate::placeholder::{PLACEHOLDER_WORDS, identifier_words};

/// Words a setting's *name* is made of (`api-key`, `PASSWORD`, `ACCESS_TOKEN`): a value
/// made only of these names a secret instead of holding one.
const NAME_WORDS: &[&str] = &[
    "api",
    "key",
    "keys",
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pass",
    "pwd",
    "passphrase",
    "access",
    "auth",
    "client",
    "private",
    "bearer",
    "credential",
    "credentials",
    "value",
    "my",
    "user",
    "username",
    "the",
    "app",
    "db",
    "admin",
    "id",
    "variable",
    "var",
    "env",
    "new",
    "old",
];

/// A value that is the *name* of a secret, not a secret: `api-key`, `PASSWORD`,
/// `ACCESS_TOKEN`, `secretKey` (a form field, an environment variable's name, a key
/// in a secret store, a Kubernetes secret's `secret-volume`). Every word is a
/// [`NAME_WORDS`] word, or the value is kebab-case words; and one is a secret word.
pub(crate) fn is_name_not_value(value: &str) -> bool {
    let value = value.trim_matches(['<', '>', '[', ']', '{', '}', '(', ')']);
    let Some(words) = identifier_words(value) else {
        return false;
    };
    // A resource's name in kebab case (`secret-volume`, `db-credentials`): lowercase
    // words joined by `-`, one of them a secret word, as Kubernetes names a secret.
    let kebab_name = value.contains('-')
        && value.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        && words.len() >= 2;
    !words.is_empty()
        && (kebab_name
            || is_property_name(value)
            || words.iter().all(|w| NAME_WORDS.contains(&w.as_str())))
        && words.iter().any(|w| is_secret_word(w))
}

/// `spring.datasource.password`, `javax.net.ssl.trustStorePassword`: a property's
/// name — two or more pieces of letters joined by `.`, the first in lower case (a
/// package or a namespace), as Java properties, Spring settings and i18n keys are
/// named. ([`identifier_words`] has already refused digits and other signs.)
fn is_property_name(value: &str) -> bool {
    let mut pieces = value.split('.');
    let first_lower = pieces
        .next()
        .is_some_and(|first| !first.is_empty() && first.bytes().all(|b| b.is_ascii_lowercase()));
    let mut count = 1;
    for piece in pieces {
        if piece.is_empty() || !piece.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
            return false;
        }
        count += 1;
    }
    first_lower && count >= 2
}

/// A word that names a secret (`key`, `token`, `password`, …), in lower case.
fn is_secret_word(word: &str) -> bool {
    matches!(
        word,
        "key"
            | "keys"
            | "token"
            | "tokens"
            | "secret"
            | "secrets"
            | "password"
            | "passwd"
            | "pwd"
            | "passphrase"
            | "credential"
            | "credentials"
    )
}

/// `CLIENT_TRAFFIC_SECRET_0`, `EXPORTER_SECRET`: a constant's or an environment
/// variable's name — pieces between `_` each all capitals or all digits, one of them a
/// secret word. It names a secret where its value is expected.
pub(crate) fn is_secret_constant_name(value: &str) -> bool {
    let pieces = || value.split('_').filter(|p| !p.is_empty());
    value.contains('_')
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && pieces().all(|p| {
            p.bytes().all(|b| b.is_ascii_digit()) || p.bytes().all(|b| b.is_ascii_uppercase())
        })
        && pieces().any(|p| is_secret_word(&p.to_ascii_lowercase()))
}

/// Words that say a value stands in for a real one, beside [`PLACEHOLDER_WORDS`].
const STAND_IN_WORDS: &[&str] = &[
    "test", "tests", "testing", "demo", "mock", "invalid", "valid", "expired", "wrong", "bad",
    "some", "not", "real", "this", "is", "a",
];

/// Most digits a stand-in's number has (`123`, `2024`).
const MAX_STAND_IN_DIGITS: usize = 4;

/// Longest value read as a restated name: a stand-in is a few words, and a bound keeps
/// the cut into words (quadratic in a run's length) cheap on a value of any length.
const MAX_RESTATED_LEN: usize = 64;

/// `testtoken123`, `test_api_key_123`, `mytoken2`, `invalid-secret`: a value that
/// restates its kind — only the words of a secret's name ([`NAME_WORDS`]),
/// placeholder and stand-in words, written with or without separators, one of them a
/// secret's word, and at most a short number. A generated value is none of these
/// words; a person's password may be (`password123`), so only a generated value's
/// label asks.
pub(crate) fn is_restated_name(value: &str) -> bool {
    if value.len() > MAX_RESTATED_LEN {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if !lower
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return false;
    }
    let digits = lower.bytes().filter(u8::is_ascii_digit).count();
    let mut restates = false;
    let all_words = lower
        .split(|c: char| !c.is_ascii_lowercase())
        .filter(|run| !run.is_empty())
        .all(|run| {
            segment(run).is_some_and(|words| {
                restates |= words.iter().any(|w| is_secret_word(w));
                true
            })
        });
    digits <= MAX_STAND_IN_DIGITS && all_words && restates
}

/// `run` cut into words of [`NAME_WORDS`], [`PLACEHOLDER_WORDS`] and
/// [`STAND_IN_WORDS`] (`testtoken` → `test`, `token`), or `None` when it cannot be.
fn segment(run: &str) -> Option<Vec<&str>> {
    let known = |word: &str| {
        NAME_WORDS.contains(&word)
            || PLACEHOLDER_WORDS.contains(&word)
            || STAND_IN_WORDS.contains(&word)
    };
    // `cut[i]`: where the last word of a cut of `run[..i]` starts.
    let mut cut: Vec<Option<usize>> = vec![None; run.len() + 1];
    if let Some(first) = cut.first_mut() {
        *first = Some(0);
    }
    for end in 1..=run.len() {
        let start = (0..end).find(|&start| {
            cut.get(start).is_some_and(Option::is_some) && run.get(start..end).is_some_and(known)
        });
        if let Some(slot) = cut.get_mut(end) {
            *slot = start;
        }
    }
    let mut words = Vec::new();
    let mut end = run.len();
    while end > 0 {
        let start = (*cut.get(end)?)?;
        words.push(run.get(start..end)?);
        end = start;
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_restating_their_kind() {
        for value in [
            "testtoken123",
            "test_api_key_123",
            "mytoken2",
            "invalid-secret",
            "TEST_TOKEN",
            "fakeapikey",
        ] {
            assert!(is_restated_name(value), "{value}");
        }
        for value in [
            "testtoken12345",
            "test123",
            "tokenizer",
            "Zx9qL2mN8vB4",
            "token+1",
            "secretsauce",
            "",
            &"testtoken".repeat(8),
        ] {
            assert!(!is_restated_name(value), "{value}");
        }
    }

    #[test]
    fn names_of_secrets() {
        for value in [
            "api-key",
            "PASSWORD",
            "ACCESS_TOKEN",
            "secretKey",
            "password>",
            "spring.datasource.password",
            "javax.net.ssl.trustStorePassword",
            "app.auth.token",
        ] {
            assert!(is_name_not_value(value), "{value}");
        }
        // A property's name is lower case first and holds a secret word; words
        // joined by dots without one, or with a digit, may be a passphrase.
        for value in [
            "Spring.Datasource.Password",
            "correct.horse.battery",
            "my.pass.word1",
        ] {
            assert!(!is_name_not_value(value), "{value}");
        }
        for value in ["hunter2", "correcthorse", "Summer2024!"] {
            assert!(!is_name_not_value(value), "{value}");
        }
    }
}
