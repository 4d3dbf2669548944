//! `oxydra run` and `oxydra chat`: the options of a run.

use std::path::PathBuf;

use clap::Args;
use oxydra::tools::SandboxMode;

use super::values::{ApproveMode, Effort, OpenAiApi, OutputFormat, ProviderKind, db_help};

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
    /// The environment variable holding the provider's API key (default: the kind's own,
    /// e.g. `OPENAI_API_KEY`, which is not sent to a `--base-url` of another host).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
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
    /// SQLite file or a storage backend's URL (default in the user data dir).
    #[arg(long, value_name = "PATH", help = db_help("(default in the user data dir)"))]
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
    /// Most seconds one turn may take, a fraction allowed (`0.5`) (default 120).
    #[arg(long, value_name = "SECS")]
    pub turn_timeout: Option<f64>,
    /// Whether the model must call a tool: `auto` (it decides), `none`, `required`, or
    /// a tool's name. Unset: `auto`, except with a small local model (under 1B
    /// parameters), whose first turn must call a tool and whose next turns answer.
    #[arg(long, value_name = "auto|none|required|TOOL")]
    pub tool_choice: Option<String>,
    /// How to answer requests for consent: `ask` (the default), `deny` (the default when
    /// stdin is not a terminal) or `allow` (older words `never` and `always` are read too).
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
    /// Leave out the project instructions (the agents' instruction files of the
    /// workspace and its parents up to the repository root, otherwise added to the
    /// system prompt).
    #[arg(long)]
    pub no_project_instructions: bool,
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
    /// Attach an image (PNG, JPEG, GIF, WebP) or a PDF to the prompt; repeatable (at
    /// most 16 files, each at most 20 MiB). The kind is read from the file's bytes,
    /// never its name. `--attach` is another name for it.
    #[arg(long, visible_alias = "attach", value_name = "FILE")]
    pub image: Vec<PathBuf>,
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
