//! `oxydra sessions list | show | delete`.

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
