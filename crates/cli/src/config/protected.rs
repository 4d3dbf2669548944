//! The protected-paths policy of a run: besides what `oxydra-tools` protects by name
//! (`.git/`, `.envrc`, `.vscode/`, any `oxydra.toml` …), Oxydra's own files as this run
//! uses them and the files its configuration runs.

use std::path::Path;

use oxydra::tools::{ProtectedKind, ProtectedPaths};

use super::FileConfig;
use super::database::{Database, default_db_path};
use oxydra_config::trust::default_store_path;
use oxydra_config::{launched, user_config_path};

/// The policy for a run whose configuration is `config` (read from `config_file`, and
/// already without the settings an untrusted file may not have) and whose database is
/// `db`: the file in use, the user config file, the database in use and the default
/// one, and the trust store, each as named and, when a symlink, as its target; and every
/// file or working directory `config` runs (see `launched`). `[tools] allow_protected`
/// is applied by the tools themselves.
pub fn protected_paths(
    config_file: Option<&Path>,
    config: &FileConfig,
    db: &Database,
) -> ProtectedPaths {
    let mut protected = ProtectedPaths::default();
    // A database on a server has no file here to protect.
    if let Some(file) = db.sqlite_path() {
        protected = protected.with(ProtectedKind::Database, file);
    }
    if let Some(default) = default_db_path() {
        protected = protected.with(ProtectedKind::Database, default);
    }
    for config in config_file
        .map(Path::to_path_buf)
        .into_iter()
        .chain(user_config_path())
    {
        protected = protected.with(ProtectedKind::Config, config);
    }
    if let Some(store) = default_store_path() {
        protected = protected.with(ProtectedKind::TrustStore, store);
    }
    for entry in launched(config, config_file) {
        protected = if entry.is_directory() {
            protected.with_directory(ProtectedKind::Launched, entry.path)
        } else {
            protected.with(ProtectedKind::Launched, entry.path)
        };
    }
    protected
}
