//! Where SQLite errors become [`MemoryError`]s: the one place that names `rusqlite::Error`.

use std::path::Path;

use crate::error::MemoryError;

/// The backend name in errors.
pub(crate) const BACKEND: &str = "sqlite";

/// A [`MemoryError::Storage`] for the database at `path` while doing `action`, keeping
/// SQLite's message.
pub(crate) fn db(path: &Path, action: &str, source: rusqlite::Error) -> MemoryError {
    MemoryError::Storage {
        backend: BACKEND,
        location: path.display().to_string(),
        action: action.to_owned(),
        message: source.to_string(),
    }
}

/// The location of the database at `path`, for errors.
pub(crate) fn location(path: &Path) -> String {
    path.display().to_string()
}
