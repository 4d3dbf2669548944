//! `SqliteMemory` passes the backend conformance suites of `oxydra_memory::conformance`:
//! each case on a new database file, stores opened on it as separate processes would.

use std::path::PathBuf;

use oxydra_memory::conformance::MemoryBackend;
use oxydra_memory::{RetrievalConfig, SqliteConfig, SqliteMemory};

/// A new database file in a temporary directory, removed when dropped.
struct SqliteFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl SqliteFile {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        Self { _dir: dir, path }
    }
}

impl MemoryBackend for SqliteFile {
    type Store = SqliteMemory;

    fn open(&self, retrieval: RetrievalConfig) -> SqliteMemory {
        let config = SqliteConfig {
            retrieval,
            ..SqliteConfig::default()
        };
        SqliteMemory::open(&self.path, config).unwrap()
    }

    fn open_capped(&self, max_message_bytes: usize) -> SqliteMemory {
        let config = SqliteConfig {
            max_message_bytes,
            ..SqliteConfig::default()
        };
        SqliteMemory::open(&self.path, config).unwrap()
    }
}

oxydra_memory::memory_conformance_tests!(SqliteFile::new());
oxydra_memory::checkpoint_conformance_tests!(SqliteFile::new());
