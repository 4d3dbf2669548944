//! Hooks for tests (feature `testing`): the process's token encoder (whether and
//! where it was loaded, how much text it was run over, and where), the texts of the
//! system messages the runtime adds to a prompt and the floor of a tool result's cap.

pub use crate::context::{
    EXACT_PREFIX_BYTES, MIN_RESULT_BYTES, RETRIEVAL_HEADER, SUMMARY_HEADER, SUMMARY_INSTRUCTIONS,
    bytes_encoded, bytes_encoded_on_this_thread, encoder_load_thread, encoder_loaded,
    messages_counted_on_this_thread,
};
