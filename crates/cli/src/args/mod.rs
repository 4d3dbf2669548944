//! The command line: subcommands and options of `oxydra` (docs/cli.md), as clap types
//! only, one module per subcommand. [`crate::parse`] turns `argv` into a [`Cli`];
//! [`crate::config`] resolves them with the file and the environment.

mod agents;
mod deferred;
mod eval;
mod init;
mod list;
mod mcp;
mod remote;
mod replay;
mod run;
mod scrub;
mod serve;
mod sessions;
mod trust;
mod values;

use clap::{Parser, Subcommand};

pub use agents::{AgentsAction, AgentsArgs};
pub use deferred::Deferred;
pub use eval::EvalArgs;
pub use init::InitArgs;
pub use list::ListOptions;
pub use mcp::{McpAction, McpArgs, McpServeArgs, McpTransport};
pub use remote::{
    ApprovalsAction, ApprovalsArgs, RunsAction, RunsArgs, RunsListArgs, ServerOptions,
};
pub use replay::ReplayArgs;
pub use run::{ChatArgs, RunArgs, RunOptions};
pub use scrub::ScrubArgs;
pub use serve::ServeArgs;
pub use sessions::{SessionsAction, SessionsArgs, SessionsListArgs, UndoArgs};
pub use trust::TrustArgs;
pub use values::{Effort, OpenAiApi, OutputFormat};

/// `oxydra`: run tool-using LLM agents from the terminal.
#[derive(Debug, Parser)]
#[command(name = "oxydra", version, about, long_about = None)]
pub struct Cli {
    /// More log output on stderr (`-v` debug, `-vv` trace); `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task and exit when the agent yields its answer.
    Run(Deferred<RunArgs>),
    /// An interactive session (same options as `run`).
    Chat(Deferred<ChatArgs>),
    /// Stored sessions and their messages.
    Sessions(Deferred<SessionsArgs>),
    /// Undo the last turn that changed the workspace (of its newest session); run
    /// again, it does the turn again.
    Undo(Deferred<UndoArgs>),
    /// Agent blueprints of the configuration (`[[agents]]`).
    Agents(Deferred<AgentsArgs>),
    /// Serve the coordinator HTTP API: list agents, start, inspect and cancel runs.
    Serve(Deferred<ServeArgs>),
    /// Runs of a running `oxydra serve` (`--server URL`): list, show, watch, cancel.
    Runs(Deferred<RunsArgs>),
    /// Tool calls waiting for a person on a running `oxydra serve`: list, approve,
    /// deny.
    Approvals(Deferred<ApprovalsArgs>),
    /// MCP servers of the configuration (`[[mcp_servers]]`).
    Mcp(Deferred<McpArgs>),
    /// Re-run a stored session's prompts against a model: recorded outputs answer
    /// matching tool calls, the two runs side by side (a new session; nothing in the
    /// workspace changes).
    Replay(Deferred<ReplayArgs>),
    /// Run an eval suite: tasks scored by their outcome, each run K times, as a
    /// table, JSON or JUnit XML.
    Eval(Deferred<EvalArgs>),
    /// Redact secrets from FILE (or stdin) to stdout.
    Scrub(Deferred<ScrubArgs>),
    /// Trust a project configuration file (`./oxydra.toml`), so that its settings
    /// that grant power (MCP servers, `approve`, allow-lists …) apply.
    Trust(Deferred<TrustArgs>),
    /// Write a commented configuration file to start from (default the user config
    /// file); its provider follows the API key found in the environment.
    Init(Deferred<InitArgs>),
}

impl Command {
    /// Whether stdout carries runtime events as JSON lines (`run` / `chat` with
    /// `--output jsonl`).
    pub fn prints_events_as_jsonl(&self) -> bool {
        match self {
            Self::Run(args) => args.options.output == OutputFormat::Jsonl,
            Self::Chat(args) => args.options.output == OutputFormat::Jsonl,
            Self::Replay(args) => args.options.output == OutputFormat::Jsonl,
            _ => false,
        }
    }

    /// Whether a person reads what this command prints as it runs: `run` and `chat`
    /// with text output (their logs keep to errors by default, see `logging`).
    pub fn answers_a_person(&self) -> bool {
        match self {
            // `--json` was folded into `output` by the parse.
            Self::Run(args) => args.options.output == OutputFormat::Text,
            Self::Chat(args) => args.options.output == OutputFormat::Text,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use oxydra_config::{ApproveMode, ProviderKind};

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_every_option() {
        let cli = Cli::try_parse_from([
            "oxydra",
            "run",
            "--config",
            "c.toml",
            "--provider",
            "anthropic",
            "--base-url",
            "http://x",
            "--model",
            "m",
            "--session",
            "ses_1",
            "--db",
            "d.db",
            "--workspace",
            "w",
            "--max-turns",
            "3",
            "--max-cost",
            "0.5",
            "--turn-timeout",
            "9",
            "--approve",
            "always",
            "--output",
            "jsonl",
            "do it",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.prompt.as_deref(), Some("do it"));
        assert_eq!(run.options.provider, ProviderKind::from_name("anthropic"));
        assert_eq!(run.options.max_turns, Some(3));
        assert_eq!(run.options.approve, Some(ApproveMode::Allow));
        assert_eq!(run.options.output, OutputFormat::Jsonl);
    }

    #[test]
    fn serve_takes_ask_deny_and_allow_with_their_older_words_and_nothing_else() {
        for (word, mode) in [
            ("ask", ApproveMode::Ask),
            ("deny", ApproveMode::Deny),
            ("allow", ApproveMode::Allow),
            ("never", ApproveMode::Deny),
            ("always", ApproveMode::Allow),
        ] {
            let cli = Cli::try_parse_from(["oxydra", "serve", "--approve", word]).unwrap();
            let Command::Serve(serve) = cli.command else {
                panic!("not serve")
            };
            assert_eq!(serve.run_options().approve, Some(mode));
        }
        assert!(Cli::try_parse_from(["oxydra", "serve", "--approve", "later"]).is_err());
        assert!(Cli::try_parse_from(["oxydra", "serve", "--approve"]).is_err());
    }

    #[test]
    fn run_needs_a_prompt_unless_printing_config() {
        assert!(Cli::try_parse_from(["oxydra", "run"]).is_err());
        assert!(Cli::try_parse_from(["oxydra", "run", "--print-config"]).is_ok());
        assert!(Cli::try_parse_from(["oxydra", "run", "--max-turns", "x", "p"]).is_err());
    }

    #[test]
    fn max_cost_takes_a_negative_number_for_the_merge_to_refuse() {
        let cli = Cli::try_parse_from(["oxydra", "run", "--max-cost", "-1", "p"]).unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.options.max_cost, Some(-1.0));
    }

    #[test]
    fn trust_parses_and_its_modes_exclude_each_other() {
        let cli = Cli::try_parse_from(["oxydra", "trust"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Trust(Deferred(TrustArgs {
                file: None,
                revoke: false,
                list: false
            }))
        ));
        let cli = Cli::try_parse_from(["oxydra", "trust", "--revoke", "x.toml"]).unwrap();
        let Command::Trust(args) = cli.command else {
            panic!("not trust")
        };
        assert!(args.revoke);
        assert_eq!(args.file.as_deref(), Some(std::path::Path::new("x.toml")));
        assert!(Cli::try_parse_from(["oxydra", "trust", "--list", "x.toml"]).is_err());
        assert!(Cli::try_parse_from(["oxydra", "trust", "--list", "--revoke"]).is_err());
    }

    #[test]
    fn sessions_and_scrub_parse() {
        let cli = Cli::try_parse_from(["oxydra", "sessions", "show", "ses_1", "--output", "jsonl"])
            .unwrap();
        assert!(matches!(
            cli.command,
            Command::Sessions(Deferred(SessionsArgs {
                action: SessionsAction::Show { .. }
            }))
        ));
        let cli = Cli::try_parse_from(["oxydra", "-vv", "scrub", "--json"]).unwrap();
        assert_eq!(cli.verbose, 2);
        assert!(matches!(
            cli.command,
            Command::Scrub(Deferred(ScrubArgs { json: true, .. }))
        ));
    }
}
