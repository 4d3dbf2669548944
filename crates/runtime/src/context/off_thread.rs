//! Exact counts computed on a blocking thread, bounded by a cancellation token and a
//! time limit, so that no async thread ever waits on the encoder.

use std::time::Duration;

use oxydra_types::Message;
use tokio_util::sync::CancellationToken;

use super::tokens::{count, message_tokens, note_counted};

/// Why [`count_off_thread`] gave no counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountInterrupted {
    /// The cancellation token fired.
    Cancelled,
    /// The counts took longer than the time allowed.
    TimedOut,
}

/// What [`count_off_thread`] counted, in the order it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffThreadCounts {
    /// The messages' counts, as [`message_count`](super::tokens::message_count) gives them.
    pub messages: Vec<u32>,
    /// The texts' counts, as [`count`] gives them.
    pub texts: Vec<u32>,
}

/// The exact counts of `messages` and `texts`, computed on a blocking thread so that
/// no async thread waits on the encoder. Returns as soon as `cancel` fires or
/// `timeout` passes; the blocking thread then stops before its next item. Messages
/// counted this way are added to the calling thread's count of exact counts.
pub async fn count_off_thread(
    messages: Vec<Message>,
    texts: Vec<String>,
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<OffThreadCounts, CountInterrupted> {
    if messages.is_empty() && texts.is_empty() {
        return Ok(OffThreadCounts::default());
    }
    let stop = cancel.child_token();
    let worker_stop = stop.clone();
    // Whatever way this returns, the worker stops at its next message.
    let _stop_worker = stop.drop_guard();
    let work = tokio::task::spawn_blocking(move || {
        let mut counts = OffThreadCounts {
            messages: Vec::with_capacity(messages.len()),
            texts: Vec::with_capacity(texts.len()),
        };
        for message in &messages {
            if worker_stop.is_cancelled() {
                return None;
            }
            counts.messages.push(message_tokens(message, count));
        }
        for text in &texts {
            if worker_stop.is_cancelled() {
                return None;
            }
            counts.texts.push(count(text));
        }
        Some(counts)
    });
    let counts = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(CountInterrupted::Cancelled),
        joined = tokio::time::timeout(timeout, work) => match joined {
            Err(_) => return Err(CountInterrupted::TimedOut),
            Ok(Ok(Some(counts))) => counts,
            Ok(Ok(None)) => return Err(CountInterrupted::Cancelled),
            Ok(Err(error)) => {
                tracing::warn!(%error, "counting tokens on a blocking thread failed");
                return Ok(OffThreadCounts::default());
            }
        },
    };
    note_counted(u64::try_from(counts.messages.len()).unwrap_or(u64::MAX));
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::{MESSAGE_OVERHEAD, messages_counted_on_this_thread};

    #[tokio::test(flavor = "current_thread")]
    async fn counting_off_thread_honours_cancellation() {
        let messages = vec![Message::user("x".repeat(1_000_000)); 1_000];
        let cancel = CancellationToken::new();
        cancel.cancel();
        let outcome = count_off_thread(
            messages.clone(),
            Vec::new(),
            &cancel,
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(outcome, Err(CountInterrupted::Cancelled));
        let outcome = count_off_thread(
            messages,
            Vec::new(),
            &CancellationToken::new(),
            Duration::from_millis(1),
        )
        .await;
        assert_eq!(outcome, Err(CountInterrupted::TimedOut));
        let before = messages_counted_on_this_thread();
        let counts = count_off_thread(
            vec![Message::user("hello world")],
            vec!["hello world".to_owned()],
            &CancellationToken::new(),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        assert_eq!(counts.messages, vec![MESSAGE_OVERHEAD + 2]);
        assert_eq!(counts.texts, vec![2]);
        assert_eq!(messages_counted_on_this_thread() - before, 1);
    }
}
