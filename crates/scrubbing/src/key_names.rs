//! Deciding whether a key name labels a secret, word by word.
//!
//! A key such as `OPENAI_API_KEY`, `x-api-key`, `clientSecret` or `db.password` is split
//! into words at `_`, `-`, `.` and camelCase humps. It labels a secret when one of its
//! words is (or ends with) a secret word — `token`, `secret`, `password`, `passwd`,
//! `passphrase`, `passcode`, `pwd`, `apikey`, `sessionid` — or when a key-material
//! prefix (`api`, `private`, `signing`, `account`, `license`, `hmac`, …) is followed by
//! `key`. A secret word followed by a word that describes metadata (`token_count`,
//! `token_type`, `password_file`, `api_key_env`) does not count, and neither do plurals
//! like `max_tokens`.
//!
//! Some words are secret only as the **last** word of a key, because as a first word
//! they usually name a setting: `pass`, `pw` (`SMTP_PASS`, `ROOT_PW`, but `pass_rate`),
//! `auth`, `credentials`, `creds` (`BASIC_AUTH`, but `auth_method`) and `cookie`
//! (`SESSION_COOKIE`, but `cookie_secure`). Their values must also look like data
//! (see `value_filter`): `auth: basic` and `credentials: /etc/creds.json` stay.

use crate::key_words::{KEY_PREFIXES, METADATA_SUFFIXES, NOT_KEY_MATERIAL, NOT_PASS};
use crate::redaction::Keyword;

/// What a key name says about its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyInfo {
    /// Which secret word the key contains.
    pub(crate) keyword: Keyword,
    /// The word was `pwd` (the shell's working directory is a path, not a password).
    pub(crate) is_pwd: bool,
    /// The word was a weak one (`auth`, `credentials`, `cookie`, a lone `pass`/`pw`):
    /// its value must look like data, not a word, identifier or path.
    pub(crate) weak: bool,
    /// The key is `key` without a key-material word before it (`key`, `sl_key`,
    /// `ibm-iam_key`): only encoded key material (long hex, base64 or token text) is
    /// its secret value.
    pub(crate) encoded: bool,
}

impl KeyInfo {
    const fn strong(keyword: Keyword) -> Self {
        Self {
            keyword,
            is_pwd: false,
            encoded: false,
            weak: false,
        }
    }
}

/// Classifies a key name; `None` when it does not label a secret.
pub(crate) fn classify_key(key: &str) -> Option<KeyInfo> {
    // `ResetAdminPassword.method_config`, `token.token_type`: in a dotted path a
    // field named by two words or more is named on its own, the pieces before it are
    // its owner. A one-word field (`password.value`, `key.pem`) is the owner's.
    let key = match key.rsplit_once('.') {
        Some((_, field)) if words(field).nth(1).is_some() => field,
        _ => key,
    };
    if ends_in_metadata(key) || is_type_member(key) {
        return None;
    }
    let mut found: Option<KeyInfo> = None;
    let mut previous: Option<&str> = None;
    for word in words(key) {
        if previous.is_some_and(|p| is_webhook_url(p, word)) {
            found = Some(KeyInfo::strong(Keyword::Secret));
            previous = Some(word);
            continue;
        }
        // The word after a secret word decides whether it was metadata; a weak word
        // only counts as the last word.
        if let Some(info) = found
            && !info.weak
            && !is_one_of(word, METADATA_SUFFIXES)
        {
            return Some(info);
        }
        found = word_keyword(word).or_else(|| {
            if !word.eq_ignore_ascii_case("key") {
                return None;
            }
            let after = |list: &[&str]| previous.is_some_and(|p| is_one_of(p, list));
            if after(&["api"]) {
                Some(KeyInfo::strong(Keyword::ApiKey))
            } else if after(KEY_PREFIXES) {
                Some(KeyInfo::strong(Keyword::Key))
            } else if after(NOT_KEY_MATERIAL) {
                None
            } else {
                Some(KeyInfo {
                    encoded: true,
                    ..KeyInfo::strong(Keyword::Key)
                })
            }
        });
        previous = Some(word);
    }
    found
}

/// `token_signing_alg`, `PASSWORD_HASH_ALGORITHM`: a key of two words or more whose
/// last word is a [`METADATA_SUFFIXES`] word describes a secret wherever the secret
/// word stands before it (`WEBHOOK_URL` excepted: a webhook's URL is its credential).
fn ends_in_metadata(key: &str) -> bool {
    let mut last_two: [Option<&str>; 2] = [None, None];
    for word in words(key) {
        last_two = [last_two[1], Some(word)];
    }
    let [Some(previous), Some(last)] = last_two else {
        return false;
    };
    is_one_of(last, METADATA_SUFFIXES) && !is_webhook_url(previous, last)
}

/// `WEBHOOK_URL`, `SLACK_HOOK_URL`: `url` (or `uri`) after `webhook` or `hook` — a
/// webhook's URL is its credential (a URL without a random piece stays, see
/// `url_value::is_plain_url`).
fn is_webhook_url(previous: &str, word: &str) -> bool {
    is_one_of(previous, &["webhook", "hook"]) && is_one_of(word, &["url", "uri"])
}

/// Whether `word` is one of `list`, in any case.
fn is_one_of(word: &str, list: &[&str]) -> bool {
    list.iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// `Token.Comment`, `Token.Menu.Completions`, `Password.Strength.Weak`: a member of a
/// type or an enum — pieces joined by `.`, each a name in PascalCase, the secret's word
/// only in the pieces before the last (the type), none in the member. A field or a
/// variable (`token.value`, `config.Password`) starts in lower case.
fn is_type_member(key: &str) -> bool {
    let Some((owner, member)) = key.rsplit_once('.') else {
        return false;
    };
    let pascal = |piece: &str| {
        piece.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && piece.bytes().any(|b| b.is_ascii_lowercase())
            && piece.bytes().all(|b| b.is_ascii_alphanumeric())
    };
    // `Config.Key` names a key: `key` alone is no secret's word to `word_keyword`.
    let names_no_secret =
        |word: &str| word_keyword(word).is_none() && !is_one_of(word, &["key", "keys"]);
    owner.split('.').all(pascal) && pascal(member) && words(member).all(names_no_secret)
}

fn word_keyword(word: &str) -> Option<KeyInfo> {
    let info = |keyword| Some(KeyInfo::strong(keyword));
    let weak = |keyword| {
        Some(KeyInfo {
            keyword,
            is_pwd: false,
            encoded: false,
            weak: true,
        })
    };
    if ends_with_ci(word, "pwd") {
        return Some(KeyInfo {
            keyword: Keyword::Password,
            is_pwd: true,
            encoded: false,
            weak: false,
        });
    }
    for stem in ["password", "passwd", "passphrase", "passcode"] {
        if starts_with_ci(word, stem) || ends_with_ci(word, stem) {
            return info(Keyword::Password);
        }
    }
    // `secrets` (plural) names a collection: `keyVaultToStoreSecrets`.
    if (starts_with_ci(word, "secret") && !word.eq_ignore_ascii_case("secrets"))
        || ends_with_ci(word, "secret")
    {
        return info(Keyword::Secret);
    }
    if ends_with_ci(word, "apikey") || starts_with_ci(word, "apikey") {
        return info(Keyword::ApiKey);
    }
    if ends_with_ci(word, "token") {
        return info(Keyword::Token);
    }
    if ends_with_ci(word, "sessionid") || ends_with_ci(word, "sessid") {
        return info(Keyword::Cookie);
    }
    for stem in [
        "privatekey",
        "signingkey",
        "encryptionkey",
        "masterkey",
        "accesskey",
        "accountkey",
        "authkey",
    ] {
        if ends_with_ci(word, stem) {
            return info(Keyword::Key);
        }
    }
    let is_pass = ends_with_ci(word, "pass") && !is_one_of(word, NOT_PASS);
    if is_pass || ends_with_ci(word, "pw") {
        return weak(Keyword::Password);
    }
    if is_one_of(
        word,
        &["auth", "credentials", "credential", "creds", "cred"],
    ) {
        return weak(Keyword::Credential);
    }
    if word.eq_ignore_ascii_case("cookie") {
        return weak(Keyword::Cookie);
    }
    // `SALT`, `AUTH_SALT`, `SENTRY_DSN` (a DSN carries its key), `OAUTH_REFRESH`.
    if is_one_of(word, &["salt", "dsn"]) {
        return weak(Keyword::Secret);
    }
    if word.eq_ignore_ascii_case("refresh") {
        return weak(Keyword::Token);
    }
    None
}

/// A key that labels a secret only in its context: `key`, `sig` or `signature` as a URL
/// query parameter (`?key=…`, `&sig=…`), and `key` after a key-material word and a
/// blank, as in prose (`the API key is …`, `Secret Key: …`).
pub(crate) fn classify_in_context(text: &str, key_start: usize, key: &str) -> Option<KeyInfo> {
    let bytes = text.as_bytes();
    let before = key_start.checked_sub(1).and_then(|i| bytes.get(i)).copied();
    let in_query =
        matches!(before, Some(b'?' | b'&')) && bytes.get(key_start + key.len()) == Some(&b'=');
    if in_query && is_one_of(key, &["key", "sig", "signature"]) {
        // `?key=name` also sorts by a field: the value must look like data.
        return Some(KeyInfo {
            weak: true,
            ..KeyInfo::strong(Keyword::Key)
        });
    }
    if before != Some(b' ') || !key.eq_ignore_ascii_case("key") {
        return None;
    }
    let head = text.get(..key_start - 1)?;
    let word_start = head
        .rfind(|c: char| !c.is_ascii_alphanumeric())
        .map_or(0, |i| i + 1);
    let previous = head.get(word_start..)?;
    // In prose the label is looser (`API key:  export …` is a heading, not a value):
    // the value must look like data.
    let keyword = if previous.eq_ignore_ascii_case("api") {
        Keyword::ApiKey
    } else if is_one_of(previous, KEY_PREFIXES) {
        Keyword::Key
    } else {
        return None;
    };
    Some(KeyInfo {
        weak: true,
        ..KeyInfo::strong(keyword)
    })
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
pub(crate) fn words(key: &str) -> impl Iterator<Item = &str> {
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
            ("Config.Key", Keyword::Key),
            ("Settings.Password", Keyword::Password),
            ("Token.Secret", Keyword::Token),
            ("accessToken", Keyword::Token),
            ("GITHUB_TOKEN", Keyword::Token),
            ("authtoken", Keyword::Token),
            ("password", Keyword::Password),
            ("DB_PASSWORD", Keyword::Password),
            ("passwd", Keyword::Password),
            ("pwd", Keyword::Password),
            ("private_key", Keyword::Key),
            ("signingKey", Keyword::Key),
            ("SMTP_PASS", Keyword::Password),
            ("ADMIN_PASS", Keyword::Password),
            ("PASS", Keyword::Password),
            ("PW", Keyword::Password),
            ("ldapBindPw", Keyword::Password),
            ("PASSCODE", Keyword::Password),
            ("AUTH", Keyword::Credential),
            ("BASIC_AUTH", Keyword::Credential),
            ("CREDENTIALS", Keyword::Credential),
            ("db_creds", Keyword::Credential),
            ("SESSION_COOKIE", Keyword::Cookie),
            ("sessionid", Keyword::Cookie),
            ("PHPSESSID", Keyword::Cookie),
            ("ACCOUNT_KEY", Keyword::Key),
            ("LICENSE_KEY", Keyword::Key),
            ("AccountKey", Keyword::Key),
            ("hmac-key", Keyword::Key),
            ("AUTH_KEY", Keyword::Key),
            ("WEBHOOK_URL", Keyword::Secret),
            ("SENTRY_DSN", Keyword::Secret),
            ("SALT", Keyword::Secret),
            ("AUTH_SALT", Keyword::Secret),
            ("OAUTH_REFRESH", Keyword::Token),
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
            "monkey",
            "primary_key",
            "input",
            "pass_rate",
            "bypass",
            "bypass_cache",
            "auth_method",
            "auth_required",
            "credentials_file",
            "cookie_secure",
            "session",
            "session_timeout",
            "public_key",
            "author",
            "oauth",
            "password_encryption",
            "token_signing_alg",
            "PASSWORD_HASH_ALGORITHM",
            "passwordMode",
            "SECRET_KEY_FILE",
            "password_last_used",
            "TOKEN_ROTATED",
            "ChangeTokenStatus",
            "Token.Comment",
            "Token.Menu.Completions.Meta",
        ] {
            assert_eq!(keyword(key), None, "{key}");
        }
    }

    #[test]
    fn keys_in_context() {
        let key =
            |text: &str, at: usize, k: &str| classify_in_context(text, at, k).map(|i| i.keyword);
        assert_eq!(key("https://x.io/a?key=abc", 15, "key"), Some(Keyword::Key));
        assert_eq!(
            key("https://x.io/a?b=1&sig=abc", 19, "sig"),
            Some(Keyword::Key)
        );
        assert_eq!(key("the API key is x", 8, "key"), Some(Keyword::ApiKey));
        assert_eq!(key("Secret Key: x", 7, "Key"), Some(Keyword::Key));
        assert_eq!(key("the key is x", 4, "key"), None);
        assert_eq!(key("key=abc", 0, "key"), None);
    }

    #[test]
    fn a_bare_key_takes_only_key_material() {
        // `keyVaultToStoreSecrets`: `Secrets` (plural) names a collection.
        for key in [
            "key",
            "sl_key",
            "ibm-iam_key",
            "softlayer_key",
            "KEY",
            "keyVaultToStoreSecrets",
        ] {
            let info = classify_key(key).unwrap();
            assert!(info.encoded && info.keyword == Keyword::Key, "{key}");
        }
        assert!(!classify_key("ACCOUNT_KEY").unwrap().encoded);
        assert_eq!(classify_key("public_key"), None);
    }

    #[test]
    fn a_dotted_path_names_its_last_field() {
        assert_eq!(classify_key("ResetAdminPassword.method_config"), None);
        assert_eq!(classify_key("token.token_type"), None);
        assert!(classify_key("spring.datasource.password").is_some());
        assert!(classify_key("cfg.db_password").is_some());
        assert!(
            classify_key("db.password.value").is_some(),
            "a one-word field"
        );
        assert!(classify_key("tls.key").is_some());
    }

    #[test]
    fn pwd_is_marked() {
        assert_eq!(
            classify_key("OLDPWD"),
            Some(KeyInfo {
                keyword: Keyword::Password,
                is_pwd: true,
                encoded: false,
                weak: false,
            })
        );
    }
}
