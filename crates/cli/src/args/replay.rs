//! `oxydra replay SESSION`: a stored session's prompts run again against a model.

use clap::Args;

use super::run::RunOptions;

/// `oxydra replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The session to replay: its id or a unique prefix of it.
    #[arg(value_name = "SESSION")]
    pub replayed: String,
    /// The first turn to replay, from 1; the turns before are copied as context.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub from: u64,
    /// Run the calls the recording does not have, in a scratch copy of the workspace
    /// (by default they are refused; the workspace itself is never changed).
    #[arg(long)]
    pub live: bool,
    /// Run options (`--model`, `--provider`, `--base-url`, `--config`, `--db`,
    /// `--output` …; `--session` and `--continue` do not apply).
    #[command(flatten)]
    pub options: RunOptions,
}
