//! A subcommand's arguments built only when that subcommand is the one parsed.
//!
//! clap's derive builds every subcommand's arguments (their names, help, value
//! parsers, groups) each time the command line is parsed, and drops them after: for
//! `oxydra run` that was ~0.5 M instructions and ~60 page faults of the program's
//! start (docs/performance.md, "Start-up, read from a profile"), spent on thirteen
//! subcommands that were not asked for. [`Deferred`] hands clap the arguments as a
//! [`clap::Command::defer`]red step instead: the parsed subcommand (or the one whose
//! help is asked for) builds its own; the others keep only the name and the line of
//! help that `oxydra --help` lists.

use std::ops::{Deref, DerefMut};

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// The arguments `T` of one subcommand, built when clap enters it (see the module).
/// It dereferences to `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Deferred<T>(pub T);

impl<T> Deferred<T> {
    /// The arguments themselves.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Deferred<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: Args> Args for Deferred<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(cmd: Command) -> Command {
        cmd.defer(|cmd| keeping_its_help(cmd, T::augment_args))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(|cmd| keeping_its_help(cmd, T::augment_args_for_update))
    }
}

/// `augment` applied to `cmd`, the subcommand's own help kept. The derive sets a
/// subcommand's help (its variant's doc comment) after the arguments' struct has set
/// its own, so the variant's wins; a deferred struct sets its own later, at build, so
/// the variant's is put back.
fn keeping_its_help(cmd: Command, augment: fn(Command) -> Command) -> Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let cmd = augment(cmd);
    match (about, long_about) {
        (Some(about), Some(long_about)) => cmd.about(about).long_about(long_about),
        (Some(about), None) => cmd.about(about).long_about(None),
        (None, _) => cmd,
    }
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Self)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Self)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::{CommandFactory, Parser};

    use crate::args::Cli;

    /// The text of `oxydra ARGS…`'s help.
    fn help(args: &[&str]) -> String {
        let error =
            Cli::try_parse_from(std::iter::once("oxydra").chain(args.iter().copied())).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DisplayHelp, "{args:?}");
        error.to_string()
    }

    #[test]
    fn a_subcommand_keeps_its_own_help_once_its_arguments_are_built() {
        let listed: Vec<(String, Option<String>)> = Cli::command()
            .get_subcommands()
            .map(|sub| {
                (
                    sub.get_name().to_owned(),
                    sub.get_about().map(ToString::to_string),
                )
            })
            .collect();
        assert!(listed.len() > 10);
        let mut built = Cli::command();
        built.build();
        for (name, about) in listed {
            assert!(about.is_some(), "{name} has no help line");
            let sub = built.find_subcommand(&name).unwrap();
            assert_eq!(sub.get_about().map(ToString::to_string), about, "{name}");
        }
        assert!(help(&["run", "--help"]).starts_with("Run one task and exit"));
        assert!(help(&["help", "serve"]).starts_with("Serve the coordinator HTTP API"));
        assert!(help(&["sessions", "--help"]).starts_with("Stored sessions and their messages"));
    }

    #[test]
    fn only_the_parsed_subcommand_builds_its_arguments() {
        // A subcommand whose arguments were not built has none yet: `run`'s options
        // appear only once clap enters `run`.
        let cmd = Cli::command();
        let run = cmd.find_subcommand("run").unwrap();
        assert_eq!(run.get_arguments().count(), 0);
        let mut built = Cli::command();
        built.build();
        let run = built.find_subcommand("run").unwrap();
        assert!(run.get_arguments().any(|arg| arg.get_id() == "max_turns"));
        // And parsing one still reads every option of it.
        let cli = Cli::try_parse_from(["oxydra", "run", "--max-turns", "3", "p"]).unwrap();
        let crate::args::Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.options.max_turns, Some(3));
    }
}
