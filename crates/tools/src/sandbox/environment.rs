//! The environment a confined command starts with: cleared, then an allow-list.
//!
//! Passed from Oxydra's own environment: `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`,
//! `LANG`, `LANGUAGE`, `LC_*`, `TERM`, `TZ`, and the names the embedding program's
//! trusted configuration lists ([`super::SandboxConfig::pass_env`]). `TMPDIR` is the
//! command's private temporary directory. Variables the caller set on the command
//! itself (a shell step's parameters, a hook's settings) are kept: the caller chose
//! them. Nothing else — no provider key, no token, no configured secret — reaches a
//! command.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The variables every command gets from Oxydra's environment.
const PASSED: [&str; 10] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "COLORTERM",
];

/// Whether the variable `name` is passed to commands (`extra`: the configuration's).
pub(super) fn is_passed(name: &str, extra: &[String]) -> bool {
    PASSED.contains(&name) || name.starts_with("LC_") || extra.iter().any(|allowed| allowed == name)
}

/// Clears `command`'s environment but for the allow-list, the caller's own settings
/// and `TMPDIR` = `temp`.
pub(super) fn restrict(command: &mut Command, extra: &[String], temp: &Path) {
    let chosen: Vec<(OsString, Option<OsString>)> = command
        .get_envs()
        .map(|(name, value)| (name.to_owned(), value.map(ToOwned::to_owned)))
        .collect();
    command.env_clear();
    for (name, value) in std::env::vars_os() {
        if name.to_str().is_some_and(|name| is_passed(name, extra)) {
            command.env(name, value);
        }
    }
    for (name, value) in chosen {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.env("TMPDIR", temp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_not_passed_unless_named() {
        assert!(is_passed("PATH", &[]));
        assert!(is_passed("LC_ALL", &[]));
        assert!(!is_passed("OPENAI_API_KEY", &[]));
        assert!(!is_passed("GITHUB_TOKEN", &[]));
        assert!(!is_passed("AWS_SECRET_ACCESS_KEY", &[]));
        assert!(!is_passed("LD_PRELOAD", &[]));
        assert!(is_passed("CARGO_HOME", &["CARGO_HOME".to_owned()]));
    }

    #[test]
    fn the_callers_own_settings_stay_and_the_rest_goes() {
        let mut command = Command::new("true");
        command.env("STEP_VALUE", "1").env_remove("HOME");
        restrict(&mut command, &[], Path::new("/tmp/x"));
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.contains(&("STEP_VALUE".as_ref(), Some("1".as_ref()))));
        assert!(
            !envs
                .iter()
                .any(|(name, value)| *name == "HOME" && value.is_some())
        );
        assert!(envs.contains(&("TMPDIR".as_ref(), Some("/tmp/x".as_ref()))));
        assert!(
            envs.iter()
                .all(|(name, _)| is_passed(&name.to_string_lossy(), &[])
                    || *name == "STEP_VALUE"
                    || *name == "TMPDIR")
        );
    }
}
