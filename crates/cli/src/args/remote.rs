//! `oxydra runs list|show|watch|cancel` and `oxydra approvals list|approve|deny`: the
//! client of a running `oxydra serve`.

use clap::{Args, Subcommand};

use super::values::OutputFormat;

/// Where the server is and how to print what it answers.
#[derive(Debug, Clone, Args)]
pub struct ServerOptions {
    /// The `oxydra serve` to ask (default `$OXYDRA_SERVER`, else
    /// http://127.0.0.1:8080). Its bearer token is read from `OXYDRA_TOKEN`.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// `text` for people; `jsonl`, one JSON object per line.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Short for `--output jsonl`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

impl ServerOptions {
    /// The output format, `--json` counted.
    pub fn format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Jsonl
        } else {
            self.output
        }
    }
}

/// `oxydra runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: RunsAction,
}

/// `oxydra runs list|show|watch|cancel`.
#[derive(Debug, Subcommand)]
pub enum RunsAction {
    /// Runs of the server, newest first.
    List(RunsListArgs),
    /// One run: status, result or error, usage, pending approvals.
    Show {
        /// The run id.
        id: String,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
    /// Follow a run as it happens (its transcript and status) until it ends.
    Watch {
        /// The run id.
        id: String,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
    /// Cancel a run that has not ended.
    Cancel {
        /// The run id.
        id: String,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
    /// What a run changed in the workspace, per turn: each path, its kind of change
    /// and its diff.
    Changes {
        /// The run id.
        id: String,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
    /// Take back what a run changed in the workspace (once it has ended). A file
    /// changed since by someone else is not overwritten unless --force.
    Revert {
        /// The run id.
        id: String,
        /// Take the files back to the state before this turn (from 1; default: before
        /// the run).
        #[arg(long = "to", value_name = "N")]
        to: Option<u64>,
        /// Overwrite files changed since by someone else.
        #[arg(long)]
        force: bool,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
}

/// `oxydra runs list`.
#[derive(Debug, Args)]
pub struct RunsListArgs {
    /// Only runs with this status (`pending`, `running`, `waiting_approval`,
    /// `completed`, `failed`, `cancelled`).
    #[arg(long)]
    pub status: Option<String>,
    /// Only runs of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only runs created since: Unix milliseconds or a duration back (`15m`, `2h`,
    /// `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// At most N runs (1 to 500, default 50).
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<u32>,
    /// Continue after a previous page (the cursor it printed).
    #[arg(long)]
    pub cursor: Option<String>,
    /// Options.
    #[command(flatten)]
    pub options: ServerOptions,
}

/// `oxydra approvals`.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ApprovalsAction,
}

/// `oxydra approvals list|approve|deny`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsAction {
    /// Tool calls waiting for a person, oldest first, with what each will do.
    List {
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
    /// Let a waiting call run; its run goes on.
    Approve {
        /// The approval id (unique across runs).
        id: String,
        /// Approve every call its scope covers for the rest of the session, not just
        /// this one.
        #[arg(long)]
        for_session: bool,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
    /// Refuse a waiting call; the run's model reads the reason.
    Deny {
        /// The approval id (unique across runs).
        id: String,
        /// Why (the model reads it).
        #[arg(long)]
        reason: Option<String>,
        /// Options.
        #[command(flatten)]
        options: ServerOptions,
    },
}
