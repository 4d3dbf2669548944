//! The real GGUF model `scripts/fetch-test-model.sh` fetches (SmolLM2-135M-Instruct),
//! for the tests and benches that run the embedded local model.

use std::path::{Path, PathBuf};

/// The test model: `OXYDRA_TEST_MODEL`, or the GGUF the fetch script put in
/// `target/test-models`; `None` when neither names an existing file.
pub fn path() -> Option<PathBuf> {
    std::env::var_os("OXYDRA_TEST_MODEL")
        .map(PathBuf::from)
        .or_else(|| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-models");
            std::fs::read_dir(dir).ok()?.find_map(|entry| {
                let path = entry.ok()?.path();
                (path.extension()? == "gguf").then_some(path)
            })
        })
        .filter(|path| path.is_file())
}

/// The test model for a test that needs it: [`path`], or `None` after saying on stderr
/// that the test is skipped, so the test returns early. Under `CI=true` a missing model
/// fails the test instead: CI never skips it silently.
///
/// ```no_run
/// let Some(model) = oxydra_test_support::test_model::or_skip() else { return };
/// # let _ = model;
/// ```
///
/// # Panics
/// Under `CI=true`, when there is no test model.
#[allow(clippy::panic)]
pub fn or_skip() -> Option<PathBuf> {
    let model = path();
    if model.is_none() {
        let why = "no test model: run scripts/fetch-test-model.sh (or set OXYDRA_TEST_MODEL)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{why}");
        }
        eprintln!("skipped: {why}");
    }
    model
}
