//! End-to-end tests of the Oxydra workspace.
//!
//! The tests in `tests/` exercise the crates together and the real `oxydra` binary
//! against local HTTP servers that speak the providers' wire formats, replaying the
//! recorded streams in `../shared/fixtures`.

use std::path::PathBuf;

/// The folder of recorded provider streams shared beside the checkout
/// (`../shared/fixtures`), or `OXYDRA_FIXTURES` when set.
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OXYDRA_FIXTURES") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures")
}
