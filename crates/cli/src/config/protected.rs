//! The files of Oxydra's own that the file tools refuse, as this run uses them.

use std::path::Path;

use oxydra::tools::{ProtectedKind, ProtectedPaths};

use super::file::user_config_path;
use super::merge::default_db_path;
use super::trust::default_store_path;

/// Oxydra's own files for a run whose configuration is `config_file` and whose
/// database is `db`: besides any `oxydra.toml`, the file in use, the user config
/// file, the database in use and the default one, and the trust store.
pub fn protected_paths(config_file: Option<&Path>, db: &Path) -> ProtectedPaths {
    let mut protected = ProtectedPaths::default().with(ProtectedKind::Database, db);
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
    protected
}
