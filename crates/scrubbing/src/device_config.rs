//! Secrets in a network device's configuration, as Cisco IOS and the systems that
//! copy its syntax write them: a password, secret or key with its encoding type
//! before it (`enable secret 5 $1$…`, `username ada secret 9 $9$…`, ` password 7
//! 0822455D0A16`, `tacacs-server key 7 …`, `pac key 0 …`), and an SNMP community
//! (`snmp-server community <string> RO`), which grants read or write access to the
//! device. Type 0 is the password in plain text, type 7 a reversible encoding of it,
//! types 4, 5, 8 and 9 hashes that can be guessed offline, type 6 an encryption under
//! the device's master key.

use crate::placeholder::is_placeholder;
use crate::prose_password::looks_like_password;

/// Literals every match of [`TYPED_PATTERN`] or [`COMMUNITY_PATTERN`] holds: a key
/// word and the type after it, or `community`.
pub(crate) const TRIGGER: &str = "password 0 |password 7 |secret 0 |secret 4 |secret 5 |secret 8 |secret 9 |key 0 |key 6 |key 7 |key-string 0 |key-string 7 |snmp-server community ";

/// A configuration line: words of a command (and its arguments) before the key word,
/// the type, and one value that ends the line.
pub(crate) const TYPED_PATTERN: &str = r"(?m)^[ \t]*(?:[A-Za-z0-9_.-]+[ \t]+){0,6}?(?:password|secret|key|key-string)[ \t]+(?P<kind>[0-9])[ \t]+(?P<secret>[^\s'`]{4,})[ \t]*\r?$";

/// `snmp-server community <string>`, then its access and options, if any.
pub(crate) const COMMUNITY_PATTERN: &str =
    r"(?m)^[ \t]*snmp-server[ \t]+community[ \t]+(?P<secret>[^\s'`]+)";

/// Whether `value`, given with encoding type `kind`, is a secret as the device
/// stores it: type 7 is hex, a hash (4, 5, 8, 9) is a crypt string or base64-like
/// run of 8 or more characters, type 6 any token, and type 0 a password as a person
/// writes one (a digit, a symbol or an inner capital: `secret 0 apples` in prose is
/// not).
pub(crate) fn is_typed_secret(kind: &str, value: &str) -> bool {
    if is_placeholder(value) {
        return false;
    }
    match kind {
        "7" => value.len() >= 4 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "4" | "5" | "6" | "8" | "9" => value.len() >= 8,
        "0" => looks_like_password(value),
        _ => false,
    }
}

/// Whether an SNMP community string is one: not a placeholder (`<community>`,
/// `COMMUNITY`).
pub(crate) fn is_community(value: &str) -> bool {
    !is_placeholder(value) && !value.starts_with(['<', '$', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_takes_its_own_shape() {
        assert!(is_typed_secret("7", "0822455D0A16"));
        assert!(!is_typed_secret("7", "hunter22x"));
        assert!(is_typed_secret("5", "$1$mERr$hx5rVt7rPNoS4wqbXKX7m0"));
        assert!(is_typed_secret("0", "MyPacKeyS3cret"));
        assert!(!is_typed_secret("0", "apples"));
        assert!(!is_typed_secret("3", "0822455D0A16"));
    }
}
