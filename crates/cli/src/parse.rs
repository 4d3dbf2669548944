//! From the command line to a [`Cli`]: clap's parse, a prompt piped on stdin, and
//! `--json` as `--output jsonl`. A command line clap refuses is reported here (with the
//! closing `error` event for JSON-lines readers).

use std::ffi::OsString;
use std::io::IsTerminal;

use clap::Parser;
use clap::error::ErrorKind;

use crate::args::{
    AgentsAction, AgentsArgs, Cli, Command, Deferred, McpAction, McpArgs, OutputFormat,
    SessionsAction, SessionsArgs,
};

/// Parses the command line `argv` (the program name first).
///
/// `oxydra run` without a prompt reads it from stdin when stdin is not a terminal
/// (`echo hi | oxydra run`). A command line clap refuses is reported as clap does, exit
/// 2; with `--output jsonl` the closing `error` event is printed on stdout as well.
/// `Err` holds the exit code (0 for `--help` and `--version`).
pub fn parse(argv: Vec<OsString>) -> Result<Cli, std::process::ExitCode> {
    let argv = chat_when_bare(
        argv,
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
    );
    let error = match Cli::try_parse_from(&argv) {
        Ok(cli) => {
            if let Some(note) = older_approve_word(&argv) {
                eprintln!("note: {note}");
            }
            return Ok(with_json_shorthand(cli));
        }
        Err(error) => error,
    };
    if error.kind() == ErrorKind::MissingRequiredArgument && !std::io::stdin().is_terminal() {
        let mut from_stdin = argv.clone();
        from_stdin.push("-".into());
        if let Ok(cli) = Cli::try_parse_from(&from_stdin)
            && matches!(&cli.command, Command::Run(run) if run.prompt.as_deref() == Some("-"))
        {
            return Ok(with_json_shorthand(cli));
        }
    }
    if error.use_stderr() && asks_for_jsonl(&argv) {
        crate::output::print_error_event("config", &summary(&error.to_string()));
    }
    // Nothing sensible is left to do should stderr be closed.
    let _ = error.print();
    Err(std::process::ExitCode::from(
        u8::try_from(error.exit_code()).unwrap_or(2),
    ))
}

/// `oxydra` with no subcommand (only `-v` flags) on a terminal is `oxydra chat`, as
/// codex and Claude Code start a conversation; anywhere else (a script, a pipe) it
/// still prints the usage, so nothing waits for input no one will type.
fn chat_when_bare(mut argv: Vec<OsString>, on_a_terminal: bool) -> Vec<OsString> {
    let bare = argv.iter().skip(1).all(|arg| {
        arg.to_str().is_some_and(|arg| {
            arg == "--verbose"
                || (arg.len() > 1
                    && arg
                        .strip_prefix('-')
                        .is_some_and(|vs| vs.bytes().all(|b| b == b'v')))
        })
    });
    if on_a_terminal && bare {
        argv.push("chat".into());
    }
    argv
}

/// A note when `--approve` is given an older word (`always`, `never`): it still works,
/// and the note names the word that replaced it, so no one reads `never` as codex's
/// "never ask".
fn older_approve_word(argv: &[OsString]) -> Option<String> {
    let value = argv.iter().enumerate().find_map(|(index, arg)| {
        let arg = arg.to_str()?;
        match arg.strip_prefix("--approve") {
            Some("") => argv.get(index + 1)?.to_str(),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        }
    })?;
    let new = oxydra_config::ApproveMode::renamed(value)?;
    Some(format!(
        "`--approve {value}` is now spelled `--approve {new}` (the older word still works)"
    ))
}

/// Whether the command line holds `--output jsonl` (or `--output=jsonl`, or `--json`).
fn asks_for_jsonl(argv: &[OsString]) -> bool {
    argv.iter().enumerate().any(|(index, arg)| {
        arg == "--output=jsonl"
            || arg == "--json"
            || (arg == "--output" && argv.get(index + 1).is_some_and(|next| next == "jsonl"))
    })
}

/// `--json` is `--output jsonl`.
fn with_json_shorthand(mut cli: Cli) -> Cli {
    let (json, output) = match &mut cli.command {
        Command::Run(args) => (args.options.json, &mut args.options.output),
        Command::Chat(args) => (args.options.json, &mut args.options.output),
        Command::Sessions(Deferred(SessionsArgs {
            action: SessionsAction::List(list),
        })) => (list.options.json, &mut list.options.output),
        Command::Sessions(Deferred(SessionsArgs {
            action: SessionsAction::Show { options, .. },
        })) => (options.json, &mut options.output),
        Command::Agents(Deferred(AgentsArgs {
            action: AgentsAction::List(options),
        })) => (options.json, &mut options.output),
        Command::Mcp(Deferred(McpArgs {
            action: McpAction::List(options),
        })) => (options.json, &mut options.output),
        _ => return cli,
    };
    if json {
        *output = OutputFormat::Jsonl;
    }
    cli
}

/// A clap error on one line: its message, without the `error: ` prefix, the usage
/// and the hint that follow it.
fn summary(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|line| !line.is_empty() && !line.starts_with("Usage:"))
        .collect();
    let joined = lines.join(" ");
    joined
        .strip_prefix("error: ")
        .map_or_else(|| joined.clone(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_approve_word_gets_a_note_and_the_new_words_none() {
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let note = older_approve_word(&argv(&["oxydra", "run", "--approve", "never", "x"]));
        assert_eq!(
            note.as_deref(),
            Some("`--approve never` is now spelled `--approve deny` (the older word still works)")
        );
        let note = older_approve_word(&argv(&["oxydra", "serve", "--approve=always"])).unwrap();
        assert!(note.contains("`--approve allow`"), "{note}");
        for quiet in [
            &["oxydra", "run", "--approve", "deny", "x"][..],
            &["oxydra", "run", "--approve=allow", "x"],
            &["oxydra", "run", "never mind"],
            &["oxydra", "run", "--approve"],
        ] {
            assert_eq!(older_approve_word(&argv(quiet)), None, "{quiet:?}");
        }
    }

    #[test]
    fn a_clap_error_is_summarised_on_one_line() {
        let error = Cli::try_parse_from(["oxydra", "run"]).unwrap_err();
        let line = summary(&error.to_string());
        assert!(line.contains("<PROMPT>"), "{line}");
        assert!(!line.contains('\n') && !line.contains("Usage"), "{line}");
        assert!(!line.starts_with("error:"), "{line}");
    }

    #[test]
    fn a_bare_oxydra_on_a_terminal_is_chat_and_elsewhere_the_usage() {
        let argv = |args: &[&str]| args.iter().map(OsString::from).collect::<Vec<_>>();
        for bare in [
            &["oxydra"][..],
            &["oxydra", "-v"],
            &["oxydra", "-vv", "--verbose"],
        ] {
            let chat = chat_when_bare(argv(bare), true);
            assert_eq!(chat.last().unwrap(), "chat", "{bare:?}");
            assert!(matches!(
                Cli::try_parse_from(&chat).unwrap().command,
                Command::Chat(_)
            ));
            assert_eq!(chat_when_bare(argv(bare), false), argv(bare));
        }
        for not_bare in [
            &["oxydra", "run", "hi"][..],
            &["oxydra", "--help"],
            &["oxydra", "-V"],
            &["oxydra", "-"],
        ] {
            assert_eq!(chat_when_bare(argv(not_bare), true), argv(not_bare));
        }
    }

    #[test]
    fn jsonl_is_found_in_both_spellings() {
        let argv = |args: &[&str]| args.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(asks_for_jsonl(&argv(&[
            "oxydra", "run", "--output", "jsonl"
        ])));
        assert!(asks_for_jsonl(&argv(&["oxydra", "run", "--output=jsonl"])));
        assert!(!asks_for_jsonl(&argv(&[
            "oxydra", "run", "--output", "text", "jsonl"
        ])));
        assert!(!asks_for_jsonl(&argv(&["oxydra", "run", "jsonl"])));
    }
}
