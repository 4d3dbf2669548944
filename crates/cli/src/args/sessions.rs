//! `oxydra sessions list | show | delete`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::list::{DatabaseOptions, ListOptions};

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
    /// Put the files and the conversation back as they were before turn N (the Nth
    /// prompt): every checkpoint from that turn on is restored, and the messages from
    /// its prompt on are deleted.
    Rewind {
        /// The session id.
        id: String,
        /// The turn to go back to (from 1).
        #[arg(long, value_name = "N")]
        to: u64,
        /// Overwrite files changed since the checkpoint without asking.
        #[arg(long)]
        force: bool,
        /// Options.
        #[command(flatten)]
        options: DatabaseOptions,
    },
    /// A new session with the conversation before turn N; files are not touched.
    Fork {
        /// The session id.
        id: String,
        /// The turn the new session starts from (from 1; it holds the turns before).
        #[arg(long, value_name = "N")]
        at: u64,
        /// Options.
        #[command(flatten)]
        options: DatabaseOptions,
    },
    /// What the session's turns changed in the workspace (each checkpoint).
    Diff {
        /// The session id.
        id: String,
        /// Only this turn.
        #[arg(long, value_name = "N")]
        turn: Option<u64>,
        /// Options.
        #[command(flatten)]
        options: DatabaseOptions,
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
    /// List the sessions of every workspace (default: those of this one).
    #[arg(long, conflicts_with = "workspace")]
    pub all: bool,
    /// The workspace whose sessions are listed (default: the current directory).
    #[arg(short = 'C', long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// `oxydra undo`.
#[derive(Debug, Clone, Args)]
pub struct UndoArgs {
    /// The session (default: the newest session of the workspace).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The workspace whose newest session is undone (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Overwrite files changed since the checkpoint without asking.
    #[arg(long)]
    pub force: bool,
    /// Options.
    #[command(flatten)]
    pub options: DatabaseOptions,
}
