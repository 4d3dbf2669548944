//! Hooks for tests (feature `testing`): the process's token encoder and the texts of
//! the system messages the runtime adds to a prompt.

pub use crate::context::{
    RETRIEVAL_HEADER, SUMMARY_HEADER, SUMMARY_INSTRUCTIONS, encoder_load_thread, encoder_loaded,
    messages_counted_on_this_thread,
};
