//! `oxydra agents list`.

use clap::{Args, Subcommand};

use super::list::ListOptions;

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
