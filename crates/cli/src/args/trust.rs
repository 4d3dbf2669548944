//! `oxydra trust`.

use std::path::PathBuf;

use clap::Args;

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
