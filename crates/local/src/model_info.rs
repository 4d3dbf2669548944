//! What is known about a loaded model once its worker thread has loaded it: the
//! engine reports it, the model's handle keeps it.

use std::sync::Arc;

use crate::sampling::SamplingOverrides;
use crate::template::ChatTemplate;

/// What is known about a loaded model.
#[derive(Debug)]
pub struct ModelInfo {
    /// The context the model runs with, in tokens.
    pub context: u32,
    /// The model's chat template, ready to render (on a blocking thread).
    pub template: Arc<ChatTemplate>,
    /// The sampling the GGUF recommends (`general.sampling.*`).
    pub recommended: SamplingOverrides,
    /// The model's parameter count.
    pub parameters: u64,
}
