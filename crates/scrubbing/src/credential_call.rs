//! Credentials passed positionally: a user and a password as the only two string
//! literals of a call or tuple that a credential word names — `auth=('admin', '…')`
//! (Python's `requests`), `HTTPBasicAuth('u', '…')`, `new NetworkCredential("u",
//! "…")`, `smtp.login("u", "…")`. The second literal is the password. No label names
//! it, so the name of what it is given to must: its last word is `auth`,
//! `authenticate`, `credential(s)`, `creds`, `login`, `logon`, `signin` or `sign in` /
//! `log in` (`author(…)` is no credential).

use crate::key_names::words;

/// What every match holds, as literals for the keyword pass: a credential word (lower
/// case, capitalised, or a two-word `LogIn`/`sign_in`) right before `(`, `=(` or
/// ` = (`. Narrow on purpose: `Author:` in a `git log` names no call, and a trigger
/// that occurs sends the whole text through the pattern's line search.
pub(crate) const TRIGGER: &str = "auth(|auth=(|auth = (|Auth(|Auth=(|Auth = (|credential(|credential=(|credential = (|Credential(|Credential=(|Credential = (|credentials(|credentials=(|credentials = (|Credentials(|Credentials=(|Credentials = (|creds(|creds=(|creds = (|Creds(|Creds=(|Creds = (|login(|login=(|login = (|Login(|Login=(|Login = (|logon(|logon=(|logon = (|Logon(|Logon=(|Logon = (|signin(|signin=(|signin = (|Signin(|Signin=(|Signin = (|authenticate(|authenticate=(|authenticate = (|Authenticate(|Authenticate=(|Authenticate = (|LogIn(|LogIn=(|LogIn = (|SignIn(|SignIn=(|SignIn = (|LogOn(|LogOn=(|LogOn = (|SignOn(|SignOn=(|SignOn = (|sign_in(|sign_in=(|sign_in = (|log_in(|log_in=(|log_in = (|sign_on(|sign_on=(|sign_on = (|log_on(|log_on=(|log_on = (";

/// The call or tuple: a name, then `(`, or `=(` / ` = (` (a keyword argument, an
/// assignment), then exactly two string literals and `)`.
pub(crate) const PATTERN: &str = r#"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\(|=\(|[ \t]=[ \t]\()[ \t]*(?:"[^"\\\r\n]*"|'[^'\\\r\n]*')[ \t]*,[ \t]*(?:"(?P<dq>[^"\\\r\n]*)"|'(?P<sq>[^'\\\r\n]*)')[ \t]*,?[ \t]*\)"#;

/// Whether `name`'s last word (or last two) names credentials.
pub(crate) fn names_credentials(name: &str) -> bool {
    let mut last: [Option<&str>; 2] = [None, None];
    for word in words(name) {
        last = [last[1], Some(word)];
    }
    let is = |word: Option<&str>, list: &[&str]| {
        word.is_some_and(|w| list.iter().any(|l| w.eq_ignore_ascii_case(l)))
    };
    is(
        last[1],
        &[
            "auth",
            "basicauth",
            "authenticate",
            "credential",
            "credentials",
            "creds",
            "login",
            "logon",
            "signin",
        ],
    ) || (is(last[1], &["in", "on"]) && is(last[0], &["log", "sign"]))
}

/// What every connect call holds (`mysqli_connect(`, `DBI->connect(`,
/// `DriverManager.getConnection(`): a connection word right before `(`.
pub(crate) const CONNECT_TRIGGER: &str = "connect(|Connect(|Connection(";

/// A database connection opened with its server, user and password as the first three
/// string literals (`mysqli_connect('db', 'admin', '…', 'app')`, `DBI->connect("dbi:…",
/// "root", "…")`, `DriverManager.getConnection("jdbc:…", "app", "…")`): the third is the
/// password. The user is one token, as user names are.
pub(crate) const CONNECT_PATTERN: &str = r#"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\([ \t]*(?:"[^"\\\r\n]*"|'[^'\\\r\n]*')[ \t]*,[ \t]*(?:"[^"\s\\]+"|'[^'\s\\]+')[ \t]*,[ \t]*(?:"(?P<dq>[^"\\\r\n]*)"|'(?P<sq>[^'\\\r\n]*)')[ \t]*[,)]"#;

/// Whether `name` opens a connection: its last word is `connect` or `connection`
/// (`mysql_connect`, `getConnection`), not `disconnect` or `connector`.
pub(crate) fn names_connection(name: &str) -> bool {
    words(name)
        .last()
        .is_some_and(|w| w.eq_ignore_ascii_case("connect") || w.eq_ignore_ascii_case("connection"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_names_by_their_last_word() {
        for name in [
            "connect",
            "mysqli_connect",
            "getConnection",
            "Connect",
            "pg_connect",
        ] {
            assert!(names_connection(name), "{name}");
        }
        for name in [
            "disconnect",
            "connector",
            "connection_pool",
            "reconnectAfter",
        ] {
            assert!(!names_connection(name), "{name}");
        }
        for literal in CONNECT_TRIGGER.split('|') {
            assert!(names_connection(literal.trim_end_matches('(')), "{literal}");
        }
    }

    #[test]
    fn every_trigger_is_a_credential_name_and_its_bracket() {
        // The trigger and `names_credentials` state one vocabulary twice: they must agree.
        for literal in TRIGGER.split('|') {
            let name = ["=(", " = (", "("]
                .iter()
                .find_map(|sep| literal.strip_suffix(sep))
                .unwrap();
            assert!(names_credentials(name), "{literal}");
        }
    }

    #[test]
    fn credential_names_by_their_last_word() {
        for name in [
            "auth",
            "HTTPBasicAuth",
            "basic_auth",
            "NetworkCredential",
            "login",
            "LogIn",
            "sign_in",
            "authenticate",
            "Credentials",
        ] {
            assert!(names_credentials(name), "{name}");
        }
        for name in [
            "author",
            "authority",
            "auth_method",
            "login_url",
            "print",
            "Tuple",
        ] {
            assert!(!names_credentials(name), "{name}");
        }
    }
}
