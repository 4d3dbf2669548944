//! Options of the commands that read the configuration and the database to list
//! what they hold: `sessions`, `agents list`, `mcp list`.

use std::path::PathBuf;

use clap::Args;

use super::run::RunOptions;
use super::values::{OutputFormat, db_help};

/// Where `sessions delete` finds the database.
#[derive(Debug, Clone, Args)]
pub struct DatabaseOptions {
    /// Configuration file (default `./oxydra.toml` if present, else the user config
    /// dir; its `[memory] db` is used unless `--db` is given).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// SQLite file or a storage backend's URL (default in the user data dir).
    #[arg(long, value_name = "PATH", help = db_help("(default in the user data dir)"))]
    pub db: Option<PathBuf>,
}

impl DatabaseOptions {
    /// As the listing commands' options (which print nothing of their own here).
    pub fn list_options(&self) -> ListOptions {
        ListOptions {
            config: self.config.clone(),
            db: self.db.clone(),
            output: OutputFormat::Text,
            json: false,
        }
    }
}

/// Options of the listing commands: `sessions list|show`, `agents list`, `mcp list`.
#[derive(Debug, Clone, Args)]
pub struct ListOptions {
    /// Configuration file, read alone (default: the user config file, with `./oxydra.toml`
    /// layered over it; its `[memory] db` is used unless `--db` is given).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// SQLite file or a storage backend's URL (default in the user data dir).
    #[arg(long, value_name = "PATH", help = db_help("(default in the user data dir)"))]
    pub db: Option<PathBuf>,
    /// How to print the listing on stdout: `text`, one line per session, message,
    /// agent or server listed, for people; `jsonl`, the same as one JSON object per line.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Short for `--output jsonl`.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
}

impl ListOptions {
    /// As the options the configuration merge takes.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            config: self.config.clone(),
            db: self.db.clone(),
            ..RunOptions::default()
        }
    }
}
