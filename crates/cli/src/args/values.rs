//! Values of the flags: how output is printed, and the help of `--db`. The values the
//! flags share with the configuration file (provider kind, OpenAI API, reasoning effort,
//! how consent is answered) are `oxydra_config`'s.

use clap::ValueEnum;

pub use oxydra_config::{ApproveMode, Effort, OpenAiApi, ProviderKind};

/// How events and listings are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// For people.
    #[default]
    Text,
    /// For programs: one JSON object per line.
    Jsonl,
}

/// The help of `--db`: what the storage table accepts ("SQLite file or `postgres://`
/// URL"), then `rest`.
pub fn db_help(rest: &str) -> String {
    format!("{} {rest}", oxydra::storage::accepted())
}
