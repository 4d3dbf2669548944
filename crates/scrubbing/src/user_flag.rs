//! `-u USER … -p VALUE` on any command line (`psexec \\host -u admin -p …`, `oc login`,
//! `mongosh`): `-p` after a user is a password, unless it is one of the flag's other
//! meanings — a port or a number (`docker run -u 1000 -p 8080:80`), a file (`python -u
//! train.py -p config.yaml`, where `-u` took no user either) or the next flag.

/// Whether `value`, given to `-p` after `-u user`, is something other than a password.
pub(crate) fn is_other_p_value(value: &str, user: &str) -> bool {
    // `8080`, `8080:80`, `127.0.0.1:80:80/tcp`.
    let is_port = value.starts_with(|c: char| c.is_ascii_digit())
        && (value.contains(':') || value.bytes().all(|b| b.is_ascii_digit()));
    value.starts_with('-') || is_port || is_file(value) || is_file(user)
}

/// A path, or a name with a lowercase extension of 2–4 letters (`config.yaml`, `train.py`); an
/// address (`ops@example.com`) is not one.
fn is_file(arg: &str) -> bool {
    arg.contains('/')
        || !arg.contains('@')
            && arg.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (2..=4).contains(&ext.len())
                    && ext.bytes().all(|b| b.is_ascii_lowercase())
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_files_and_flags_are_not_passwords() {
        for (value, user) in [
            ("8080:80", "1000"),
            ("8443", "app"),
            ("config.yaml", "train.py"),
            ("x9y8z7", "train.py"),
            ("./profiles/dev", "alice"),
            ("--authenticationDatabase", "admin"),
        ] {
            assert!(is_other_p_value(value, user), "{value} {user}");
        }
        for (value, user) in [
            ("dev_admin", "Administrator"),
            ("Secr3t.x", "ops@example.com"),
            ("q8Vz2Lkm", "DOMAIN\\ops"),
        ] {
            assert!(!is_other_p_value(value, user), "{value} {user}");
        }
    }
}
