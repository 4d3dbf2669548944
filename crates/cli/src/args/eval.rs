//! `oxydra eval SUITE.toml`.

use std::path::PathBuf;

use clap::Args;

use super::values::{OutputFormat, ProviderKind};

/// `oxydra eval`: the options of an eval.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// The suite file (TOML: `[[task]]` tables with a prompt, a fixture and checks).
    #[arg(value_name = "SUITE.toml")]
    pub suite: PathBuf,
    /// Runs per task (default the suite's `[defaults] runs`, else 1).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// At most this many runs at once (default 1).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Run the suite a second time with another set-up and show both side by side:
    /// a configuration file (an existing path) or else a model name.
    #[arg(long, value_name = "CFG_OR_MODEL")]
    pub compare: Option<String>,
    /// Exit 1 when any task's success rate, or the suite's, is below RATE (0 to 1).
    #[arg(long, value_name = "RATE")]
    pub threshold: Option<f64>,
    /// Only the tasks whose name contains TEXT or that carry the tag TEXT.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// Write the report as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the report as JUnit XML to PATH.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// `text`: progress on stderr and the table on stdout; `jsonl`: a `eval_run` line
    /// per finished run and an `eval_report` line per set-up, on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Configuration file, read alone (as for `run`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The provider's wire format.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// Base URL of the provider.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model (for the embedded model a `PATH.gguf` file).
    #[arg(short, long, value_name = "NAME")]
    pub model: Option<String>,
}
