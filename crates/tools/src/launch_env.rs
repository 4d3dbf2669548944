//! The environment of a command a trusted configuration launches (a `[[hooks]]`
//! command, an MCP server): interpreter settings that would load code from somewhere
//! other than the files the trust covers are taken away.
//!
//! Python puts the directory of the script it runs (or, for `-m` and `-c`, the current
//! directory) first on `sys.path`, so a `json.py` written beside a hook's script would
//! be imported in place of the standard library's; `PYTHONSAFEPATH=1` (Python 3.11+)
//! stops that. `PYTHONPATH`, `PERL5LIB`, `RUBYLIB` and `NODE_PATH` add import
//! directories, `PYTHONSTARTUP`, `PERL5OPT`, `RUBYOPT` and `NODE_OPTIONS` load or run
//! code at start, and `BASH_ENV` and `ENV` name a file a non-interactive shell sources:
//! each is removed unless the trusted configuration sets it itself.
//!
//! ```
//! use oxydra_tools::{EnvChange, interpreter_env_changes};
//!
//! let changes = interpreter_env_changes(|name| name == "PYTHONPATH");
//! assert!(changes.contains(&EnvChange::Set("PYTHONSAFEPATH", "1")));
//! assert!(changes.contains(&EnvChange::Remove("NODE_OPTIONS")));
//! assert!(!changes.contains(&EnvChange::Remove("PYTHONPATH")));
//! ```

/// Variables that make an interpreter or a shell load code the command does not name:
/// removed from a launched command's environment unless its configuration sets them.
pub const LOAD_PATH_VARIABLES: [&str; 10] = [
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "BASH_ENV",
    "ENV",
];

/// The variable that keeps Python from putting the script's directory or the current
/// directory first on `sys.path`, and the value that turns it on.
pub const PYTHON_SAFE_PATH: (&str, &str) = ("PYTHONSAFEPATH", "1");

/// One change to a launched command's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvChange {
    /// Remove the variable.
    Remove(&'static str),
    /// Set the variable to the value.
    Set(&'static str, &'static str),
}

/// The changes to make to the environment of a command a trusted configuration
/// launches, leaving alone each variable for which `set_by_config` says the
/// configuration sets it explicitly. Apply them after anything that clears or
/// replaces the environment.
pub fn interpreter_env_changes(set_by_config: impl Fn(&str) -> bool) -> Vec<EnvChange> {
    let (safe, on) = PYTHON_SAFE_PATH;
    LOAD_PATH_VARIABLES
        .into_iter()
        .map(EnvChange::Remove)
        .chain(std::iter::once(EnvChange::Set(safe, on)))
        .filter(|change| {
            let (EnvChange::Remove(name) | EnvChange::Set(name, _)) = *change;
            !set_by_config(name)
        })
        .collect()
}

/// Applies [`interpreter_env_changes`] to `command`.
pub fn neutralize_interpreter_env(
    command: &mut std::process::Command,
    set_by_config: impl Fn(&str) -> bool,
) {
    for change in interpreter_env_changes(set_by_config) {
        match change {
            EnvChange::Remove(name) => {
                command.env_remove(name);
            }
            EnvChange::Set(name, value) => {
                command.env(name, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_removed_and_python_made_safe() {
        let changes = interpreter_env_changes(|_| false);
        assert_eq!(changes.len(), LOAD_PATH_VARIABLES.len() + 1);
        for name in LOAD_PATH_VARIABLES {
            assert!(changes.contains(&EnvChange::Remove(name)), "{name}");
        }
        assert!(changes.contains(&EnvChange::Set("PYTHONSAFEPATH", "1")));
    }

    #[test]
    fn what_the_configuration_sets_is_left_alone() {
        let changes =
            interpreter_env_changes(|name| name == "PYTHONSAFEPATH" || name == "NODE_PATH");
        assert_eq!(changes.len(), LOAD_PATH_VARIABLES.len() - 1);
        assert!(!changes.contains(&EnvChange::Remove("NODE_PATH")));
        assert!(
            !changes
                .iter()
                .any(|change| matches!(change, EnvChange::Set(..)))
        );
    }

    #[test]
    fn a_command_gets_the_changes() {
        let mut command = std::process::Command::new("true");
        command.env("PYTHONPATH", "/x").env("RUBYOPT", "-rx");
        neutralize_interpreter_env(&mut command, |name| name == "RUBYOPT");
        let envs: Vec<(String, Option<String>)> = command
            .get_envs()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        assert!(envs.contains(&("PYTHONPATH".to_owned(), None)), "{envs:?}");
        assert!(
            envs.contains(&("RUBYOPT".to_owned(), Some("-rx".to_owned()))),
            "{envs:?}"
        );
        assert!(
            envs.contains(&("PYTHONSAFEPATH".to_owned(), Some("1".to_owned()))),
            "{envs:?}"
        );
    }
}
