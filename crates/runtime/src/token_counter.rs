//! Token counting with `cl100k_base`, loaded once and only when needed.
//!
//! Counting exactly costs a BPE pass, and loading the encoder costs more (about 0.1 s of
//! CPU and 20 MiB), so the runtime works with three measures of a text:
//!
//! - the **upper bound** ([`upper_bound`]): its bytes. A `cl100k_base` token is at least
//!   one byte of UTF-8, so a text never has more tokens than bytes. Free; a prompt whose
//!   upper bound fits needs no other count.
//! - the **estimate** ([`estimate`]): every three ASCII bytes (rounded up) count as one
//!   token, and every non-ASCII byte as one token. English prose and code average three
//!   to four ASCII characters a token; non-ASCII scripts (CJK, emoji) take one to three
//!   bytes a token, so counting each byte is generous. It can still be low for text
//!   that tokenizes badly (random identifiers, base64). Computed with the upper bound
//!   when a message is added.
//! - the **exact** count ([`count`]): a BPE pass with the loaded encoder.
//!
//! While the encoder is not loaded, budgeting (what fits the context, when to summarise)
//! uses estimates ([`CountMode::Estimate`]); the turn loop loads the encoder only when
//! the estimate comes near the limit (see [`NEAR_LIMIT_PERCENT`]), and from then on
//! counts are exact ([`CountMode::Exact`]), each cached with its message
//! ([`MessageTokens`]). Because an estimate can be wrong, a provider's "context length
//! exceeded" makes the turn loop load the encoder, recount and retry once with a tighter
//! budget.
//!
//! Loading the encoder parses a large BPE table; async code calls [`load_encoder`],
//! which does it once per process on a blocking thread (`spawn_blocking`), before it
//! counts. The synchronous [`count`] loads the encoder in place when nothing loaded it
//! before (fine outside an async runtime).

use std::cell::Cell;
use std::sync::OnceLock;
use std::thread::ThreadId;

use oxydra_types::Message;
use tiktoken_rs::CoreBPE;

/// The encoder loads once the estimate of a prompt reaches this share (in percent) of
/// its limit; below it, estimates are trusted.
pub const NEAR_LIMIT_PERCENT: u64 = 70;

/// Which count budgeting uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMode {
    /// The cheap [`estimate`] (the encoder is not loaded).
    Estimate,
    /// The exact `cl100k_base` count.
    Exact,
}

impl CountMode {
    /// Exact once the encoder is loaded in this process, else the estimate.
    pub fn current() -> Self {
        if encoder_loaded() {
            Self::Exact
        } else {
            Self::Estimate
        }
    }
}

/// Tokens every message costs beside its text (role and separators).
pub const MESSAGE_OVERHEAD: u32 = 4;
/// Tokens every tool call of an assistant message costs beside its id, name and arguments.
pub const TOOL_CALL_OVERHEAD: u32 = 4;

static ENCODER: OnceLock<Option<CoreBPE>> = OnceLock::new();
/// Async callers of [`load_encoder`] wait on one blocking load.
static LOADING: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
/// The thread the encoder was loaded on.
static LOADED_ON: OnceLock<ThreadId> = OnceLock::new();

thread_local! {
    /// Messages counted exactly on this thread (see [`messages_counted_on_this_thread`]).
    static MESSAGES_COUNTED: Cell<u64> = const { Cell::new(0) };
}

fn load() -> Option<CoreBPE> {
    let _ = LOADED_ON.set(std::thread::current().id());
    match tiktoken_rs::cl100k_base() {
        Ok(encoder) => Some(encoder),
        Err(error) => {
            tracing::warn!(%error, "cl100k_base failed to load; token counts fall back to byte counts");
            None
        }
    }
}

fn encoder() -> Option<&'static CoreBPE> {
    ENCODER.get_or_init(load).as_ref()
}

/// Loads the `cl100k_base` encoder on a blocking thread, once per process; returns at
/// once when it is loaded. Async code calls this before counting exactly, so the load
/// never blocks an async worker thread.
pub async fn load_encoder() {
    if ENCODER.get().is_some() {
        return;
    }
    LOADING
        .get_or_init(|| async {
            if let Err(error) = tokio::task::spawn_blocking(|| {
                encoder();
            })
            .await
            {
                tracing::warn!(%error, "loading cl100k_base on a blocking thread failed");
            }
        })
        .await;
}

/// Whether the `cl100k_base` encoder has been loaded in this process.
pub fn encoder_loaded() -> bool {
    ENCODER.get().is_some()
}

/// The thread the encoder was loaded on, if it was (for tests).
#[doc(hidden)]
pub fn encoder_load_thread() -> Option<ThreadId> {
    LOADED_ON.get().copied()
}

/// How many messages have been counted exactly on the calling thread (for tests: a
/// current-thread tokio test sees every count of the runs it drives).
#[doc(hidden)]
pub fn messages_counted_on_this_thread() -> u64 {
    MESSAGES_COUNTED.with(Cell::get)
}

fn clamp(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// An upper bound of the tokens of `text`: its length in bytes.
pub fn upper_bound(text: &str) -> u32 {
    clamp(text.len())
}

/// A cheap estimate of the tokens of `text`: ASCII bytes / 3 (rounded up) plus one
/// token per non-ASCII byte. Never above [`upper_bound`].
pub fn estimate(text: &str) -> u32 {
    let bytes = text.as_bytes();
    let ascii = bytes.iter().filter(|byte| byte.is_ascii()).count();
    let non_ascii = bytes.len() - ascii;
    clamp(ascii.div_ceil(3).saturating_add(non_ascii))
}

/// The exact `cl100k_base` token count of `text`. Loads the encoder in place on first
/// use unless [`load_encoder`] did (async code awaits that first); should it fail to
/// load, the byte count is returned, which is still an upper bound.
pub fn count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    match encoder() {
        Some(encoder) => clamp(encoder.encode_ordinary(text).len()),
        None => upper_bound(text),
    }
}

fn message_tokens(message: &Message, measure: fn(&str) -> u32) -> u32 {
    let mut total = MESSAGE_OVERHEAD.saturating_add(measure(message.text()));
    for call in &message.tool_calls {
        total = total
            .saturating_add(TOOL_CALL_OVERHEAD)
            .saturating_add(measure(call.id.as_str()))
            .saturating_add(measure(&call.name))
            .saturating_add(measure(&call.arguments));
    }
    if let Some(id) = &message.tool_call_id {
        total = total.saturating_add(measure(id.as_str()));
    }
    if let Some(name) = &message.name {
        total = total.saturating_add(measure(name));
    }
    total
}

/// An upper bound of the tokens `message` takes in a prompt (no encoder needed).
pub fn message_upper_bound(message: &Message) -> u32 {
    message_tokens(message, upper_bound)
}

/// An estimate of the tokens `message` takes in a prompt (no encoder needed).
pub fn message_estimate(message: &Message) -> u32 {
    message_tokens(message, estimate)
}

/// The exact tokens `message` takes in a prompt.
pub fn message_count(message: &Message) -> u32 {
    MESSAGES_COUNTED.with(|counted| counted.set(counted.get().saturating_add(1)));
    message_tokens(message, count)
}

/// The sum of the counts under `mode` of messages paired with their costs (each exact
/// count computed once and kept in its [`MessageTokens`]).
pub(crate) fn sum_counted<'a>(
    messages: impl IntoIterator<Item = (&'a mut MessageTokens, &'a Message)>,
    mode: CountMode,
) -> u64 {
    messages
        .into_iter()
        .fold(0, |total: u64, (tokens, message)| {
            total.saturating_add(u64::from(tokens.counted(message, mode)))
        })
}

/// The token cost of one message: its upper bound and estimate, computed when the
/// message is added, and its exact count, computed the first time it is asked for and
/// then kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageTokens {
    upper: u32,
    estimate: u32,
    exact: Option<u32>,
}

impl MessageTokens {
    /// The cost of `message`, with only the upper bound and the estimate computed.
    pub fn new(message: &Message) -> Self {
        Self {
            upper: message_upper_bound(message),
            estimate: message_estimate(message),
            exact: None,
        }
    }

    /// The upper bound.
    pub fn upper(&self) -> u32 {
        self.upper
    }

    /// The estimate.
    pub fn estimate(&self) -> u32 {
        self.estimate
    }

    /// The count budgeting uses under `mode`: the estimate, or the exact count
    /// (computed once).
    pub fn counted(&mut self, message: &Message, mode: CountMode) -> u32 {
        match mode {
            CountMode::Estimate => self.estimate,
            CountMode::Exact => self.exact(message),
        }
    }

    /// The exact count if it has been computed.
    pub fn cached_exact(&self) -> Option<u32> {
        self.exact
    }

    /// Takes `exact` as the exact count (one computed earlier for the same message).
    pub(crate) fn seed_exact(&mut self, exact: u32) {
        self.exact = Some(exact.min(self.upper));
    }

    /// The exact count of `message` (which must be the message this was made for),
    /// computed once.
    pub fn exact(&mut self, message: &Message) -> u32 {
        match self.exact {
            Some(exact) => exact,
            None => {
                let exact = message_count(message).min(self.upper);
                self.exact = Some(exact);
                exact
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, ToolCall};

    #[test]
    fn exact_counts_match_cl100k() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert!(encoder_loaded());
    }

    #[test]
    fn upper_bound_is_never_below_the_exact_count() {
        let texts = [
            "plain ascii text with words",
            "ünïcödé — ☃ 日本語のテキスト",
            "{\"path\":\"src/main.rs\",\"limit\":40}",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "\n\n\t  \r\n",
        ];
        for text in texts {
            assert!(count(text) <= upper_bound(text), "{text}");
            assert!(estimate(text) <= upper_bound(text), "{text}");
        }
        let call = ToolCall::new(CallId::from("call_1"), "file_read", r#"{"path":"a.rs"}"#);
        let messages = [
            Message::user("what is in a.rs?"),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("call_1"), "file_read", "fn main() {}"),
        ];
        for message in &messages {
            let mut tokens = MessageTokens::new(message);
            assert_eq!(tokens.cached_exact(), None);
            let exact = tokens.exact(message);
            assert!(exact >= MESSAGE_OVERHEAD);
            assert!(exact <= tokens.upper());
            assert_eq!(tokens.cached_exact(), Some(exact));
        }
    }

    #[test]
    fn estimates_count_ascii_by_thirds_and_other_bytes_one_each() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abc"), 1);
        assert_eq!(estimate("abcd"), 2);
        assert_eq!(estimate(&"x".repeat(300)), 100);
        // "é" is two bytes, "☃" three.
        assert_eq!(estimate("é"), 2);
        assert_eq!(estimate("ab☃"), 4);
        let message = Message::user("a".repeat(30));
        assert_eq!(message_estimate(&message), MESSAGE_OVERHEAD + 10);
        let mut tokens = MessageTokens::new(&message);
        assert_eq!(tokens.counted(&message, CountMode::Estimate), 14);
        assert_eq!(tokens.cached_exact(), None);
    }
}
