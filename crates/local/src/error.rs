//! The one error type of `oxydra-local`.

use std::path::PathBuf;

use oxydra_provider::ProviderError;
use thiserror::Error;

/// Why the local model could not be loaded or asked.
#[derive(Debug, Error)]
pub enum LocalError {
    /// llama.cpp's backend could not be started.
    #[error("could not start llama.cpp: {message}")]
    Backend {
        /// What llama.cpp said.
        message: String,
    },
    /// The model file is missing or is not a GGUF model llama.cpp can load.
    #[error("could not load the model {}: {message}", path.display())]
    Load {
        /// The model file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The chat template could not be parsed or rendered for this conversation.
    #[error("chat template: {message}")]
    Template {
        /// What the template engine said.
        message: String,
    },
    /// The chat template ran out of fuel or wrote past its output cap: it loops,
    /// or it is not a chat template at all.
    #[error("chat template: {message}")]
    TemplateLimit {
        /// Which limit was hit.
        message: String,
    },
    /// A tool's JSON Schema could not be turned into a grammar.
    #[error("could not build a grammar for the tool calls: {message}")]
    Grammar {
        /// What went wrong.
        message: String,
    },
    /// A sampling setting is out of its range.
    #[error("sampling.{key}: {message}")]
    Sampling {
        /// The setting (`temperature`, `top_p`, …).
        key: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The thread that runs the model stopped.
    #[error("the model's worker thread stopped")]
    WorkerGone,
    /// A model name is neither an existing file nor a valid
    /// `hf:OWNER/REPO/FILE.gguf` (feature `download`).
    #[error("{message}")]
    ModelName {
        /// What is wrong with it, naming it.
        message: String,
    },
    /// A download was interrupted: the server could not be reached or the transfer
    /// broke. The `.part` file is kept, and the next attempt resumes from it
    /// (feature `download`).
    #[error("downloading {url}: {message} (run again to resume)")]
    DownloadTransfer {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The server answered a download with an error status (feature `download`).
    #[error("downloading {url}: the server answered HTTP {status}")]
    DownloadStatus {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// The file arrived but is not what the server announced (more bytes than its
    /// size, another SHA-256); it was deleted (feature `download`).
    #[error("downloading {url}: the file is corrupt ({message}); it was deleted, run again")]
    DownloadCorrupt {
        /// The URL.
        url: String,
        /// What did not match.
        message: String,
    },
    /// A downloaded file could not be written (feature `download`).
    #[error("{}: {message}", path.display())]
    DownloadIo {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The model opened a tool call that did not parse, on every attempt.
    #[error(
        "the local model wrote a tool call that does not parse ({attempts} attempts); \
         the last began: {excerpt}"
    )]
    MalformedToolCall {
        /// How many generations were tried.
        attempts: u32,
        /// The start of the last one's call.
        excerpt: String,
    },
}

impl From<LocalError> for ProviderError {
    fn from(error: LocalError) -> Self {
        match error {
            LocalError::Template { .. }
            | LocalError::TemplateLimit { .. }
            | LocalError::Grammar { .. } => ProviderError::InvalidRequest {
                message: error.to_string(),
            },
            LocalError::Backend { .. }
            | LocalError::Load { .. }
            | LocalError::Sampling { .. }
            | LocalError::ModelName { .. }
            | LocalError::DownloadStatus { .. }
            | LocalError::DownloadCorrupt { .. }
            | LocalError::DownloadIo { .. } => ProviderError::InvalidConfig {
                what: "local model".into(),
                message: error.to_string(),
            },
            LocalError::DownloadTransfer { .. } => ProviderError::Transport {
                message: error.to_string(),
            },
            LocalError::WorkerGone => ProviderError::Server {
                status: 500,
                message: error.to_string(),
            },
            // Retried by the provider already: neither retried nor answered by a
            // fallback request again.
            LocalError::MalformedToolCall { .. } => ProviderError::RetryAdvised {
                retry: false,
                error: Box::new(ProviderError::Decode {
                    what: "the local model's tool call".into(),
                    excerpt: error.to_string(),
                }),
            },
        }
    }
}
