//! The command line: subcommands and options of `oxydra` (docs/cli.md).

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand, ValueEnum};

use oxydra::tools::SandboxMode;

use crate::config::{ApproveMode, Effort, OpenAiApi, ProviderKind};

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

/// Parses the command line `argv` (the program name first).
///
/// `oxydra run` without a prompt reads it from stdin when stdin is not a terminal
/// (`echo hi | oxydra run`). A command line clap refuses is reported as clap does, exit
/// 2; with `--output jsonl` the closing `error` event is printed on stdout as well.
/// `Err` holds the exit code (0 for `--help` and `--version`).
pub fn parse(argv: Vec<OsString>) -> Result<Cli, std::process::ExitCode> {
    let error = match Cli::try_parse_from(&argv) {
        Ok(cli) => return Ok(cli.with_json_shorthand()),
        Err(error) => error,
    };
    if error.kind() == ErrorKind::MissingRequiredArgument && !std::io::stdin().is_terminal() {
        let mut from_stdin = argv.clone();
        from_stdin.push("-".into());
        if let Ok(cli) = Cli::try_parse_from(&from_stdin)
            && matches!(&cli.command, Command::Run(run) if run.prompt.as_deref() == Some("-"))
        {
            return Ok(cli.with_json_shorthand());
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

/// Whether the command line holds `--output jsonl` (or `--output=jsonl`, or `--json`).
fn asks_for_jsonl(argv: &[OsString]) -> bool {
    argv.iter().enumerate().any(|(index, arg)| {
        arg == "--output=jsonl"
            || arg == "--json"
            || (arg == "--output" && argv.get(index + 1).is_some_and(|next| next == "jsonl"))
    })
}

impl Cli {
    /// `--json` is `--output jsonl`.
    fn with_json_shorthand(mut self) -> Self {
        let (json, output) = match &mut self.command {
            Command::Run(args) => (args.options.json, &mut args.options.output),
            Command::Chat(args) => (args.options.json, &mut args.options.output),
            Command::Sessions(SessionsArgs {
                action: SessionsAction::List(list),
            }) => (list.options.json, &mut list.options.output),
            Command::Sessions(SessionsArgs {
                action: SessionsAction::Show { options, .. },
            }) => (options.json, &mut options.output),
            Command::Agents(AgentsArgs {
                action: AgentsAction::List(options),
            }) => (options.json, &mut options.output),
            Command::Mcp(McpArgs {
                action: McpAction::List(options),
            }) => (options.json, &mut options.output),
            _ => return self,
        };
        if json {
            *output = OutputFormat::Jsonl;
        }
        self
    }
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

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task and exit when the agent yields its answer.
    Run(RunArgs),
    /// An interactive session (same options as `run`).
    Chat(ChatArgs),
    /// Stored sessions and their messages.
    Sessions(SessionsArgs),
    /// Agent blueprints of the configuration (`[[agents]]`).
    Agents(AgentsArgs),
    /// Serve the coordinator HTTP API: list agents, start, inspect and cancel runs.
    Serve(ServeArgs),
    /// MCP servers of the configuration (`[[mcp_servers]]`).
    Mcp(McpArgs),
    /// Redact secrets from FILE (or stdin) to stdout.
    Scrub(ScrubArgs),
    /// Trust a project configuration file (`./oxydra.toml`), so that its settings
    /// that grant power (MCP servers, `approve`, allow-lists …) apply.
    Trust(TrustArgs),
    /// Write a commented configuration file to start from (default the user config
    /// file); its provider follows the API key found in the environment.
    Init(InitArgs),
}

impl Command {
    /// Whether stdout carries runtime events as JSON lines (`run` / `chat` with
    /// `--output jsonl`).
    pub fn prints_events_as_jsonl(&self) -> bool {
        match self {
            Self::Run(args) => args.options.output == OutputFormat::Jsonl,
            Self::Chat(args) => args.options.output == OutputFormat::Jsonl,
            _ => false,
        }
    }
}

/// How events and listings are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// For people.
    #[default]
    Text,
    /// For programs: one JSON object per line.
    Jsonl,
}

/// Options shared by `run` and `chat`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// Configuration file, read alone (default: the user config file, with `./oxydra.toml`
    /// layered over it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The provider's wire format.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// Base URL of the provider (e.g. `http://localhost:11434/v1` for Ollama).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model: its name at the provider, or for the embedded model a `PATH.gguf`
    /// file or `hf:OWNER/REPO/FILE.gguf` (downloaded once into the data dir).
    #[arg(short, long, value_name = "NAME")]
    pub model: Option<String>,
    /// Which OpenAI API to speak (provider `openai` only; default `chat`).
    #[arg(long, value_enum)]
    pub api: Option<OpenAiApi>,
    /// How hard an OpenAI reasoning model thinks (provider `openai` only; default: the
    /// model's own).
    #[arg(long, value_enum, value_name = "EFFORT")]
    pub reasoning_effort: Option<Effort>,
    /// Most tokens the model may spend thinking (Anthropic extended thinking: at least
    /// 1024; Gemini `thinkingBudget`); off unless set.
    #[arg(long, value_name = "TOKENS")]
    pub thinking_budget: Option<u32>,
    /// Continue a stored session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Continue the most recently used stored session of this workspace.
    #[arg(long = "continue", conflicts_with = "session")]
    pub continue_latest: bool,
    /// SQLite file (default in the user data dir).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Root of the file tools (default the current dir).
    #[arg(short = 'C', long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Most turns (provider calls) per task (default 8).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<usize>,
    /// Most cost per task, in US dollars (the model's price must be known: built in,
    /// or `[pricing."MODEL"]` in the configuration).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Most seconds one turn may take (default 120).
    #[arg(long, value_name = "SECS")]
    pub turn_timeout: Option<u64>,
    /// Whether the model must call a tool: `auto` (it decides), `none`, `required`, or
    /// a tool's name. Unset: `auto`, except with a small local model (under 1B
    /// parameters), whose first turn must call a tool and whose next turns answer.
    #[arg(long, value_name = "auto|none|required|TOOL")]
    pub tool_choice: Option<String>,
    /// How to answer requests for consent (default `ask`; `never` when stdin is not a terminal).
    #[arg(long, value_enum)]
    pub approve: Option<ApproveMode>,
    /// What commands (`shell_exec`) may write: `read-only`, `workspace-write` (default:
    /// the workspace and a private temp dir) or `full-access` (no sandbox).
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// How to print the run: `text` streams the answer to stdout and the tool lines,
    /// progress and a closing summary to stderr; `jsonl` prints every event of the
    /// runtime on stdout, one JSON object per line, ending with `final` or `error`.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Short for `--output jsonl`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

/// `oxydra run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
    /// Print the effective configuration (TOML, secrets masked) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// A JSON Schema file the final answer must satisfy: the model answers through a
    /// `final_answer` tool, invalid answers go back to it, and the `final` event
    /// carries the value as `output`.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// The task (`-`, or none with stdin not a terminal, reads it from stdin).
    #[arg(required_unless_present = "print_config")]
    pub prompt: Option<String>,
}

/// `oxydra chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
    /// Print the effective configuration (TOML, secrets masked) and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// `oxydra sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// list, show or delete.
    #[command(subcommand)]
    pub action: SessionsAction,
}

/// `oxydra sessions list|show|delete`.
#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// One line per stored session, the most recently used first.
    List(SessionsListArgs),
    /// The stored messages of one session.
    Show {
        /// The session id.
        id: String,
        /// Options.
        #[command(flatten)]
        options: ListOptions,
    },
    /// Delete one session and everything stored with it.
    Delete {
        /// The session id.
        id: String,
        /// Options.
        #[command(flatten)]
        options: DatabaseOptions,
    },
}

/// `oxydra sessions list`.
#[derive(Debug, Clone, Args)]
pub struct SessionsListArgs {
    /// Options.
    #[command(flatten)]
    pub options: ListOptions,
    /// List at most N sessions (the most recently used).
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<usize>,
}

/// Where `sessions delete` finds the database.
#[derive(Debug, Clone, Args)]
pub struct DatabaseOptions {
    /// Configuration file (default `./oxydra.toml` if present, else the user config
    /// dir; its `[memory] db` is used unless `--db` is given).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// SQLite file or `postgres://` URL (default in the user data dir).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DatabaseOptions {
    /// As the listing commands' options (which print nothing of their own here).
    pub fn list_options(&self) -> ListOptions {
        ListOptions {
            config: self.config.clone(),
            db: self.db.clone(),
            output: OutputFormat::Text,
            json: false,
        }
    }
}

/// Options of the listing commands: `sessions list|show`, `agents list`, `mcp list`.
#[derive(Debug, Clone, Args)]
pub struct ListOptions {
    /// Configuration file, read alone (default: the user config file, with `./oxydra.toml`
    /// layered over it; its `[memory] db` is used unless `--db` is given).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// SQLite file (default in the user data dir).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// How to print the listing on stdout: `text`, one line per session, message,
    /// agent or server listed, for people; `jsonl`, the same as one JSON object per line.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Short for `--output jsonl`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

impl ListOptions {
    /// As the options the configuration merge takes.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            config: self.config.clone(),
            db: self.db.clone(),
            ..RunOptions::default()
        }
    }
}

/// `oxydra agents`.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: AgentsAction,
}

/// `oxydra agents list`.
#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Every blueprint with its type and parameters schema, as `GET /agents` returns them.
    List(ListOptions),
}

/// `oxydra mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: McpAction,
}

/// `oxydra mcp list`.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Starts each configured server, shows its state and its tools, and stops it.
    List(ListOptions),
    /// Serves the coordinator to MCP clients: list blueprints, start, watch and cancel runs.
    Serve(McpServeArgs),
}

/// `oxydra mcp serve`.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// The MCP transport: JSON-RPC lines on stdin/stdout, or streamable HTTP at `/mcp`
    /// on `--addr` (with the guards of `oxydra serve`).
    #[arg(long, value_enum, default_value_t = McpTransport::Stdio)]
    pub transport: McpTransport,
    /// Serve streamable HTTP on this address: `--transport http --addr ADDR`.
    #[arg(long, value_name = "ADDR", conflicts_with = "addr")]
    pub listen: Option<String>,
    /// Built-in tools to serve next to the coordinator's (`file_read,file_list`),
    /// confined to the workspace as in `oxydra run`.
    #[arg(long, value_name = "TOOLS")]
    pub tools: Option<String>,
    /// The coordinator's settings, as for `oxydra serve`.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// How `oxydra mcp serve` talks to its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpTransport {
    /// Newline-delimited JSON-RPC on stdin and stdout (the client starts the server).
    Stdio,
    /// MCP's streamable HTTP at `http://ADDR/mcp` (clients connect to a running server).
    Http,
}

/// How `serve` answers requests for consent: it has no terminal to ask at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeApprove {
    /// Deny every request (the default).
    Never,
    /// Grant every request.
    Always,
}

impl From<ServeApprove> for ApproveMode {
    fn from(answer: ServeApprove) -> Self {
        match answer {
            ServeApprove::Never => Self::Never,
            ServeApprove::Always => Self::Always,
        }
    }
}

/// `oxydra serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default `[serve] addr`, else `127.0.0.1:8080`; port 0 picks one).
    #[arg(long, value_name = "ADDR")]
    pub addr: Option<String>,
    /// Configuration file, read alone (default: the user config file, with `./oxydra.toml`
    /// layered over it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The provider's wire format for AI agents.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// Base URL of the provider of AI agents.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model of AI agents without a model of their own (a name at the provider, or
    /// a `PATH.gguf` / `hf:OWNER/REPO/FILE.gguf` for the embedded model).
    #[arg(short, long, value_name = "NAME")]
    pub model: Option<String>,
    /// SQLite file for runs and sessions (default in the user data dir).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Root of the file tools (default the current dir).
    #[arg(short = 'C', long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// How requests for consent are answered: nobody is at a terminal to ask, so
    /// `never` (the default) denies them and `always` grants them.
    #[arg(long, value_enum)]
    pub approve: Option<ServeApprove>,
    /// What commands (`shell_exec`, deterministic shell steps) may write: `read-only`,
    /// `workspace-write` (default) or `full-access` (no sandbox).
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// Serve a non-loopback address (`0.0.0.0:8080`, a LAN IP) without a bearer token:
    /// anyone who can reach it may start runs.
    #[arg(long)]
    pub insecure_no_auth: bool,
}

impl ServeArgs {
    /// As the options the configuration merge takes.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            config: self.config.clone(),
            provider: self.provider,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            db: self.db.clone(),
            workspace: self.workspace.clone(),
            approve: self.approve.map(ApproveMode::from),
            sandbox: self.sandbox,
            ..RunOptions::default()
        }
    }
}

/// `oxydra trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The file (default `./oxydra.toml`).
    #[arg(value_name = "FILE", conflicts_with = "list")]
    pub file: Option<PathBuf>,
    /// Forget the file instead: its settings that grant power are ignored again.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List the trusted files, each `trusted`, `changed` or `missing`.
    #[arg(long)]
    pub list: bool,
}

/// `oxydra init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The file to write (default `<user config dir>/oxydra/config.toml`).
    #[arg(value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Overwrite the file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `oxydra scrub`.
#[derive(Debug, Args)]
pub struct ScrubArgs {
    /// File to scrub (default stdin).
    pub file: Option<PathBuf>,
    /// Print `{"text", "redactions":[{start,end,kind}]}` instead of the text.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
        assert_eq!(run.options.provider, Some(ProviderKind::Anthropic));
        assert_eq!(run.options.max_turns, Some(3));
        assert_eq!(run.options.approve, Some(ApproveMode::Always));
        assert_eq!(run.options.output, OutputFormat::Jsonl);
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
    fn a_clap_error_is_summarised_on_one_line() {
        let error = Cli::try_parse_from(["oxydra", "run"]).unwrap_err();
        let line = summary(&error.to_string());
        assert!(line.contains("<PROMPT>"), "{line}");
        assert!(!line.contains('\n') && !line.contains("Usage"), "{line}");
        assert!(!line.starts_with("error:"), "{line}");
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

    #[test]
    fn trust_parses_and_its_modes_exclude_each_other() {
        let cli = Cli::try_parse_from(["oxydra", "trust"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Trust(TrustArgs {
                file: None,
                revoke: false,
                list: false
            })
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
            Command::Sessions(SessionsArgs {
                action: SessionsAction::Show { .. }
            })
        ));
        let cli = Cli::try_parse_from(["oxydra", "-vv", "scrub", "--json"]).unwrap();
        assert_eq!(cli.verbose, 2);
        assert!(matches!(
            cli.command,
            Command::Scrub(ScrubArgs { json: true, .. })
        ));
    }
}
