//! `oxydra init`.

use std::path::PathBuf;

use clap::Args;

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
