//! Hooks for tests (feature `testing`): the process's token encoder, the texts of
//! the system messages the runtime adds to a prompt and the floor of a tool result's
//! cap.

pub use crate::context::{
    MIN_RESULT_BYTES, RETRIEVAL_HEADER, SUMMARY_HEADER, SUMMARY_INSTRUCTIONS, encoder_load_thread,
    encoder_loaded, messages_counted_on_this_thread,
};
