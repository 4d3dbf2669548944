//! A bare labelled value that is code rather than data: a constant's or variable's
//! name, a field path, a `::` path, a hex literal, a type's name, a reference by a
//! sigil, a call, a language keyword before a call or block, a name that ends a
//! statement or starts a method chain, or a list of validation rules
//! (`password => 'required|min:8'`). The value filter asks these before a value under
//! a secret's label is redacted.

use crate::word_shape::{is_dotted_name, is_word_or_path, is_words};

/// `ADMIN_PASSWORD_FROM_VAULT`, `GITHUB_TOKEN_READONLY`: a bare constant's name, two
/// or more capitalised words joined by `_` (letters only).
pub(crate) fn is_constant_name(value: &str) -> bool {
    value.contains('_')
        && value.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        && value.split('_').filter(|p| !p.is_empty()).count() >= 2
        && is_words(&value.to_ascii_lowercase())
}

/// `arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf`: an Amazon
/// Resource Name — `arn`, a partition (`aws`, `aws-cn`, `aws-us-gov`), a service,
/// a region and an account (each maybe empty, `*` or a template's `${…}`), then the
/// resource. It names where a secret is kept, or a key in a key service, never the
/// secret itself.
pub(crate) fn is_arn(value: &str) -> bool {
    // A template's `${AWS::Region}` holds colons of its own: read it as `*`.
    let mut untemplated = String::new();
    let mut rest = value;
    while let Some((head, tail)) = rest.split_once("${") {
        let Some((_, after)) = tail.split_once('}') else {
            return false;
        };
        untemplated.push_str(head);
        untemplated.push('*');
        rest = after;
    }
    untemplated.push_str(rest);
    let mut parts = untemplated.splitn(6, ':');
    let (Some("arn"), Some(partition), Some(service), Some(region), Some(account), Some(resource)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let name = |part: &str| {
        part.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    let templated = |part: &str| part == "*";
    partition.starts_with("aws")
        && name(partition)
        && !service.is_empty()
        && name(service)
        && (name(region) || templated(region))
        && (account.bytes().all(|b| b.is_ascii_digit()) || templated(account))
        && !resource.is_empty()
}

/// `env:DB_PASSWORD`, `secret:API_TOKEN`: a constant's name after a lowercase scheme,
/// which names the variable or entry a value is read from.
pub(crate) fn is_scheme_constant(value: &str) -> bool {
    value.split_once(':').is_some_and(|(scheme, name)| {
        !scheme.is_empty()
            && scheme.bytes().all(|b| b.is_ascii_lowercase())
            && is_constant_name(name)
    })
}

/// `mio::Token`, `Self::IllegalParameter`, `crate::__u32`, `start..end`: identifiers
/// made of words joined by `::` (a path in Rust, C++, PHP or Ruby) or `..` (a range).
/// A key or password holds no `::` between two names.
pub(crate) fn is_scoped_path(value: &str) -> bool {
    (value.contains("::") || value.contains(".."))
        && value
            .split("::")
            .flat_map(|p| p.split(".."))
            .all(|p| is_identifier(p) && is_words(p))
}

/// A name in code: a letter or `_`, then letters, digits and `_`.
pub(crate) fn is_identifier(value: &str) -> bool {
    let mut bytes = value.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Most digits of a hexadecimal literal (a 64-bit number).
const MAX_HEX_LITERAL: usize = 16;

/// `0x0017`, `0x00000013`: a hexadecimal number literal of at most 64 bits — an enum
/// discriminant or a flag's value in code, not key material (which is longer and has
/// no `0x`).
pub(crate) fn is_hex_literal(value: &str) -> bool {
    value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .is_some_and(|digits| {
            (1..=MAX_HEX_LITERAL).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// Longest run of lowercase letters after a capital in a type's name: a word.
const MAX_TYPE_HUMP: usize = 12;

/// `SharedSecret`, `HpkePrivateKey`, `CString`, `Duration`: a type's name in
/// PascalCase — a capital first, letters only, every capital followed by at most
/// [`MAX_TYPE_HUMP`] lowercase letters, and made of words. A generated key or token
/// is never one; a password may be, so the caller leaves passwords out.
pub(crate) fn is_type_name(value: &str) -> bool {
    let bytes = value.as_bytes();
    let mut lower_run = 0;
    bytes.first().is_some_and(u8::is_ascii_uppercase)
        && bytes.iter().all(u8::is_ascii_alphabetic)
        && bytes.iter().any(u8::is_ascii_lowercase)
        && bytes.iter().all(|b| {
            lower_run = if b.is_ascii_lowercase() {
                lower_run + 1
            } else {
                0
            };
            lower_run <= MAX_TYPE_HUMP
        })
        && is_words(value)
}

/// Longest run of capitals in a name made of words: an acronym (`HTTPServer`).
const MAX_NAME_ACRONYM: usize = 5;

/// `NextToken`, `nextPageToken`, `next_page_token`, `Marker`,
/// `DistributionList.NextMarker`: a name made of words — letters joined by `_` or `.`,
/// with a lowercase letter, each capital run at most [`MAX_NAME_ACRONYM`] long and each
/// lowercase run at most [`MAX_TYPE_HUMP`], and a capital or a joint (a lone lowercase
/// word, `correcthorse`, may be a passphrase). In data and config it names a field, a
/// parameter or an enum's member (a pagination spec's `"output_token": "NextToken"`).
/// A generated key or token has digits or a random mix of cases; a password may be
/// words, so the caller leaves passwords out.
pub(crate) fn is_word_name(value: &str) -> bool {
    let (mut upper_run, mut lower_run) = (0, 0);
    value.bytes().any(|b| b.is_ascii_lowercase())
        && value
            .bytes()
            .any(|b| matches!(b, b'A'..=b'Z' | b'_' | b'.'))
        && value.bytes().all(|b| {
            (upper_run, lower_run) = match b {
                b'A'..=b'Z' => (upper_run + 1, 0),
                b'a'..=b'z' => (0, lower_run + 1),
                b'_' | b'.' => (0, 0),
                _ => return false,
            };
            upper_run <= MAX_NAME_ACRONYM && lower_run <= MAX_TYPE_HUMP
        })
        && value
            .split('.')
            .all(|part| !part.trim_matches('_').is_empty() && is_words(part))
}

/// A bare value that is an expression in code, by what follows it on its line
/// (`rest`) and on the next: a name or number that ends a statement or an item
/// (`;`, or `,` at the end of the line: `token: ResetToken,`, `self.key = value;`),
/// an argument (`)`), the head of a block or struct literal (`unsafe {`,
/// `PrivateKeyOps {`), a bound list (`Send + Sync`), or the receiver of a method chain
/// on the next line (`let secret = provider` / `.load()`). Code quotes a literal
/// secret; a bare one there is a name. `words` says the name must be two words or
/// more (`our_key_share`, `TestCase`), as for a password, which may be one word.
pub(crate) fn is_code_expression(value: &str, rest: &str, words: bool) -> bool {
    let name = is_name(value);
    let number = value.bytes().all(|b| b.is_ascii_digit()) || is_hex_literal(value);
    if !(name || number) {
        return false;
    }
    let line = rest.split('\n').next().unwrap_or_default();
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() && name {
        return is_chain_receiver(value, rest);
    }
    if words && !has_two_words(value) {
        return false;
    }
    let after_comment = |s: &str| {
        let s = s.trim_start();
        s.is_empty() || s.starts_with("//") || s.starts_with('#')
    };
    if let Some(end) = line.strip_prefix([';', ',']) {
        return after_comment(end);
    }
    if line.starts_with(')') {
        return true;
    }
    let spaced = line.trim_start();
    if line.len() > spaced.len()
        && (spaced.starts_with('{') || spaced.starts_with("+ ") || spaced.starts_with("->"))
    {
        return true;
    }
    false
}

/// `self._authkey = authkey`, `creds.refresh_token = refresh_token`, `password=password`:
/// a bare name that spells its label's last piece (after a `.`, ignoring case, `_` and
/// `-`) — a variable handed on under its own name. A secret does not spell the name
/// of the field it is kept in.
pub(crate) fn repeats_label(key: &str, value: &str) -> bool {
    let field = key.rsplit('.').next().unwrap_or(key);
    let letters = |s: &str| {
        s.bytes()
            .filter(|b| !matches!(b, b'_' | b'-'))
            .map(|b| b.to_ascii_lowercase())
            .collect::<Vec<u8>>()
    };
    is_identifier(value) && !letters(value).is_empty() && letters(value) == letters(field)
}

/// A name in code made of words (`provider`, `derived_key`).
fn is_name(value: &str) -> bool {
    is_identifier(value) && is_words(value)
}

/// A name at the end of its line whose next line starts with a method call (`let
/// secret = provider` / `    .load_key(…)`, in a doc comment's `///` too): the value is
/// the receiver, whatever label it is under. `rest` is the text after the value.
pub(crate) fn is_chain_receiver(value: &str, rest: &str) -> bool {
    let Some((line, below)) = rest.split_once('\n') else {
        return false;
    };
    is_name(value) && line.trim().is_empty() && starts_method_chain(below)
}

/// The lines below start with a method call (`.load_key(…)`, after a doc comment's
/// `///` too).
fn starts_method_chain(below: &str) -> bool {
    below
        .trim_start()
        .trim_start_matches(['/', '!'])
        .trim_start()
        .strip_prefix('.')
        .and_then(|call| call.bytes().next())
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
}

/// Two words or more: `_` between letters, or a capital after a lowercase letter.
fn has_two_words(value: &str) -> bool {
    value.trim_matches('_').as_bytes().windows(2).any(|pair| {
        matches!(pair, [a, b] if (*a == b'_' && b.is_ascii_alphanumeric())
            || (a.is_ascii_lowercase() && b.is_ascii_uppercase()))
    }) || value.as_bytes().windows(3).any(|w| {
        // `CString`: an acronym, then a word.
        matches!(w, [a, b, c] if a.is_ascii_uppercase() && b.is_ascii_uppercase()
            && c.is_ascii_lowercase())
    })
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
/// `*password`, `&cfg.password`), a symbol or a named parameter (`:token` in Ruby and
/// SQL) or a YAML tag whose value follows (`!vault |`, `!Ref DbPassword`, `!!binary |`).
/// What follows the sigil is a name made of words, not data.
pub(crate) fn is_sigil_reference(value: &str) -> bool {
    value
        .strip_prefix("!!")
        .or_else(|| value.strip_prefix(['@', '*', '&', '!', ':']))
        .is_some_and(|name| !name.is_empty() && (is_field_path(name) || is_word_or_path(name)))
}

/// `$self->{token}`, `$cfg->password`, `ptr->token`: a member reached by `->` (PHP,
/// Perl, C), a name made of words maybe after `$`, then the arrow. `next` is the character after the
/// value, which may stop before the `>` (`$self-` then `>`).
pub(crate) fn is_arrow_access(value: &str, next: Option<char>) -> bool {
    let head = match value.strip_suffix('-') {
        Some(head) if next == Some('>') => head,
        _ => match value.split_once("->") {
            Some((head, member)) if is_name(member) => head,
            _ => return false,
        },
    };
    is_name(head.strip_prefix('$').unwrap_or(head))
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

/// A bare value that is a language keyword before a call, a path or a block:
/// `await GetTokenAsync()`, `new Credentials(…)`, `match Incoming::from(…)`,
/// `match &conn.side {`, `try? keychain.get(…)` — a lowercase word (Swift's `try?` and
/// `try!` with their mark), a blank, then a name (maybe borrowed or dereferenced) and
/// its opening bracket, `::` or ` {`.
pub(crate) fn is_keyword_before_call(value: &str, rest: &str) -> bool {
    let word = value.strip_suffix(['?', '!']).unwrap_or(value);
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return false;
    }
    let Some(call) = rest.strip_prefix(' ') else {
        return false;
    };
    let call = call.trim_start_matches(['&', '*']);
    let name_len = call
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
        .count();
    let after = call.get(name_len..).unwrap_or_default();
    name_len > 0
        && call
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && (after.starts_with('(') || after.starts_with("::") || after.starts_with(" {"))
}

/// `VARCHAR(255`, `getToken(`, `Hash::make(`: a name of letters followed by an opening
/// bracket — a call or a type with its size, not a password.
pub(crate) fn is_call_head(value: &str) -> bool {
    // Letters only: `pa55(word` is a password with a bracket, not a call. A `::` path
    // names a static method (`Hash::make(`, `Foo::new(`).
    let name_len = value
        .bytes()
        .take_while(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b':'))
        .count();
    name_len >= 2 && value.as_bytes().get(name_len) == Some(&b'(')
}

/// `self.config.token`, `settings.api_key`, `process.env.API_KEY`: a dotted name
/// ([`is_dotted_name`]) whose first part, an object or module, starts with a lowercase
/// letter or underscore (a later one may be a constant, `settings.GOOGLE_CLIENT_SECRET`),
/// each part at most [`MAX_FIELD_LEN`] long (`pat14.e33f14eb…`, a dotted token, is
/// not a path).
pub(crate) fn is_field_path(value: &str) -> bool {
    value
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && value.split('.').all(|part| part.len() <= MAX_FIELD_LEN)
        && is_dotted_name(value)
}

/// Longest part of a field path (`self.config.token`).
const MAX_FIELD_LEN: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::redacted;

    #[test]
    fn names_references_and_calls_are_code() {
        assert!(is_constant_name("ADMIN_PASSWORD_FROM_VAULT"));
        assert!(!is_constant_name("PASSWORD"));
        assert!(!is_constant_name("AKIA_ZX9QL2MN8VB4KP7W"));
        assert!(is_scheme_constant("env:DB_PASSWORD"));
        for arn in [
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",
            "arn:aws:secretsmanager:*:*:secret:my-app/*",
            "arn:aws-us-gov:ssm:us-gov-west-1:123456789012:parameter/prod/api_token",
            "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            "arn:aws:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:app/token-*",
            "arn:aws:s3:::my-bucket/key",
        ] {
            assert!(is_arn(arn), "{arn}");
        }
        for value in [
            "arn:aws:secretsmanager:us-east-1:123456789012:",
            "arn:Zx9qL2mN8vB4:kR7t:x:1:y",
            "aws:secretsmanager:us-east-1:123456789012:secret:x",
            "arn:aws:s3:us-east-1:12ab:x",
        ] {
            assert!(!is_arn(value), "{value}");
        }
        assert!(!is_scheme_constant("env:PASSWORD"));
        assert!(!is_scheme_constant("Env:DB_PASSWORD"));
        assert!(!is_scheme_constant(":DB_PASSWORD"));
        assert!(is_rule_list("required|min:8"));
        assert!(is_rule_list("required|string|confirmed"));
        assert!(!is_rule_list("p4ss|w0rd"));
        assert!(is_sigil_reference("@password"));
        assert!(is_sigil_reference("!Ref"));
        assert!(is_sigil_reference("&cfg.password"));
        assert!(!is_sigil_reference("@dm1n!2024"));
        assert!(is_sigil_reference(":token"));
        assert!(!is_sigil_reference(":Zx9qL2mN8vB4"));
        assert!(is_camel_identifier("tokenFromEnv"));
        assert!(!is_camel_identifier("hunter"));
        assert!(!is_camel_identifier("zX9qLmNvBkPwRtY"));
        assert!(is_keyword_before_call("await", " GetTokenAsync();"));
        assert!(is_keyword_before_call("new", " auth.Credentials(user)"));
        assert!(!is_keyword_before_call("await", " the call"));
        assert!(is_keyword_before_call("try?", " keychain.get(\"token\")"));
        assert!(!is_keyword_before_call("?", " keychain.get(\"token\")"));
        assert!(!is_keyword_before_call("S3cret", " Get()"));
        assert!(is_keyword_before_call("match", " &self.side {"));
        assert!(is_keyword_before_call("match", " Grant::parse(&raw) {"));
        assert!(!is_keyword_before_call("match", " the rest"));
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
        assert!(is_scoped_path("net::Handle"));
        assert!(is_scoped_path("Self::BadRecord"));
        assert!(is_scoped_path("crate::__u64"));
        assert!(is_scoped_path("first_byte..last_byte"));
        assert!(!is_scoped_path("Zx9qL2mN8vB4kR7t::x"), "random, not a name");
        assert!(!is_scoped_path("p4ss::w0rd!"));
        assert!(is_hex_literal("0x0042"));
        assert!(
            !is_hex_literal("0x9f8e7d6c5b4a39281706aabbccdd"),
            "key material"
        );
        assert!(is_type_name("SessionKeyPair"));
        assert!(is_type_name("Instant"));
        assert!(!is_type_name("ZxQwErTyUiOp"));
        assert!(!is_type_name("Zx9qL2mN8vB4"));
        assert!(is_code_expression("SessionKeyPair", ",\n}", false));
        assert!(is_code_expression("next_value", ";", false));
        assert!(is_code_expression("Handle", ")", false));
        assert!(is_code_expression("Grants", " {", false));
        assert!(is_code_expression(
            "loader",
            "\n        .fetch_key()?",
            true
        ));
        assert!(!is_code_expression("loader", "\nnext: line", true));
        assert!(
            !is_code_expression("Zx9qL2mN8vB4kR7t", ",", false),
            "random"
        );
        assert!(
            !is_code_expression("hunter2", ",", true),
            "one word, a password"
        );
        assert!(is_code_expression("ResetGrant", ",", true));
        assert!(!is_code_expression("Summer", ",", true));
        assert!(repeats_label("self._authkey", "authkey"));
        assert!(repeats_label("creds.refresh_token", "refresh_token"));
        assert!(repeats_label("apiKey", "api_key"));
        assert!(!repeats_label("api_key", "Zx9qL2mN8vB4"));
        assert!(!repeats_label("token", "tokens2"));
        assert!(is_arrow_access("$self-", Some('>')));
        assert!(is_arrow_access("ptr->token", None));
        assert!(!is_arrow_access("Zx9-q", Some('x')));
        assert!(!is_arrow_access("ab-", Some('x')));
        assert!(!is_arrow_access("Zx9qL2mN8vB4kR7t-", Some('>')), "random");
        assert!(is_call_head("Hash::make($request"));
        assert!(is_sigil_reference("!!binary"));
        assert!(is_word_name("NextToken"));
        assert!(is_word_name("nextPageToken"));
        assert!(is_word_name("next_page_token"));
        assert!(is_word_name("Marker"));
        assert!(!is_word_name("correcthorse"), "one lowercase word");
        assert!(is_word_name("CacheList.NextMarker"));
        assert!(!is_word_name("ABCDEFGHJKLMNPQR"), "capitals only");
        assert!(!is_word_name("zXqLmNvBkPwRtYuI"), "a random mix of cases");
        assert!(
            !is_word_name("qwhzkvbnmtrplsxdgfcj"),
            "no word is that long"
        );
        assert!(!is_word_name("ghp_Zx9qL2mN8vB4kR7t"));
        assert!(!is_word_name("a..b"));
        assert!(is_field_path("process.env.API_KEY"));
        assert!(!is_field_path("GOOGLE.client"));
        assert!(!is_field_path("pat14.e33f14eb9a7c2d81f0"));
    }

    #[test]
    fn code_under_a_secret_label_is_not_redacted() {
        for code in [
            "struct Conn {\n    token: net::Handle,\n    session_key: SessionKeyPair,\n}\n",
            "fn open(grant_token: GrantToken, id: u32) {}\n",
            "enum Ext {\n    SessionSecret => 0x002a,\n    RenewToken = 0x0b,\n}\n",
            "    let master_secret = derived_key\n        .expand(&label)?;\n",
            "    self.api_token = next_token;\n",
            "    pub trait SealingKey: Clone + Send {\n",
            "    let auth_key = match &self.side {\n",
            "    ExportSecret => \"EXPORT_SECRET_1\",\n",
            "    access_key: lookup_access_key_v2,\n",
        ] {
            assert!(redacted(code).is_empty(), "{code}: {:?}", redacted(code));
        }
    }

    #[test]
    fn secrets_under_the_same_labels_are_still_redacted() {
        for (text, secret) in [
            ("token: Zx9qL2mN8vB4kR7tY1wE,\n", "Zx9qL2mN8vB4kR7tY1wE"),
            ("session_key = q8W3e5R7t9Y1u2I4;\n", "q8W3e5R7t9Y1u2I4"),
            ("password: hunter2,\n", "hunter2"),
            (
                "SessionSecret => \"9f8e7d6c5b4a3928aa17\",\n",
                "9f8e7d6c5b4a3928aa17",
            ),
            (
                "api_key: sk9Xq2Lm7Vb4Kp0Zr5Wt3Yn8\n    .more\n",
                "sk9Xq2Lm7Vb4Kp0Zr5Wt3Yn8",
            ),
        ] {
            let found = redacted(text);
            assert!(
                found.len() == 1 && found[0].starts_with(secret),
                "{text}: {found:?}"
            );
        }
    }
}
