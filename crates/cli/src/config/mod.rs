//! Configuration on the command line: the file format, finding, layering and trust are
//! `oxydra_config`'s; here they are merged with the environment and the flags into the
//! [`Effective`] configuration a command uses.
//!
//! One direction, low to high: the files as `oxydra_config` reads them (`load`, which
//! shows its warnings), then the decisions: the database (`database`), the provider
//! (`provider_pick`, the kind's settings checked in `provider_checks`), the flags over
//! `[runtime]` (`run_settings`), what the service commands take from the environment
//! (`service`), where a running `serve` is for the client commands (`remote`) and
//! everything else (`merge`, which calls them). This is the one step
//! that reads flags and the environment: the builders in `setup` read neither. Nothing
//! here reaches into `setup` or `commands`.

mod database;
mod fallbacks;
mod held_secrets;
mod mask;
mod merge;
mod print;
mod protected;
mod provider_checks;
mod provider_pick;
mod remote;
mod run_settings;
pub mod sandbox;
mod service;

use std::path::Path;

pub use database::{Database, default_db_path};
pub use held_secrets::{HeldSecret, file_secret_handles, searchable};
pub use mask::masked_mcp_server;
pub use merge::{
    CheckpointSettings, Effective, Merged, ServiceConfig, current_provider, merge, merge_for_print,
    merge_service, resolve_checkpoints, resolve_database,
};
pub use oxydra_config::{
    ApproveMode, FileConfig, LoadedFile, OpenAiApi, Prices, ProviderKind, ProviderSection,
    launched_hashes, lookup_dirs, parse, strip_powers, trust, user_config_path,
};
pub use provider_pick::EffectiveProvider;
#[cfg(feature = "local")]
pub use provider_pick::models_dir;
pub use remote::{remote_error, server_client};
pub use service::auth_token;

use crate::error::CliError;

/// Reads an environment variable (a function so tests need not touch the real environment).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Locates and reads the configuration (`--config FILE` alone, else the user's file with
/// `./oxydra.toml` over it); the warnings (an untrusted project file, an unreadable trust
/// store) go to stderr, sanitized: they can name keys and paths of a project file.
pub fn load(explicit: Option<&Path>) -> Result<LoadedFile, CliError> {
    let (loaded, warnings) = load_quietly(explicit)?;
    print_warnings(&warnings);
    Ok(loaded)
}

/// [`load`], the warnings handed back instead of printed (for a caller whose error
/// would say the same: see `commands::run::effective`).
pub fn load_quietly(explicit: Option<&Path>) -> Result<(LoadedFile, Vec<String>), CliError> {
    let store = trust::default_store_path();
    Ok(oxydra_config::load_with(explicit, store.as_deref())?)
}

/// Prints the configuration's warnings on stderr, sanitized.
pub fn print_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {}", crate::terminal_text::lines(warning));
    }
}

/// A configuration read from `text` as the file `/etc/ox/oxydra.toml` (for tests).
#[cfg(test)]
pub fn test_file(text: &str) -> LoadedFile {
    LoadedFile {
        path: Some(std::path::PathBuf::from("/etc/ox/oxydra.toml")),
        config: parse(Path::new("/etc/ox/oxydra.toml"), text).unwrap(),
        ..LoadedFile::default()
    }
}
