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
}

impl From<LocalError> for ProviderError {
    fn from(error: LocalError) -> Self {
        match error {
            LocalError::Template { .. }
            | LocalError::TemplateLimit { .. }
            | LocalError::Grammar { .. } => ProviderError::InvalidRequest {
                message: error.to_string(),
            },
            LocalError::Backend { .. } | LocalError::Load { .. } | LocalError::Sampling { .. } => {
                ProviderError::InvalidConfig {
                    what: "local model".into(),
                    message: error.to_string(),
                }
            }
            LocalError::WorkerGone => ProviderError::Server {
                status: 500,
                message: error.to_string(),
            },
        }
    }
}
