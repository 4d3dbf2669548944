//! How a local model is loaded.

use std::num::NonZeroU32;
use std::path::PathBuf;

use crate::sampling::SamplingOverrides;

/// The largest context a model is given by default, in tokens: models trained on
/// longer contexts are capped here so the KV cache stays a few hundred MB.
pub const DEFAULT_MAX_CONTEXT: u32 = 8192;

/// The most prompt tokens decoded in one llama.cpp call by default. A stop (a
/// cancelled turn, [`stop_all`](crate::stop_all) before the process exits) can only
/// land between two calls, so it waits for at most one chunk: on the loaded 2-core CI
/// machine one call of 64 tokens of the test model took ~0.65 s where 512 took ~8 s,
/// and the prompt was read 1.5× as fast (docs/performance.md, "Prompt chunks and
/// stopping").
pub const DEFAULT_PROMPT_CHUNK: u32 = 64;

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
    /// The most prompt tokens decoded per llama.cpp call (default
    /// [`DEFAULT_PROMPT_CHUNK`]; at least 1, at most the context's 512-token batch).
    /// A stop lands between calls: a smaller chunk stops sooner and reads a long
    /// prompt a little slower.
    pub prompt_chunk: u32,
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
            prompt_chunk: DEFAULT_PROMPT_CHUNK,
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
