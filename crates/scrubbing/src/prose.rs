//! Secrets given in prose: `the admin password is Summer2024!`, `the API key for
//! staging was changed to …`, ``set the passphrase to `…` ``, `log in with password …`.
//!
//! After the secret word, up to two `for …` / `of …` phrases (a word, after an article
//! or a possessive, and a quoted name: `for the user "pyne-user"`) and a verb (`is`, `was`,
//! `is now`, `set to`, `changed to`, `to`) must come before the value; after a password
//! word the value may also follow directly. A quoted value is taken as it is; a bare one
//! must look like a password (a digit, a symbol or an inner capital), so `the password
//! is stored in the vault` stays.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::block::line_start;
use crate::key_names::KeyInfo;
use crate::prose_password::looks_like_password;
use crate::redaction::Keyword;
use crate::value_filter::{ValueShape, is_non_secret_value};
use crate::word_shape::is_words;

static PROSE: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(
        r#"\A(?:[ \t]+(?:for|of|on)[ \t]+(?:(?:the|a|an|this|that|your|my|our)[ \t]+)?\S+(?:[ \t]+(?:"[^"\s]+"|'[^'\s]+'|`[^`\s]+`))?){0,2}[ \t]+(?:(?:is|was|are)(?:[ \t]+now)?|(?:has[ \t]+been[ \t]+|was[ \t]+|is[ \t]+)?(?:changed|set|reset)[ \t]+to|to)[ \t]+(?:`(?P<bq>[^`\n]+)`|"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|(?P<uv>\S+))"#,
    )
});

/// A value right after a password word (`WITH PASSWORD 'x'`, `password hunter2`): a
/// quoted value is the text between its quotes, its quotes kept out of the redaction.
static DIRECT: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(r#"\A[ \t]+(?:`(?P<bq>[^`\n]+)`|"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|(?P<uv>\S+))"#)
});

/// `Password for root: …`, `password of the admin account: …`. A word that opens a
/// bracket starts an aside with a label of its own (`the token to use (default:
/// $GITHUB_TOKEN)`, `[env: REGISTRY_PASSWORD=]` in a command's help).
static QUALIFIED: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(
        r#"\A(?:[ \t]+(?:for|of|on|to)(?:[ \t]+[^\s:(\[{]+){1,3}):[ \t]+(?:`(?P<bq>[^`\n]+)`|"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|(?P<lv>\S+))"#,
    )
});

/// Compiles the patterns; an error here makes the built-in patterns unavailable.
pub(crate) fn compile() -> Result<(), String> {
    PROSE.as_ref().map_err(ToString::to_string)?;
    QUALIFIED.as_ref().map_err(ToString::to_string)?;
    DIRECT.as_ref().map(|_| ()).map_err(ToString::to_string)
}

/// The secret after the secret word ending at `key_end`, in prose on the same line.
pub(crate) fn prose_value(
    text: &str,
    key_end: usize,
    line_end: usize,
    info: KeyInfo,
) -> Option<Range<usize>> {
    let rest = text.get(key_end..line_end)?;
    if rest.trim().is_empty() {
        return value_below(text, key_end, line_end, info);
    }
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let qualified = QUALIFIED.as_ref().ok()?.captures(rest);
    if let Some(labelled) = qualified.as_ref().and_then(|c| c.name("lv")) {
        // A colon labels the value: it need not look like a password.
        let value = labelled.as_str();
        let secret = !is_non_secret_value(value, info, ValueShape::Unquoted { next: None });
        return secret.then(|| key_end + labelled.start()..key_end + labelled.end());
    }
    let caps = qualified
        .or_else(|| PROSE.as_ref().ok()?.captures(rest))
        .or_else(|| {
            let direct = info.keyword == Keyword::Password && !info.is_pwd && !info.weak;
            direct
                .then(|| DIRECT.as_ref().ok()?.captures(rest))
                .flatten()
        });
    let Some(caps) = caps else {
        return config_line_value(text, key_end, rest, info);
    };
    // A quoted value is taken as it is (a Gradle `password "…"` is an assignment), a
    // stand-in (`"SOME_PASSWORD"`, `"$password"`) left.
    if let Some(quoted) = caps.name("bq").or(caps.name("dq")).or(caps.name("sq")) {
        let secret = !is_non_secret_value(quoted.as_str(), info, ValueShape::Quoted);
        return secret.then(|| key_end + quoted.start()..key_end + quoted.end());
    }
    let bare = caps.name("uv")?;
    // `.netrc`: `machine host login ada password <value>` takes any value.
    let line = text.get(line_start(text, key_end)..key_end)?.trim_start();
    if line.starts_with("machine ") || line.starts_with("default ") {
        return Some(key_end + bare.start()..key_end + bare.end());
    }
    let value = bare
        .as_str()
        .trim_end_matches(['.', ',', ';', ':', ')', '"', '\'', '`']);
    if info.keyword == Keyword::Token && value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // `if token is Name.Variable:`: a comparison in code reads as prose; what the value
    // filter clears under the label (an enum's member, a word) is no secret here either.
    (looks_like_password(value)
        && !is_non_secret_value(value, info, ValueShape::Unquoted { next: None }))
    .then(|| key_end + bare.start()..key_end + bare.start() + value.len())
}

/// Longest line that is a label alone (`API Secret`, `Mixpanel SECRET Token`).
const MAX_LABEL_LINE: usize = 40;
/// Most words of a label alone on its line.
const MAX_LABEL_WORDS: usize = 4;
/// Shortest value taken alone: from the line below a label, or after a key on a
/// config line.
const MIN_LONE_VALUE: usize = 8;

/// A label alone on its line and the value alone on the next, as a service's dashboard
/// is copied (`API Secret` / `a2813cd4…`): the label's line holds a few words and
/// nothing else, the next line one token that is not words and that the value filter
/// keeps under the label.
fn value_below(text: &str, key_end: usize, line_end: usize, info: KeyInfo) -> Option<Range<usize>> {
    // A weak label alone on its line is a statement (Python's `pass`), not a label.
    if info.weak || info.is_pwd {
        return None;
    }
    let label = text.get(line_start(text, key_end)..line_end)?.trim();
    let words = label.split_whitespace().count();
    if label.len() > MAX_LABEL_LINE
        || words > MAX_LABEL_WORDS
        || !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'\t' | b'_' | b'-'))
    {
        return None;
    }
    let below_start = line_end + 1;
    let below = text.get(below_start..)?;
    let below = below.get(..below.find('\n').unwrap_or(below.len()))?;
    let value = below.trim();
    let lead = below.len() - below.trim_start().len();
    is_lone_value(value, info).then(|| below_start + lead..below_start + lead + value.len())
}

/// A value written alone, as a key is copied: at least [`MIN_LONE_VALUE`] bytes, no
/// code punctuation, not words, and kept by the value filter under the label.
fn is_lone_value(value: &str, info: KeyInfo) -> bool {
    value.len() >= MIN_LONE_VALUE
        && !value.contains(CODE_PUNCTUATION)
        && !is_words(value)
        && !is_non_secret_value(value, info, ValueShape::Unquoted { next: None })
}

/// What a value copied alone never holds and code does: blanks, brackets, quotes,
/// separators.
const CODE_PUNCTUATION: &[char] = &[
    ' ', '\t', '(', ')', '[', ']', '{', '}', '<', '>', '"', '\'', '`', ',', ';',
];

/// A line of a key and one value between blanks, as space-separated config formats
/// write them and as keys are copied (`secret_key …`, `codacyACCESS_KEY …`; not under
/// a weak label, Redis' `masterauth`, whose line may be code): the key
/// starts its line, one token follows it to the line's end, and that token is
/// generated — a letter and a digit, not words, no code punctuation, no `=` or `:` —
/// and kept by the value filter under the label. `Token string` (a Go field) and
/// `password_hash hashed` are words; `token_count 42` has no letter.
fn config_line_value(
    text: &str,
    key_end: usize,
    rest: &str,
    info: KeyInfo,
) -> Option<Range<usize>> {
    if info.weak || info.is_pwd {
        return None;
    }
    let key = text.get(line_start(text, key_end)..key_end)?.trim_start();
    if key.is_empty() || key.contains([' ', '\t']) {
        return None;
    }
    let value = rest.trim();
    let lead = rest.len() - rest.trim_start().len();
    (!value.contains(['=', ':'])
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && is_lone_value(value, info))
    .then(|| key_end + lead..key_end + lead + value.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_names::classify_key;

    fn find(text: &str, key: &str) -> Option<String> {
        let start = text.find(key).unwrap();
        // A key that labels no secret never reaches `prose_value`.
        let info = classify_key(key)?;
        let key_end = start + key.len();
        let line_end = text[key_end..]
            .find('\n')
            .map_or(text.len(), |i| key_end + i);
        prose_value(text, key_end, line_end, info).map(|r| text[r].to_owned())
    }

    #[test]
    fn secrets_in_prose() {
        let f = |t: &str, k: &str| find(t, k).unwrap_or_default();
        assert_eq!(
            f("the admin password is Summer2024!", "password"),
            "Summer2024!"
        );
        assert_eq!(
            f("The root password for db1 is hunter2.", "password"),
            "hunter2"
        );
        assert_eq!(
            f("Set the passphrase to `open sesame`", "passphrase"),
            "open sesame"
        );
        assert_eq!(f("the token has been changed to ab12cd", "token"), "ab12cd");
        assert_eq!(f("log in with password x9k2 then", "password"), "x9k2");
        // A label alone on its line, the value alone below it.
        assert_eq!(
            f("API Secret\na2813cd4502f94a77de470f2d7adc8d7\n", "Secret"),
            "a2813cd4502f94a77de470f2d7adc8d7"
        );
        assert_eq!(f("Password\n  Xq9v!2mLp\n", "Password"), "Xq9v!2mLp");
        for (text, key) in [
            ("## Password\nreset it from the settings page\n", "Password"),
            ("Token\n-----\n", "Token"),
            ("API Secret\nsecretManagerClient\n", "Secret"),
            ("        pass\n        self._write()\n", "pass"),
            (
                "Secret\nManager](https://example.com/secret-manager)\n",
                "Secret",
            ),
            (
                "see the API Secret\na2813cd4502f94a77de470f2d7adc8d7 and more\n",
                "Secret",
            ),
        ] {
            assert_eq!(find(text, key), None, "{text}");
        }
        // A quoted value right after the word: its quotes are not the value's.
        assert_eq!(
            f(
                "CREATE ROLE app WITH LOGIN PASSWORD 'Xq9v!2mLp';",
                "PASSWORD"
            ),
            "Xq9v!2mLp"
        );
        assert_eq!(f("password \"s3cr3t pass\";", "password"), "s3cr3t pass");
        assert_eq!(find("password \"$password\"", "password"), None);
        assert_eq!(find("password \"SOME_PASSWORD\"", "password"), None);
        assert_eq!(f("Password for root: hunter", "Password"), "hunter");
        // A phrase of an article, a word and a quoted name.
        assert_eq!(
            f(
                "Ensure the password for user 'postgres' is 'Adm1n!x'",
                "password"
            ),
            "Adm1n!x"
        );
        assert_eq!(
            f(
                "The default password for the user \"pyne-user\" is \"pyne\".",
                "password"
            ),
            "pyne"
        );
        assert_eq!(
            f(
                "machine api.example.com login ada password hunter",
                "password"
            ),
            "hunter"
        );
    }

    #[test]
    fn prose_without_secrets() {
        for (text, key) in [
            ("The password is stored in the vault.", "password"),
            ("the secret is out", "secret"),
            ("Pass the token to the handler", "token"),
            ("A password is required.", "password"),
            ("password reset link sent", "password"),
            ("the token is 3600", "token"),
            ("sshpass -phunter22 ssh host", "sshpass"),
            ("the password is `None`", "password"),
            ("(`the secret is shadow`).", "secret"),
            // A phrase is a noun, not a clause: `changes` is no verb of ours.
            (
                "used when the password of the network changes to NextPassword.",
                "password",
            ),
        ] {
            assert_eq!(find(text, key), None, "{text}");
        }
    }

    #[test]
    fn a_config_line_of_a_key_and_a_generated_value_is_a_secret() {
        for (text, key, value) in [
            (
                "travis_token 4fQ9zLx2Wm8Kc1Rt",
                "travis_token",
                "4fQ9zLx2Wm8Kc1Rt",
            ),
            ("  secret_key 9fQ2xLm7Tz4Ab", "secret_key", "9fQ2xLm7Tz4Ab"),
            (
                "codacyACCESS_KEY k1l2m3n4o5p6q7r8s9t0\n",
                "codacyACCESS_KEY",
                "k1l2m3n4o5p6q7r8s9t0",
            ),
        ] {
            assert_eq!(find(text, key).as_deref(), Some(value), "{text}");
        }
    }

    #[test]
    fn a_config_line_of_code_or_words_is_no_secret() {
        for (text, key) in [
            // Go fields and types, a count, words, more than one value, code.
            ("    Token string", "Token"),
            ("\tApiKey *string", "ApiKey"),
            ("token_count 42", "token_count"),
            ("password_hash hashed_value_here", "password_hash"),
            ("api_key YOUR_API_KEY_1", "api_key"),
            ("secret_name prod-db-v2 backup", "secret_name"),
            ("x = token abc123def456", "token"),
            ("access_token ${ACCESS_TOKEN_2}", "access_token"),
            ("token_type v2.bearer", "token_type"),
        ] {
            assert_eq!(find(text, key), None, "{text}");
        }
    }
}
