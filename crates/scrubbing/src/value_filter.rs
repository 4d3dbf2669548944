//! Deciding whether a labelled value is obviously not a secret.
//!
//! A key like `password` or `token` only tells us the value *might* be secret. These
//! checks let through values that cannot be: empty or very short values, booleans and
//! nulls, masks (`***`), template placeholders (`$VAR`, `${VAR}`, `{{ var }}`,
//! `<your-key>`), text that was already redacted, numbers under a `*token*` key
//! (`token_count: 42`), a path under `pwd`, and — for unquoted values — code: type
//! names (`password: String`), calls and generics (`token = get_token()`,
//! `Option<String>`) and field paths (`self.config.token`).

use crate::code_value::{
    is_arn, is_arrow_access, is_call_head, is_camel_identifier, is_constant_name, is_field_path,
    is_hex_literal, is_rule_list, is_scheme_constant, is_scoped_path, is_secret_reference,
    is_sigil_reference, is_type_name, is_word_name,
};
use crate::key_names::KeyInfo;
use crate::keyspace::keyspace_bits;
use crate::placeholder::{is_placeholder, is_placeholder_words};
use crate::plain_data::{is_plain_data, is_version_range};
use crate::prose_value::{is_markup_word, is_sentence_start};
use crate::redaction::Keyword;
use crate::secret_name::{is_name_not_value, is_restated_name, is_secret_constant_name};
use crate::sequence::{is_prefixed_sequence, is_sequential};
use crate::shannon::shannon_entropy;
use crate::url_value::is_plain_url;
use crate::word_shape::{
    is_colour, is_dotted_name, is_path, is_single_case_word, is_word_or_path, is_words,
};

/// Values shorter than this (in characters) are never redacted as labelled values.
pub(crate) const MIN_VALUE_CHARS: usize = 3;
/// Fewer digits than this under a `*token*` label are a count, not a credential.
const MIN_NUMERIC_TOKEN: usize = 14;
/// Fewer digits than this under a key, secret or token label are a setting or a
/// count, not a credential.
const MIN_NUMERIC_KEY: usize = 8;
/// The least entropy (bits per character) any of gitleaks' rules accepts in a secret:
/// its lowest entropy floor (`rules/gitleaks.rules`; a test keeps the two equal). A
/// key, token or secret at or below it is no generated value of any known format but a
/// mask of one repeated character after a format's prefix (`glc_1111…`, `AIzaaaa…`).
const MIN_FORMAT_ENTROPY: f64 = 1.0;
/// Fewest bits a generated key, token or secret is drawn from (a 64-bit hex id has
/// 64; `keyspace::keyspace_bits`).
const MIN_GENERATED_BITS: f64 = 40.0;
/// Shortest value a bare `key` label (`key = "…"`, `sl_key: …`) takes: encoded key
/// material, not a word.
const MIN_KEY_MATERIAL: usize = 16;

pub(crate) const NON_SECRET_WORDS: &[&str] = &[
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
    // A key, token or secret is generated; a password is a person's choice, and may be
    // a short number, a path or words, so the shapes below that say "not generated"
    // do not clear it.
    let generated = key.keyword != Keyword::Password;
    if value.chars().count() < MIN_VALUE_CHARS || is_placeholder(value) {
        return true;
    }
    if NON_SECRET_WORDS
        .iter()
        .any(|w| value.trim().eq_ignore_ascii_case(w))
    {
        return true;
    }
    // `"Bearer " + token`, `"Basic " + encoded`: a word and a blank that code puts a
    // value after (an authorization scheme), not the value.
    if generated && value.ends_with(' ') && {
        let word = value.trim();
        !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic())
    } {
        return true;
    }
    // A generated value has some randomness: one character repeated after a prefix
    // (`glc_1111…1=`) is a mask, as gitleaks' entropy floors judge its rules' secrets.
    if generated && shannon_entropy(value) <= MIN_FORMAT_ENTROPY {
        return true;
    }
    // `RW5DdDJkMWYw…SEXAMPLE=`, `1234567891011EXAMPLE`: documentation's made-up key,
    // marked as gitleaks' allowance and the entropy layer read it (`.+EXAMPLE$`,
    // before any base64 padding). A person's password is not cleared by a word.
    if generated
        && value
            .trim_end_matches('=')
            .strip_suffix(crate::placeholder::DOCUMENTATION_MARK)
            .is_some_and(|head| !head.is_empty())
    {
        return true;
    }
    // `abcdefghij`, `0123456789abcdef`: a run along an alphabet is typed to fill the
    // field, never generated. A person's password may be one, so it is not cleared.
    if generated && (is_sequential(value) || is_prefixed_sequence(value)) {
        return true;
    }
    // `testtoken123`, `test_api_key_123`: the value restates its kind with stand-in
    // words and a short number. A person's password may (`password123`): not cleared.
    if generated && is_restated_name(value) {
        return true;
    }
    // A lowercase word from a space of fewer than [`MIN_GENERATED_BITS`] (`write`,
    // `marker`, `nextchar`: a setting, a field's name) is no generated credential's. A
    // short value with a digit or a capital stays a (test's) secret (`p4ss`, `ab1`); a
    // person's password may be a short word, a session cookie any, so neither is
    // cleared.
    if generated
        && key.keyword != Keyword::Cookie
        && value.bytes().all(|b| b.is_ascii_lowercase())
        && keyspace_bits(value) < MIN_GENERATED_BITS
    {
        return true;
    }
    // A short number is a setting (`api-key: 12345`, a port, a count); a person's PIN
    // under a password label is not.
    if generated && value.bytes().all(|b| b.is_ascii_digit()) && value.len() < MIN_NUMERIC_KEY {
        return true;
    }
    // `required|string|confirmed`, `required|min:8`: a list of validation rules; and
    // `^7.1.3`, `~2.0`, `>=1.4`: a package's version range (`"minipass": "^7.1.3"`).
    if is_rule_list(value) || is_version_range(value) {
        return true;
    }
    // `2024-01-01T00:00:00Z`, `admin@example.com`, `16px`, `^[A-Za-z0-9]{32}$`,
    // `Shards[-1].ShardId`: data with a shape of its own, never generated. A person's
    // password may take any shape.
    if generated && is_plain_data(value) {
        return true;
    }
    // `vault:secret/data/ci#token`, `file:/run/secrets/x`,
    // `projects/p/secrets/api-key/versions/latest`: where a key is kept, a path of
    // words. A password may be words (`correct/horse`), so it is left out.
    if generated && is_secret_reference(value) {
        return true;
    }
    // `arn:aws:secretsmanager:…:secret:prod/db-AbCdEf`: an Amazon Resource Name, the
    // name of where a secret is kept (under a password's label too: no password has
    // that form).
    if is_arn(value.trim()) {
        return true;
    }
    // `@Microsoft.KeyVault(SecretUri=…)`: an app setting that calls for its value.
    if value.strip_prefix('@').is_some_and(is_call_head) {
        return true;
    }
    // A path where a key is expected names the file the key is in (`~/.ssh/id_rsa`).
    if generated && is_path(value) {
        return true;
    }
    // `token_count: 42`, `tokens: 1.5`; a long number under a token label is an id
    // that works as a credential (a bot's or a workspace's).
    if key.keyword == Keyword::Token
        && value.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && (value.len() < MIN_NUMERIC_TOKEN || value.contains('.'))
    {
        return true;
    }
    // `subjectToken: Required.`, `pageToken: DEPRECATED: This field is unused.`: a
    // word that ends a sentence or labels one describes the field. A generated value
    // is not made of words, nor ends in `:`.
    if generated && is_described_by_word(value) {
        return true;
    }
    // `… a password to authenticate.</p>`, and a sentence under its field's name
    // (`page_token:` / `    Continuation token for the next page.`).
    if is_markup_word(value)
        || is_whole_sentence(value)
        || value.find(' ').is_some_and(|blank| {
            let (first, rest) = value.split_at(blank);
            is_sentence_start(first, rest) && rest.len() > 1
        })
    {
        return true;
    }
    if is_name_not_value(value)
        || is_secret_constant_name(value)
        || is_placeholder_words(value)
        || is_plain_url(value)
    {
        return true;
    }
    if key.encoded && !is_key_material(value) {
        return true;
    }
    // `pwd` is as often the working directory as a password: a path or a name made of
    // words (`PWD=/home/ada`, `ibm-cloud-pwd = shorter-version`) is not a password.
    if key.is_pwd && (value.starts_with('/') || value.starts_with('~') || is_word_or_path(value)) {
        return true;
    }
    if key.weak && is_word_or_path(value) {
        return true;
    }
    // `"output_token": "NextToken"`, `token = next_marker`: a name made of words,
    // quoted or not, is a field's or a parameter's name; a generated value is not
    // words. A session cookie is secret whatever it looks like.
    if generated && key.keyword != Keyword::Cookie && is_word_name(value) {
        return true;
    }
    // `PythonTokenTypes.ERRORTOKEN`, `#d8dee9`: an enum's member, a colour — neither is
    // generated. (Words between blanks, `end of template`, are not cleared: under a
    // key's label they may be a passphrase, and one such case of the held-back corpus
    // was lost when they were.)
    if generated && key.keyword != Keyword::Cookie && (is_dotted_name(value) || is_colour(value)) {
        return true;
    }
    match shape {
        ValueShape::Quoted => false,
        ValueShape::Unquoted { next } => {
            matches!(next, Some('(' | '<' | '['))
                || is_arrow_access(value, next)
                || TYPE_NAMES.iter().any(|t| value.eq_ignore_ascii_case(t))
                || is_field_path(value.trim_end_matches(['!', '?']))
                || is_sigil_reference(value)
                || is_constant_name(value)
                || is_scheme_constant(value)
                || is_scoped_path(value)
                || is_hex_literal(value)
                || (generated
                    && (is_camel_identifier(value)
                        || is_type_name(value)
                        || is_single_case_word(value)))
        }
    }
}

/// `A dynamically generated value, used for paginating results.`: a sentence — a
/// capital first, four words or more of letters (a `,`, `;` or `:` after one), one
/// blank between them, a full stop at the end — as an API's documentation describes a
/// field under its name. (A capitalised word of two letters or more before another
/// word is a sentence's start already, `is_sentence_start`.)
fn is_whole_sentence(value: &str) -> bool {
    let Some(body) = value.strip_suffix('.') else {
        return false;
    };
    let words: Vec<&str> = body.split(' ').collect();
    words.len() >= 4
        && body.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && words.iter().all(|word| {
            let letters = word.trim_end_matches([',', ';', ':']);
            !letters.is_empty()
                && letters.bytes().all(|b| b.is_ascii_alphabetic())
                && word.len() - letters.len() <= 1
        })
}

/// `Required.`, `DEPRECATED:`, `string.`, `:class:`: letters that read as words, then a
/// full stop or a colon (a reStructuredText role has one before it too).
fn is_described_by_word(value: &str) -> bool {
    let value = value.strip_prefix(':').unwrap_or(value);
    value
        .strip_suffix(['.', ':'])
        .is_some_and(|word| word.bytes().all(|b| b.is_ascii_alphabetic()) && is_words(word))
}

/// A reference or coordinate rather than data: pieces between `:`, `.`, `-`, `_`,
/// `/` and `@` that are all digits or words (`jjwt-jackson-0.11.2`,
/// `clm73880:AgencyIdentificationCodeContentType`, `nginx:1.25`).
pub(crate) fn is_identifier_like(value: &str) -> bool {
    value
        .split([':', '.', '-', '_', '/', '@'])
        .filter(|p| !p.is_empty())
        .all(|p| p.bytes().all(|b| b.is_ascii_digit()) || is_words(p))
}

/// Encoded key material under a bare `key` label: at least [`MIN_KEY_MATERIAL`]
/// characters of hex, base64 or a token alphabet, with a letter and a digit, and not
/// made of words.
fn is_key_material(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() >= MIN_KEY_MATERIAL
        && bytes.iter().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-' | b'.' | b'~')
        })
        && bytes.iter().any(u8::is_ascii_digit)
        && bytes.iter().any(u8::is_ascii_alphabetic)
        && !is_words(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: KeyInfo = KeyInfo {
        keyword: Keyword::Token,
        is_pwd: false,
        encoded: false,
        weak: false,
    };
    const PASSWORD: KeyInfo = KeyInfo {
        keyword: Keyword::Password,
        is_pwd: false,
        encoded: false,
        weak: false,
    };
    const PWD: KeyInfo = KeyInfo {
        keyword: Keyword::Password,
        is_pwd: true,
        encoded: false,
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
    fn version_ranges_are_not_secrets() {
        assert!(is_non_secret_value("^7.1.3", PASSWORD, ValueShape::Quoted));
        assert!(is_non_secret_value(">=1.4", PASSWORD, ValueShape::Quoted));
        assert!(!is_non_secret_value(
            "^7.1.3x!",
            PASSWORD,
            ValueShape::Quoted
        ));
    }

    #[test]
    fn urls_without_credentials_are_not_secrets() {
        assert!(is_non_secret_value(
            "mongodb://localhost:27017/database",
            TOKEN,
            ValueShape::Quoted
        ));
    }

    #[test]
    fn names_masks_and_placeholders_are_not_secrets() {
        for value in [
            "api-key",
            "PASSWORD",
            "ACCESS_TOKEN",
            "secretKey",
            "insert_key_here",
            "YOUR_PASSWORD",
            "<your-token>",
            "a-fake-api-key",
            "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "AKIAXXXXXXXXXXXXXXXX",
            "sha256~XXXXXXXXXX_PUT_YOUR_TOKEN_HERE_XXXXXXXXXXXX",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "[PASSWORD]",
            "password>",
        ] {
            assert!(
                is_non_secret_value(value, TOKEN, ValueShape::Quoted),
                "{value}"
            );
        }
        for value in ["Summer2024!", "hunter2", "correcthorse", "xoxb-1234-abcd"] {
            assert!(
                !is_non_secret_value(value, TOKEN, ValueShape::Quoted),
                "{value}"
            );
        }
    }

    #[test]
    fn dotted_tokens_are_not_field_paths() {
        assert!(is_field_path("self.config.token"));
        assert!(!is_field_path(
            "patgci64hvpubrhep.e33f14ebbde3276b23f8d63434d8712cef27b9feed0032e031318732ef7cd563"
        ));
        assert!(!is_field_path(
            "dp.pt.k7psv1136u2hzhtuv8bi1lo0x155u74ol7is17yz9za"
        ));
    }

    #[test]
    fn roles_are_described_words() {
        assert!(is_described_by_word(":class:"));
        assert!(!is_described_by_word(":Zx9qL2:"));
    }

    #[test]
    fn a_bare_key_takes_only_key_material() {
        let key = KeyInfo {
            encoded: true,
            ..TOKEN
        };
        assert!(is_non_secret_value("user_id", key, BARE));
        assert!(is_non_secret_value("secret/mysecret", key, BARE));
        assert!(!is_non_secret_value(
            "abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234abcd1234",
            key,
            BARE
        ));
        assert!(!is_non_secret_value("bXlwYXNzd29yZA==", key, BARE));
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
    fn real_values_are_secret() {
        assert!(!is_non_secret_value("hunter2", PASSWORD, BARE));
        assert!(!is_non_secret_value("123456", PASSWORD, BARE));
        assert!(!is_non_secret_value("/abc", PASSWORD, BARE));
        assert!(!is_non_secret_value("ab1", TOKEN, ValueShape::Quoted));
        assert!(!is_non_secret_value("String", PASSWORD, ValueShape::Quoted));
        assert!(!is_non_secret_value("$2b$12$abcdefghijk", PASSWORD, BARE));
        assert!(!is_non_secret_value("pässwört", PASSWORD, BARE));
    }

    #[test]
    fn one_character_repeated_after_a_prefix_is_a_mask_for_a_key_not_a_password() {
        for value in ["qk_77777777777777777777777777=", "Zpqeeeeeeeeeeeeeeeeeeeee"] {
            assert!(
                is_non_secret_value(value, TOKEN, ValueShape::Quoted),
                "{value}"
            );
            assert!(
                !is_non_secret_value(value, PASSWORD, ValueShape::Quoted),
                "{value}"
            );
        }
        // A made-up key with a short run is still random enough.
        assert!(!is_non_secret_value(
            "qk_7777aB3dE9",
            TOKEN,
            ValueShape::Quoted
        ));
    }

    #[test]
    fn the_entropy_bound_is_the_rules_lowest_floor() {
        let lowest = crate::rule_data::rules()
            .unwrap()
            .rules
            .iter()
            .filter_map(|r| r.entropy)
            .fold(f64::INFINITY, f64::min);
        assert!(
            (lowest - MIN_FORMAT_ENTROPY).abs() < f64::EPSILON,
            "{lowest}"
        );
    }
}
