//! Where sessions (and runs) are stored, decided once from `--db`, `OXYDRA_DB`,
//! `[memory] db` or the default. The facade's storage table (`oxydra::storage`) says
//! which strings are URLs of which backend and checks them; here a malformed one
//! becomes an error naming where it came from. Everything after holds a [`Database`].

use std::path::{Path, PathBuf};

pub use oxydra::storage::Database;
use oxydra::storage::StorageError;
use serde::Serialize;

use super::EnvLookup;
use crate::error::CliError;

/// `raw` parsed by the storage table (a relative file taken against `base`), its error
/// as the text a flag, variable or key error carries.
fn parse(raw: &Path, base: &Path) -> Result<Database, String> {
    Database::parse(raw, base).map_err(|error: StorageError| error.to_string())
}

/// Where sessions are stored.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveMemory {
    /// SQLite file, or the URL of a storage backend (shown without its password).
    pub db: Database,
    /// Where `db` came from (`--db`, `OXYDRA_DB`, `[memory] db in …`), for messages.
    #[serde(skip)]
    pub origin: String,
    /// Retrieval on.
    pub retrieval: bool,
    /// The largest one stored message may be, in bytes (`[memory] max_message_bytes`).
    pub max_message_bytes: usize,
}

impl EffectiveMemory {
    /// How the store is opened by the commands that write to it (`run`, `chat`,
    /// `serve`, `replay`): its log started as it opens.
    pub fn store_options(&self) -> oxydra::storage::StoreOptions {
        oxydra::storage::StoreOptions {
            max_message_bytes: self.max_message_bytes,
            writes_soon: true,
        }
    }
}

/// The default database: `<user data dir>/oxydra/oxydra.db`.
pub fn default_db_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("oxydra.db"))
}

/// Where a configuration file names the database: its `[memory] db` and the file's
/// path (a relative `db` is taken against the file's directory).
#[derive(Debug, Clone, Copy)]
pub struct FileDb<'a> {
    /// `[memory] db`.
    pub db: Option<&'a Path>,
    /// The file it is in.
    pub path: Option<&'a Path>,
}

/// The database to use: `--db` (relative to the current dir), else `OXYDRA_DB`, else
/// `[memory] db` (relative to the config file), else [`default_db_path`].
pub fn resolve_db(
    file: FileDb<'_>,
    flag: Option<&Path>,
    env: EnvLookup<'_>,
) -> Result<Database, CliError> {
    if let Some(path) = flag {
        return parse(path, Path::new("")).map_err(|message| CliError::Flag {
            flag: "--db",
            message,
        });
    }
    if let Some(path) = env("OXYDRA_DB").filter(|value| !value.is_empty()) {
        return parse(Path::new(&path), Path::new("")).map_err(|message| CliError::Env {
            var: "OXYDRA_DB".to_owned(),
            message,
        });
    }
    if let Some(db) = file.db {
        let base = file
            .path
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        return parse(db, &base).map_err(|message| {
            CliError::Config(oxydra_config::ConfigError::Invalid {
                path: file.path.map(Path::to_path_buf).unwrap_or_default(),
                key: "memory.db".to_owned(),
                message: format!("memory.db: {message}"),
                line: None,
            })
        });
    }
    default_db_path().map(Database::Sqlite).ok_or_else(|| {
        CliError::Setup("no user data directory is known; pass --db <PATH>".to_owned())
    })
}

/// Where [`resolve_db`] took the database from, for messages: `--db`, `OXYDRA_DB`,
/// `[memory] db in <file>` or `the default`.
pub fn db_origin(file: FileDb<'_>, flag: Option<&Path>, env: EnvLookup<'_>) -> String {
    if flag.is_some() {
        "--db".to_owned()
    } else if env("OXYDRA_DB").is_some_and(|value| !value.is_empty()) {
        "OXYDRA_DB".to_owned()
    } else if file.db.is_some() {
        match file.path {
            Some(path) => format!("[memory] db in {}", path.display()),
            None => "[memory] db".to_owned(),
        }
    } else {
        "the default".to_owned()
    }
}

/// `path` made absolute against the current directory (as it is, if that fails).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_url_is_an_error_naming_the_flag_variable_or_key() {
        let env =
            |name: &str| (name == "OXYDRA_DB").then(|| "postgres://a:s3cret@h:x/db".to_owned());
        let no_env = |_: &str| -> Option<String> { None };
        let none = FileDb {
            db: None,
            path: None,
        };
        let flag = resolve_db(none, Some(Path::new("postgres://h:notaport/db")), &no_env);
        assert!(
            matches!(&flag, Err(CliError::Flag { flag: "--db", message }) if message.contains("invalid")),
            "{flag:?}"
        );
        let var = resolve_db(none, None, &env).unwrap_err();
        assert!(
            matches!(&var, CliError::Env { var, .. } if var == "OXYDRA_DB"),
            "{var:?}"
        );
        assert!(!var.to_string().contains("s3cret"), "{var}");
        let file = FileDb {
            db: Some(Path::new("postgresql://h:x/db")),
            path: Some(Path::new("/etc/ox/oxydra.toml")),
        };
        let key = resolve_db(file, None, &no_env).unwrap_err();
        assert!(
            matches!(&key, CliError::Config(oxydra_config::ConfigError::Invalid { key, .. }) if key == "memory.db"),
            "{key:?}"
        );
        assert_eq!(
            db_origin(file, None, &no_env),
            "[memory] db in /etc/ox/oxydra.toml"
        );
    }

    #[test]
    fn a_relative_file_is_taken_against_the_config_files_dir() {
        let file = FileDb {
            db: Some(Path::new("data/o.db")),
            path: Some(Path::new("/etc/ox/oxydra.toml")),
        };
        let db = resolve_db(file, None, &|_: &str| -> Option<String> { None }).unwrap();
        assert_eq!(db.sqlite_path(), Some(Path::new("/etc/ox/data/o.db")));
    }
}
