//! Where sessions (and runs) are stored: a SQLite file or a PostgreSQL server, decided
//! once from `--db`, `OXYDRA_DB`, `[memory] db` or the default. A `postgres://` URL is
//! recognised and checked here and nowhere else (a malformed one is an error naming
//! where it came from); everything after holds a [`Database`].

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use super::EnvLookup;
use crate::error::CliError;

/// The database of a run or a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file (an absolute path).
    Sqlite(PathBuf),
    /// A PostgreSQL server.
    Postgres(PostgresUrl),
}

/// A `postgres://` (or `postgresql://`) URL that parses. Shown (`Display`, `Debug`,
/// serialized) without its password; [`PostgresUrl::expose`] gives it whole.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl(String);

impl PostgresUrl {
    /// The URL with its password, to connect with.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostgresUrl({self})")
    }
}

impl Database {
    /// The database `raw` names, a relative file taken against `base`: a PostgreSQL
    /// URL (checked: what is wrong, never the password) or a SQLite file.
    pub fn parse(raw: &Path, base: &Path) -> Result<Self, String> {
        if let Some(url) = raw.to_str().filter(|url| is_url(url)) {
            oxydra::postgres::validate_url(url)
                .map_err(|error| format!("{}: {error}", redact_url(url)))?;
            return Ok(Self::Postgres(PostgresUrl(url.to_owned())));
        }
        Ok(Self::Sqlite(absolute(&base.join(raw))))
    }

    /// The SQLite file, if this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Self::Sqlite(path) => Some(path),
            Self::Postgres(_) => None,
        }
    }

    /// The database as named in messages (a file's path, or a URL without its
    /// password), as a path for the error variants that hold one.
    pub fn shown_path(&self) -> PathBuf {
        PathBuf::from(self.to_string())
    }
}

impl fmt::Display for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl Serialize for Database {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

/// Whether the database named `raw` is a PostgreSQL URL.
pub fn is_url(raw: &str) -> bool {
    oxydra::postgres::is_postgres_url(raw)
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
        return Database::parse(path, Path::new("")).map_err(|message| CliError::Flag {
            flag: "--db",
            message,
        });
    }
    if let Some(path) = env("OXYDRA_DB").filter(|value| !value.is_empty()) {
        return Database::parse(Path::new(&path), Path::new("")).map_err(|message| CliError::Env {
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
        return Database::parse(db, &base).map_err(|message| CliError::ConfigInvalid {
            path: file.path.map(Path::to_path_buf).unwrap_or_default(),
            key: "memory.db".to_owned(),
            message: format!("memory.db: {message}"),
            line: None,
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

/// `url` with the password of its user info and any `password=` parameter replaced by
/// `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// `path` made absolute against the current directory (as it is, if that fails).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_and_paths_stay() {
        assert_eq!(
            redact_url("postgres://alice:s3cret@db.lan:5432/oxydra"),
            "postgres://alice:***@db.lan:5432/oxydra"
        );
        assert_eq!(
            redact_url("postgresql://db.lan/x?user=a&password=s3cret&sslmode=disable"),
            "postgresql://db.lan/x?user=a&password=***&sslmode=disable"
        );
        assert_eq!(redact_url("postgres://bob@h/db"), "postgres://bob@h/db");
        let file = Database::parse(Path::new("/tmp/o.db"), Path::new("")).unwrap();
        assert_eq!(file.to_string(), "/tmp/o.db");
        assert!(is_url("postgres://h/db"));
        assert!(!is_url("/tmp/postgres://x"));
    }

    #[test]
    fn a_url_is_parsed_once_and_never_shown_with_its_password() {
        let db = Database::parse(Path::new("postgres://a:s3cret@h/db"), Path::new("")).unwrap();
        let Database::Postgres(url) = &db else {
            panic!("not postgres: {db:?}")
        };
        assert_eq!(url.expose(), "postgres://a:s3cret@h/db");
        for shown in [
            db.to_string(),
            format!("{db:?}"),
            db.shown_path().display().to_string(),
        ] {
            assert!(!shown.contains("s3cret"), "{shown}");
        }
        let relative = Database::parse(Path::new("data/o.db"), Path::new("/etc/ox")).unwrap();
        assert_eq!(relative.sqlite_path(), Some(Path::new("/etc/ox/data/o.db")));
    }
}
