//! Local model files: a path as given, or `hf:OWNER/REPO/FILE.gguf` downloaded
//! once into the data directory.

mod download;
mod hf_name;
mod progress;

use std::path::{Path, PathBuf};

pub use download::download;
pub use hf_name::HfName;

/// The variable that moves the download endpoint (a mirror, or a test server).
pub const HF_ENDPOINT_VAR: &str = "HF_ENDPOINT";
/// Where `hf:` models come from unless `HF_ENDPOINT` says otherwise.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// The file of `model`: a path that must exist, or an `hf:` name downloaded into
/// `models_dir/hf/OWNER/REPO/FILE` unless it is there already.
pub async fn resolve(model: &str, models_dir: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(name) = model.strip_prefix("hf:") {
        let name = HfName::parse(name)?;
        let dir = models_dir.ok_or("no data directory to download the model into")?;
        let target = dir.join("hf").join(name.relative_path());
        if target.is_file() {
            return Ok(target);
        }
        let endpoint = std::env::var(HF_ENDPOINT_VAR)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_HF_ENDPOINT.to_owned());
        let url = name.url(&endpoint);
        download(&url, &target)
            .await
            .map_err(|error| error.to_string())?;
        return Ok(target);
    }
    let path = PathBuf::from(model);
    if path.is_file() {
        Ok(path)
    } else {
        Err("no such file (a local model is a GGUF file, or hf:OWNER/REPO/FILE.gguf)".into())
    }
}
