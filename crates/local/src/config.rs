//! How a local model is loaded.

use std::num::NonZeroU32;
use std::path::PathBuf;

use crate::sampling::SamplingOverrides;

/// The largest context a model is given by default, in tokens: models trained on
/// longer contexts are capped here so the KV cache stays a few hundred MB.
pub const DEFAULT_MAX_CONTEXT: u32 = 8192;

/// Settings of one local model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// CPU threads used for decoding; `None`: all available cores.
    pub threads: Option<NonZeroU32>,
    /// The largest context, in tokens; the context is the model's trained context
    /// (from the GGUF) capped at this.
    pub max_context: u32,
    /// Sampling settings that override the model's recommendation and the
    /// defaults (`[provider.sampling]`); per provider, not per loaded model.
    pub sampling: SamplingOverrides,
}

impl LocalConfig {
    /// Settings for `model_path` with default threads and context cap.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            threads: None,
            max_context: DEFAULT_MAX_CONTEXT,
            sampling: SamplingOverrides::default(),
        }
    }

    /// The thread count to use: the configured one or the machine's cores.
    pub fn thread_count(&self) -> i32 {
        let threads = match self.threads {
            Some(threads) => threads.get(),
            None => std::thread::available_parallelism()
                .map(|n| u32::try_from(n.get()).unwrap_or(1))
                .unwrap_or(1),
        };
        i32::try_from(threads).unwrap_or(1)
    }
}
