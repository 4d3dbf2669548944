//! Local model files for `--model`: the library's `ModelResolver` (a path as given,
//! or `hf:OWNER/REPO/FILE.gguf` downloaded once into the data directory) with the
//! CLI's progress bar.

mod progress;

use std::path::{Path, PathBuf};

use oxydra::local::ModelResolver;

/// The file of `model`: a path that must exist, or an `hf:` name downloaded into
/// `models_dir/hf/OWNER/REPO/FILE` (from `endpoint`, the configuration's
/// `HF_ENDPOINT`, else Hugging Face) unless it is there already.
pub async fn resolve(
    model: &str,
    models_dir: Option<&Path>,
    endpoint: Option<&str>,
) -> Result<PathBuf, String> {
    let mut resolver = ModelResolver::new();
    if let Some(endpoint) = endpoint {
        resolver = resolver.with_endpoint(endpoint);
    }
    if let Some(dir) = models_dir {
        resolver = resolver.with_models_dir(dir);
    }
    resolver
        .resolve(model, &mut progress::Progress::default())
        .await
        .map_err(|error| error.to_string())
}
