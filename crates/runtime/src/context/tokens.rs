//! Measures of a text's tokens under `cl100k_base`, and the encoder, loaded once per
//! process and only when a window needs it.
//!
//! Counting exactly costs a BPE pass, and loading the encoder costs more (about 0.1 s of
//! CPU and 20 MiB), so a text has three measures:
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
//! - the **exact** count ([`count`]): a BPE pass with the loaded encoder over the
//!   first [`EXACT_PREFIX_BYTES`] of the text; the rest of a longer text (a tool's
//!   megabytes, a hostile model's answer) counts at the prefix's tokens per byte, or
//!   its estimate if that is higher. A BPE pass costs about a millisecond per
//!   kilobyte, so one text never costs more than a bounded time however long it is.
//!
//! The encoder is a shared, read-only resource: whether it is loaded says nothing about
//! which measure budgeting uses — each context window decides that for itself (its
//! `CountMode`). Async code calls [`load_encoder`], which loads it once per process on a
//! blocking thread (`spawn_blocking`); the synchronous [`count`] loads it in place when
//! nothing loaded it before (fine outside an async runtime).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::ThreadId;

use oxydra_types::Message;
use tiktoken_rs::CoreBPE;

use super::part_tokens::parts_tokens;

/// The encoder loads once the estimate of a prompt reaches this share (in percent) of
/// its limit; below it, estimates are trusted.
pub const NEAR_LIMIT_PERCENT: u64 = 70;

/// The bytes of a text the token count runs the encoder over; the rest is scaled from them.
pub const EXACT_PREFIX_BYTES: usize = 64 * 1024;

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
    /// Messages counted exactly on this thread (for tests).
    static MESSAGES_COUNTED: Cell<u64> = const { Cell::new(0) };
    /// Bytes of text the encoder has been run over on this thread (for tests).
    static ENCODED_ON_THIS_THREAD: Cell<u64> = const { Cell::new(0) };
    /// Bytes of text the encoder has been run over for this thread: on it, or by the
    /// counts it had made on blocking threads (for tests).
    static ENCODED_FOR_THIS_THREAD: Arc<AtomicU64> = Arc::default();
    /// Whose tally a blocking thread adds its encoded bytes to while it counts for
    /// another thread (see [`encoding_for`]).
    static ENCODING_FOR: RefCell<Option<Arc<AtomicU64>>> = const { RefCell::new(None) };
}

/// The calling thread's tally of bytes encoded for it, to hand to [`encoding_for`] on
/// the blocking thread that counts for it.
pub(super) fn encoded_tally() -> Arc<AtomicU64> {
    ENCODED_FOR_THIS_THREAD.with(Arc::clone)
}

/// Runs `work` with the bytes it encodes added to `tally` (the tally of the thread
/// that asked for the counts) rather than to this thread's own.
pub(super) fn encoding_for<T>(tally: Arc<AtomicU64>, work: impl FnOnce() -> T) -> T {
    let previous = ENCODING_FOR.with(|current| current.replace(Some(tally)));
    let output = work();
    ENCODING_FOR.with(|current| current.replace(previous));
    output
}

/// Runs the encoder over `text` (and notes the bytes it was run over).
fn encode(encoder: &CoreBPE, text: &str) -> usize {
    let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
    ENCODED_ON_THIS_THREAD.with(|encoded| encoded.set(encoded.get().saturating_add(bytes)));
    ENCODING_FOR.with(|current| match &*current.borrow() {
        Some(tally) => tally.fetch_add(bytes, Ordering::Relaxed),
        None => ENCODED_FOR_THIS_THREAD.with(|tally| tally.fetch_add(bytes, Ordering::Relaxed)),
    });
    encoder.encode_ordinary(text).len()
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
#[cfg(any(test, feature = "testing"))]
pub fn encoder_loaded() -> bool {
    ENCODER.get().is_some()
}

/// The thread the encoder was loaded on, if it was.
#[cfg(any(test, feature = "testing"))]
pub fn encoder_load_thread() -> Option<ThreadId> {
    LOADED_ON.get().copied()
}

/// How many bytes of text the encoder has been run over for the calling thread: on it,
/// or on the blocking threads counting for it (for tests: a current-thread tokio
/// test sees the counts of the runs it drives, whatever other tests count meanwhile).
#[cfg(any(test, feature = "testing"))]
pub fn bytes_encoded() -> u64 {
    ENCODED_FOR_THIS_THREAD.with(|tally| tally.load(Ordering::Relaxed))
}

/// How many bytes of text the encoder has been run over on the calling thread (for
/// tests: zero on a current-thread tokio test's thread when every count ran off it).
#[cfg(any(test, feature = "testing"))]
pub fn bytes_encoded_on_this_thread() -> u64 {
    ENCODED_ON_THIS_THREAD.with(Cell::get)
}

/// How many messages have been counted exactly on the calling thread (for tests: a
/// current-thread tokio test sees every count of the runs it drives).
#[cfg(any(test, feature = "testing"))]
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

/// The `cl100k_base` token count of `text`: exact up to [`EXACT_PREFIX_BYTES`];
/// beyond, the prefix is counted exactly and the rest at the prefix's tokens per byte
/// (or by its [`estimate`] when that is higher), so the cost is bounded. Loads the
/// encoder in place on first use unless [`load_encoder`] did (async code awaits that
/// first); should it fail to load, the byte count is returned, which is still an
/// upper bound.
pub fn count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let Some(encoder) = encoder() else {
        return upper_bound(text);
    };
    if text.len() <= EXACT_PREFIX_BYTES {
        return clamp(encode(encoder, text));
    }
    let mut cut = EXACT_PREFIX_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let (head, rest) = text.split_at(cut);
    let head_tokens = encode(encoder, head);
    let scaled = rest
        .len()
        .saturating_mul(head_tokens)
        .div_ceil(head.len().max(1));
    let rest_tokens = scaled.max(usize::try_from(estimate(rest)).unwrap_or(usize::MAX));
    clamp(head_tokens.saturating_add(rest_tokens)).min(upper_bound(text))
}

/// Adds `messages` to the calling thread's count of messages counted exactly.
pub(super) fn note_counted(messages: u64) {
    MESSAGES_COUNTED.with(|counted| counted.set(counted.get().saturating_add(messages)));
}

/// The tokens `message` takes in a prompt, each of its texts measured by `measure`
/// and its parts (images, documents) by their stated estimate
/// ([`part_tokens`](super::part_tokens)), never as the text of their bytes.
pub(super) fn message_tokens(message: &Message, measure: fn(&str) -> u32) -> u32 {
    let mut total = MESSAGE_OVERHEAD
        .saturating_add(measure(message.text()))
        .saturating_add(parts_tokens(message));
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
    note_counted(1);
    message_tokens(message, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_match_cl100k() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert!(encoder_loaded());
    }

    #[test]
    fn long_texts_count_a_prefix_exactly_and_scale_the_rest() {
        let prose = "the quick brown fox jumps over the lazy dog ".repeat(10_000);
        let head = &prose[..EXACT_PREFIX_BYTES];
        let head_tokens = count(head) as usize;
        let total = count(&prose) as usize;
        let rest = &prose[EXACT_PREFIX_BYTES..];
        let scaled = head_tokens + (head_tokens * rest.len()).div_ceil(head.len());
        let estimated = head_tokens + estimate(rest) as usize;
        // Errs high: the larger of the scaled prefix and the estimate of the rest.
        assert_eq!(
            total,
            scaled.max(estimated),
            "{total} vs {scaled} / {estimated}"
        );
        assert!(total <= prose.len());
        // A text that tokenizes badly past the prefix is not counted below its estimate.
        let mixed = format!("{}{}", "a".repeat(EXACT_PREFIX_BYTES), "é".repeat(100_000));
        assert!(count(&mixed) as usize >= 200_000);
    }

    #[test]
    fn a_huge_text_costs_about_as_much_as_its_prefix() {
        // Exactly, 50 MB took over a minute. Only the first EXACT_PREFIX_BYTES go to the
        // tokenizer: the count is the prefix's exact count scaled to the whole length
        // (or the estimate of the rest, if higher), whatever the rest holds.
        let text = "x".repeat(50 * 1024 * 1024);
        let tokens = count(&text);
        assert!(tokens > 0 && tokens <= upper_bound(&text));
        let (head, rest) = text.split_at(EXACT_PREFIX_BYTES);
        let head_tokens = count(head) as usize;
        let scaled = (rest.len() * head_tokens).div_ceil(head.len());
        let expected = head_tokens + scaled.max(estimate(rest) as usize);
        assert_eq!(tokens as usize, expected.min(upper_bound(&text) as usize));
        // A different tail of the same length costs the same: it was never tokenized.
        let mut other = "x".repeat(EXACT_PREFIX_BYTES);
        other.push_str(&"y z".repeat(rest.len() / 3));
        other.push_str(&"x".repeat(rest.len() % 3));
        assert_eq!(other.len(), text.len());
        let other_expected =
            head_tokens + scaled.max(estimate(&other[EXACT_PREFIX_BYTES..]) as usize);
        assert_eq!(
            count(&other) as usize,
            other_expected.min(upper_bound(&other) as usize)
        );
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
    }
}
