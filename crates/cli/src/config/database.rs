//! Where sessions are stored: `--db`, `OXYDRA_DB`, `[memory] db` or the default, each
//! checked (a malformed PostgreSQL URL is an error naming where it came from).

use std::path::{Path, PathBuf};

use super::LoadedFile;
use super::merge::EnvLookup;
use crate::error::CliError;

/// The default database: `<user data dir>/oxydra/oxydra.db`.
pub fn default_db_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("oxydra.db"))
}

/// The database to use: `--db` (relative to the current dir), else `OXYDRA_DB`, else
/// `[memory] db` (relative to the config file), else [`default_db_path`]. A
/// `postgres://` URL is kept as it is (checked here, so a malformed one is an error
/// naming where it came from).
pub fn resolve_db(
    file: &LoadedFile,
    flag: Option<&Path>,
    env: EnvLookup<'_>,
) -> Result<PathBuf, CliError> {
    if let Some(path) = flag {
        check_url(path).map_err(|message| CliError::Flag {
            flag: "--db",
            message,
        })?;
        return Ok(absolute_or_url(path));
    }
    if let Some(path) = env("OXYDRA_DB").filter(|value| !value.is_empty()) {
        let path = PathBuf::from(path);
        check_url(&path).map_err(|message| CliError::Env {
            var: "OXYDRA_DB".to_owned(),
            message,
        })?;
        return Ok(absolute_or_url(&path));
    }
    if let Some(db) = &file.config.memory.db {
        check_url(db).map_err(|message| CliError::ConfigInvalid {
            path: file.path.clone().unwrap_or_default(),
            key: "memory.db".to_owned(),
            message: format!("memory.db: {message}"),
            line: None,
        })?;
        if crate::commands::database::is_url(db) {
            return Ok(db.clone());
        }
        let base = file
            .path
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        return Ok(absolute(&base.join(db)));
    }
    default_db_path().ok_or_else(|| {
        CliError::Setup("no user data directory is known; pass --db <PATH>".to_owned())
    })
}

/// Where [`resolve_db`] took the database from, for messages: `--db`, `OXYDRA_DB`,
/// `[memory] db in <file>` or `the default`.
pub fn db_origin(file: &LoadedFile, flag: Option<&Path>, env: EnvLookup<'_>) -> String {
    if flag.is_some() {
        "--db".to_owned()
    } else if env("OXYDRA_DB").is_some_and(|value| !value.is_empty()) {
        "OXYDRA_DB".to_owned()
    } else if file.config.memory.db.is_some() {
        match &file.path {
            Some(path) => format!("[memory] db in {}", path.display()),
            None => "[memory] db".to_owned(),
        }
    } else {
        "the default".to_owned()
    }
}

/// A PostgreSQL URL that does not parse: what is wrong (the password never shown).
fn check_url(db: &Path) -> Result<(), String> {
    let Some(url) = db
        .to_str()
        .filter(|url| oxydra::postgres::is_postgres_url(url))
    else {
        return Ok(());
    };
    oxydra::postgres::validate_url(url)
        .map_err(|error| format!("{}: {error}", crate::commands::database::redact_url(url)))
}

fn absolute_or_url(path: &Path) -> PathBuf {
    if crate::commands::database::is_url(path) {
        path.to_path_buf()
    } else {
        absolute(path)
    }
}

pub(super) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
