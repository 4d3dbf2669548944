//! A database named once: a SQLite file (an absolute path) or the URL of a server
//! backend, checked by its row and never shown with its password.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use super::{Backend, backend_of, redact_url};
use crate::error::StorageError;

/// The database of a run or a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file (an absolute path).
    Sqlite(PathBuf),
    /// A database on a server, of the backend its URL's scheme names.
    Url(DatabaseUrl),
}

/// A URL of a server backend that its row accepted. Shown (`Display`, `Debug`,
/// serialized) without its password; [`DatabaseUrl::expose`] gives it whole.
#[derive(Clone)]
pub struct DatabaseUrl {
    backend: &'static Backend,
    url: String,
}

impl DatabaseUrl {
    /// The URL with its password, to connect with.
    pub fn expose(&self) -> &str {
        &self.url
    }

    /// The backend whose scheme it has.
    pub fn backend(&self) -> &'static Backend {
        self.backend
    }
}

impl PartialEq for DatabaseUrl {
    fn eq(&self, other: &Self) -> bool {
        self.backend.name == other.backend.name && self.url == other.url
    }
}

impl Eq for DatabaseUrl {}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.url))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({}: {self})", self.backend.name)
    }
}

impl Database {
    /// The database `raw` names, a relative file taken against `base`: the URL of a
    /// backend of [`super::BACKENDS`] (checked by it: what is wrong, never the
    /// password) or a SQLite file.
    pub fn parse(raw: &Path, base: &Path) -> Result<Self, StorageError> {
        if let Some(url) = raw.to_str()
            && let Some(backend) = backend_of(url)
        {
            (backend.check)(url).map_err(|reason| StorageError::InvalidUrl {
                url: redact_url(url),
                reason,
            })?;
            return Ok(Self::Url(DatabaseUrl {
                backend,
                url: url.to_owned(),
            }));
        }
        let joined = base.join(raw);
        Ok(Self::Sqlite(std::path::absolute(&joined).unwrap_or(joined)))
    }

    /// The SQLite file, if this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Self::Sqlite(path) => Some(path),
            Self::Url(_) => None,
        }
    }

    /// The database as named in messages (a file's path, or a URL without its
    /// password), as a path for the errors that hold one.
    pub fn shown_path(&self) -> PathBuf {
        PathBuf::from(self.to_string())
    }
}

impl fmt::Display for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            Self::Url(url) => write!(f, "{url}"),
        }
    }
}

impl Serialize for Database {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_taken_against_its_base_and_shown_as_it_is() {
        let file = Database::parse(Path::new("/tmp/o.db"), Path::new("")).unwrap();
        assert_eq!(file.to_string(), "/tmp/o.db");
        let relative = Database::parse(Path::new("data/o.db"), Path::new("/etc/ox")).unwrap();
        assert_eq!(relative.sqlite_path(), Some(Path::new("/etc/ox/data/o.db")));
        let odd = Database::parse(Path::new("/tmp/postgres://x"), Path::new("")).unwrap();
        assert_eq!(odd.sqlite_path(), Some(Path::new("/tmp/postgres://x")));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_url_is_parsed_once_and_never_shown_with_its_password() {
        let db = Database::parse(Path::new("postgres://a:s3cret@h/db"), Path::new("")).unwrap();
        let Database::Url(url) = &db else {
            panic!("not a URL: {db:?}")
        };
        assert_eq!(url.expose(), "postgres://a:s3cret@h/db");
        assert_eq!(url.backend().name, "PostgreSQL");
        for shown in [
            db.to_string(),
            format!("{db:?}"),
            db.shown_path().display().to_string(),
            serde_json::to_string(&db).unwrap(),
        ] {
            assert!(!shown.contains("s3cret"), "{shown}");
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_malformed_url_is_refused_without_its_password() {
        let error = Database::parse(
            Path::new("postgres://a:s3cret@h:notaport/db"),
            Path::new(""),
        )
        .unwrap_err();
        let shown = error.to_string();
        assert!(
            matches!(error, StorageError::InvalidUrl { .. }),
            "{error:?}"
        );
        assert!(
            shown.starts_with("postgres://a:***@h:notaport/db: "),
            "{shown}"
        );
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
