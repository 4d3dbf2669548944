//! Model files by name (feature `download`): a GGUF path as given, or
//! `hf:OWNER/REPO/FILE.gguf`, a file of a Hugging Face repository downloaded once into
//! a models directory, as the `oxydra` CLI's `--model` takes them.
//!
//! [`ModelResolver`] turns a name into the file to load; [`download`] fetches one URL.
//! A download is resumed from its `.part` file, checked against the size and the
//! SHA-256 the server announced, and renamed into place only when complete, so a
//! model file under its own name is always a whole one. Progress goes to a
//! [`DownloadProgress`] of the caller's (the CLI draws a bar on a terminal); nothing
//! is printed here. The endpoint is [`DEFAULT_HF_ENDPOINT`] unless the caller sets
//! another, or reads `HF_ENDPOINT` with [`ModelResolver::from_env`].

mod fetch;
mod hf_name;

use std::path::{Path, PathBuf};

pub use fetch::download;
pub use hf_name::HfName;

use crate::error::LocalError;

/// The variable [`ModelResolver::from_env`] reads to move the endpoint (a mirror, or
/// a test server).
pub const HF_ENDPOINT_VAR: &str = "HF_ENDPOINT";
/// Where `hf:` models come from unless the caller names another endpoint.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// What a download reports while it runs. Every method does nothing by default.
pub trait DownloadProgress: Send {
    /// The body starts arriving: `label` is the file's name, `total` its size when
    /// the server said it, `done` the bytes already on disk (a resumed download).
    fn start(&mut self, label: &str, total: Option<u64>, done: u64) {
        let _ = (label, total, done);
    }

    /// `bytes` more were written.
    fn advance(&mut self, bytes: u64) {
        let _ = bytes;
    }

    /// The body has ended (it is checked next).
    fn finish(&mut self) {}
}

/// A [`DownloadProgress`] that reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl DownloadProgress for NoProgress {}

/// Turns a model name into the GGUF file to load: a path that must exist, or an `hf:`
/// name downloaded into `<models dir>/hf/OWNER/REPO/FILE` unless it is there already.
///
/// It reads no environment variable unless made by [`from_env`](Self::from_env).
///
/// ```
/// # async fn demo() -> Result<(), oxydra_local::LocalError> {
/// use oxydra_local::{ModelResolver, NoProgress};
///
/// let dir = std::env::temp_dir().join("oxydra-models");
/// let resolver = ModelResolver::new()
///     .with_models_dir(&dir)
///     .with_endpoint("https://hf-mirror.example");
/// assert_eq!(
///     resolver.target("hf:o/r/m.gguf")?,
///     Some(dir.join("hf/o/r/m.gguf"))
/// );
/// // Downloads the file once; later calls find it.
/// let path = resolver.resolve("hf:o/r/m.gguf", &mut NoProgress).await?;
/// # let _ = path; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ModelResolver {
    models_dir: Option<PathBuf>,
    endpoint: String,
}

impl Default for ModelResolver {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelResolver {
    /// A resolver with no models directory (an `hf:` name is then an error) and the
    /// endpoint [`DEFAULT_HF_ENDPOINT`].
    pub fn new() -> Self {
        Self {
            models_dir: None,
            endpoint: DEFAULT_HF_ENDPOINT.to_owned(),
        }
    }

    /// [`new`](Self::new) with the endpoint `HF_ENDPOINT` names, when it is set and
    /// not blank.
    pub fn from_env() -> Self {
        Self::from_env_with(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) reading variables through `env`.
    pub fn from_env_with(env: impl Fn(&str) -> Option<String>) -> Self {
        match env(HF_ENDPOINT_VAR).filter(|value| !value.trim().is_empty()) {
            Some(endpoint) => Self::new().with_endpoint(endpoint),
            None => Self::new(),
        }
    }

    /// Downloads go below `dir/hf/`.
    #[must_use]
    pub fn with_models_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.models_dir = Some(dir.into());
        self
    }

    /// Downloads come from `endpoint` (`https://huggingface.co`, a mirror).
    #[must_use]
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = endpoint.into();
        self
    }

    /// The endpoint downloads come from.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The models directory, if any.
    pub fn models_dir(&self) -> Option<&Path> {
        self.models_dir.as_deref()
    }

    /// Where an `hf:` name is kept; `None` for a name that is not `hf:` (a path).
    ///
    /// # Errors
    /// [`LocalError::ModelName`] for an invalid `hf:` name, or when there is no models
    /// directory to keep it in.
    pub fn target(&self, model: &str) -> Result<Option<PathBuf>, LocalError> {
        Ok(self.hf_target(model)?.map(|(_, target)| target))
    }

    /// The parsed `hf:` name and where it is kept.
    fn hf_target(&self, model: &str) -> Result<Option<(HfName, PathBuf)>, LocalError> {
        let Some(name) = model.strip_prefix("hf:") else {
            return Ok(None);
        };
        let name = HfName::parse(name)?;
        let dir = self.models_dir.as_deref().ok_or(LocalError::ModelName {
            message: "no data directory to download the model into".into(),
        })?;
        let target = dir.join("hf").join(name.relative_path());
        Ok(Some((name, target)))
    }

    /// The file of `model`: a path that must exist, or an `hf:` name, downloaded
    /// (reporting to `progress`) unless it is kept already.
    ///
    /// # Errors
    /// [`LocalError::ModelName`] for a path that is no file or an invalid `hf:` name,
    /// else those of [`download`].
    pub async fn resolve(
        &self,
        model: &str,
        progress: &mut dyn DownloadProgress,
    ) -> Result<PathBuf, LocalError> {
        if let Some((name, target)) = self.hf_target(model)? {
            if !target.is_file() {
                download(&name.url(&self.endpoint), &target, progress).await?;
            }
            return Ok(target);
        }
        let path = PathBuf::from(model);
        if path.is_file() {
            Ok(path)
        } else {
            Err(LocalError::ModelName {
                message: "no such file (a local model is a GGUF file, or hf:OWNER/REPO/FILE.gguf)"
                    .into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use oxydra_test_support::{MockServer, RecordedRequest, Reply};

    use super::*;

    /// Counts what a download reported.
    #[derive(Default)]
    struct Counted {
        started: Option<(String, Option<u64>, u64)>,
        bytes: u64,
        finished: bool,
    }

    impl DownloadProgress for Counted {
        fn start(&mut self, label: &str, total: Option<u64>, done: u64) {
            self.started = Some((label.to_owned(), total, done));
        }
        fn advance(&mut self, bytes: u64) {
            self.bytes += bytes;
        }
        fn finish(&mut self) {
            self.finished = true;
        }
    }

    #[test]
    fn the_endpoint_comes_from_hf_endpoint_only_through_from_env() {
        let env = |name: &str| (name == HF_ENDPOINT_VAR).then(|| "http://mirror".to_owned());
        assert_eq!(
            ModelResolver::from_env_with(env).endpoint(),
            "http://mirror"
        );
        let blank = |_: &str| Some("  ".to_owned());
        assert_eq!(
            ModelResolver::from_env_with(blank).endpoint(),
            DEFAULT_HF_ENDPOINT
        );
        assert_eq!(ModelResolver::new().endpoint(), DEFAULT_HF_ENDPOINT);
    }

    #[tokio::test]
    async fn a_path_must_exist_and_an_hf_name_needs_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        std::fs::write(&file, b"x").unwrap();
        let resolver = ModelResolver::new();
        let path = file.display().to_string();
        assert_eq!(
            resolver.resolve(&path, &mut NoProgress).await.unwrap(),
            file
        );
        let missing = resolver
            .resolve("missing.gguf", &mut NoProgress)
            .await
            .unwrap_err();
        assert!(missing.to_string().contains("no such file"), "{missing}");
        let no_dir = resolver
            .resolve("hf:o/r/m.gguf", &mut NoProgress)
            .await
            .unwrap_err();
        assert!(no_dir.to_string().contains("data directory"), "{no_dir}");
        let escape = resolver.target("hf:o/../../x.gguf").unwrap_err();
        assert!(matches!(escape, LocalError::ModelName { .. }), "{escape}");
    }

    #[tokio::test]
    async fn an_hf_name_is_downloaded_once_with_progress() {
        let body = b"GGUF-ish bytes".to_vec();
        let server = MockServer::builder()
            .respond_with(move |request: &RecordedRequest| {
                if request.path == "/o/r/resolve/main/q/m.gguf" {
                    Reply::new(200).body(body.clone())
                } else {
                    Reply::new(404)
                }
            })
            .start()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let resolver = ModelResolver::new()
            .with_models_dir(dir.path())
            .with_endpoint(format!("http://{}/", server.addr()));
        let mut progress = Counted::default();
        let path = resolver
            .resolve("hf:o/r/q/m.gguf", &mut progress)
            .await
            .unwrap();
        assert_eq!(path, dir.path().join("hf/o/r/q/m.gguf"));
        assert_eq!(std::fs::read(&path).unwrap(), b"GGUF-ish bytes");
        assert_eq!(progress.started, Some(("m.gguf".to_owned(), Some(14), 0)));
        assert_eq!(progress.bytes, 14);
        assert!(progress.finished);
        let again = resolver
            .resolve("hf:o/r/q/m.gguf", &mut NoProgress)
            .await
            .unwrap();
        assert_eq!(again, path);
        assert_eq!(server.requests().len(), 1, "downloaded twice");
    }
}
