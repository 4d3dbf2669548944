//! `oxydra serve`: the coordinator's HTTP API.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use oxydra::tools::SandboxMode;

use super::run::RunOptions;
use super::values::{ApproveMode, ProviderKind, db_help};

/// How `serve` answers requests for consent: it has no terminal to ask at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeApprove {
    /// Deny every request (older word: `never`).
    #[value(alias = "never")]
    Deny,
    /// Let the run wait (`waiting_approval`) until a person decides through
    /// `POST /runs/{id}/approvals/{approval_id}`.
    Ask,
    /// Allow every request (older word: `always`).
    #[value(alias = "always")]
    Allow,
}

impl From<ServeApprove> for ApproveMode {
    fn from(answer: ServeApprove) -> Self {
        match answer {
            ServeApprove::Deny => Self::Deny,
            ServeApprove::Ask => Self::Ask,
            ServeApprove::Allow => Self::Allow,
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
    /// The environment variable holding the provider's API key (default: the kind's own).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The model of AI agents without a model of their own (a name at the provider, or
    /// a `PATH.gguf` / `hf:OWNER/REPO/FILE.gguf` for the embedded model).
    #[arg(short, long, value_name = "NAME")]
    pub model: Option<String>,
    /// SQLite file or a storage backend's URL for runs and sessions (default in the user data dir).
    #[arg(long, value_name = "PATH", help = db_help("for runs and sessions (default in the user data dir)"))]
    pub db: Option<PathBuf>,
    /// Root of the file tools (default the current dir).
    #[arg(short = 'C', long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// How requests for consent are answered: nobody is at a terminal to ask, so
    /// `ask` (the default) lets the run wait for a decision over the API
    /// (`[serve] approval_ttl_secs`, default a day), `deny` denies them and `allow`
    /// grants them (older words `never` and `always` are read too).
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
    /// Do not serve the web console at `/` (served by default on loopback addresses).
    #[arg(long)]
    pub no_console: bool,
}

impl ServeArgs {
    /// As the options the configuration merge takes.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            config: self.config.clone(),
            provider: self.provider,
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            model: self.model.clone(),
            db: self.db.clone(),
            workspace: self.workspace.clone(),
            approve: self.approve.map(ApproveMode::from),
            sandbox: self.sandbox,
            ..RunOptions::default()
        }
    }
}
