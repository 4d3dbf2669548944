//! The integration tests of `oxydra-tools`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-tools <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod auto_loaded;
mod file_media;
mod file_read;
mod protected_consent;
mod protected_paths;
mod sandbox;
#[cfg(target_os = "linux")]
mod sandbox_box;
mod shell_exec;
#[cfg(target_os = "linux")]
mod symlink_race;
#[cfg(unix)]
mod symlinks;
mod web_fetch;
