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
