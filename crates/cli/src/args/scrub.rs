//! `oxydra scrub`.

use std::path::PathBuf;

use clap::Args;

/// `oxydra scrub`.
#[derive(Debug, Args)]
pub struct ScrubArgs {
    /// File to scrub (default stdin).
    pub file: Option<PathBuf>,
    /// Print `{"text", "redactions":[{start,end,kind}]}` instead of the text.
    #[arg(long)]
    pub json: bool,
}
