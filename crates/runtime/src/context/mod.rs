//! The context window: what of a session the model sees, and how it fits the budget.
//!
//! One type owns it all, [`ContextWindow`]: the session's messages with their token
//! costs and the rolling summary ([`history`]), the provider request prepared from them
//! ([`prepared`]), the run's [`ContextBudget`] and the window's own count mode
//! ([`message_tokens::CountMode`]: estimates until the prompt nears its limit, exact
//! `cl100k_base` counts after). The turn loop calls, per turn:
//! [`ContextWindow::measure`] (get the counts ready off the async threads),
//! [`ContextWindow::summary_job`] (condense old turns when the trigger is passed),
//! [`ContextWindow::prepare`] (the request within the budget) and, when the provider
//! still finds the prompt too long, [`ContextWindow::tighten_after_overflow`].
//!
//! Before a run stores its user message, [`PromptFit`] refuses a prompt that cannot
//! fit the budget even alone (with the system prompt and the tool schemas).
//! [`ResultCap`] cuts every tool result to its share of the window before it is
//! stored, so no tool's output can make the newest turn too long to send.
//!
//! Invariants:
//! - a tool call is never sent or condensed without its results: the history is cut
//!   and condensed in whole groups ([`groups`]);
//! - the newest group and the latest user message are always in the prompt;
//! - preparing a turn costs O(new messages): only new messages are looked at until the
//!   prompt may no longer fit;
//! - no count runs on an async thread, and none costs unbounded time (a 64 KiB prefix
//!   per text, [`tokens`]); counting is cancellable and bounded by the turn timeout;
//! - preparation, truncation and the summary trigger use the same count mode;
//! - the count mode is the window's: one runtime's sessions never change another's;
//! - a message's parts (images, documents) count by a stated estimate per kind
//!   ([`part_tokens`]), never as the text of their base64 bytes.

mod budget;
mod count_cache;
mod groups;
mod history;
mod image_size;
mod message_tokens;
mod off_thread;
mod part_tokens;
mod prepared;
mod prompt_fit;
mod result_cap;
mod snippets;
mod summary;
mod tokens;
mod window;

pub(crate) use budget::{ContextBudget, ContextReport, FixedTokens};
#[cfg(test)]
pub(crate) use count_cache::fingerprint;
pub(crate) use count_cache::{CachedCount, TokenCache};
pub(crate) use prompt_fit::PromptFit;
pub(crate) use result_cap::ResultCap;
pub(crate) use snippets::snippets_message;
pub(crate) use window::{ContextWindow, SummaryJob, WindowSettings};

pub use part_tokens::{
    IMAGE_HEAD_BYTES, MAX_IMAGE_TOKENS, PDF_BYTES_PER_PAGE, PDF_PAGE_TOKENS, PIXELS_PER_TOKEN,
    part_tokens,
};
#[cfg(feature = "testing")]
pub use result_cap::MIN_RESULT_BYTES;
#[cfg(feature = "testing")]
pub use snippets::RETRIEVAL_HEADER;
#[cfg(feature = "testing")]
pub use summary::{SUMMARY_HEADER, SUMMARY_INSTRUCTIONS};
#[cfg(feature = "testing")]
pub use tokens::{
    EXACT_PREFIX_BYTES, bytes_encoded, bytes_encoded_on_this_thread, encoder_load_thread,
    encoder_loaded, messages_counted_on_this_thread,
};
