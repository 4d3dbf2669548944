//! Exact counts computed on a blocking thread, bounded by a cancellation token and a
//! time limit, so that no async thread ever waits on the encoder.
//!
//! The encoder's load ([`load_encoder_until_cancelled`]) is bounded by the cancellation
//! token alone: a one-off, fixed cost per process (whatever the history holds), it
//! would otherwise eat a short turn timeout whole on a loaded machine. The counts
//! ([`count_off_thread`]), which grow with the history, are bounded by both.

use std::time::Duration;

use oxydra_types::Message;
use tokio_util::sync::CancellationToken;

use super::count_cache::fingerprint;
use super::tokens::{self, count, message_tokens, note_counted};
use crate::budget::Budget;
use crate::error::RuntimeError;

/// Why [`count_off_thread`] gave no counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountInterrupted {
    /// The cancellation token fired.
    Cancelled,
    /// The counts took longer than the time allowed.
    TimedOut,
}

impl CountInterrupted {
    /// The run's error: [`RuntimeError::Cancelled`], or the `turn_timeout` budget error
    /// naming `timeout`, the time counting was allowed.
    pub fn into_error(self, timeout: Duration) -> RuntimeError {
        match self {
            Self::Cancelled => RuntimeError::Cancelled,
            Self::TimedOut => RuntimeError::budget(
                Budget::TurnTimeout,
                format!(
                    "counting the prompt's tokens did not finish within {} ms",
                    timeout.as_millis()
                ),
            ),
        }
    }
}

/// Loads the encoder (on a blocking thread, once per process: see
/// [`tokens::load_encoder`]), returning as soon as `cancel` fires. A load cut short
/// goes on on its blocking thread; the next call waits for it there. Cancellation wins
/// even when the encoder is loaded already.
pub async fn load_encoder_until_cancelled(
    cancel: &CancellationToken,
) -> Result<(), CountInterrupted> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(CountInterrupted::Cancelled),
        () = tokens::load_encoder() => Ok(()),
    }
}

/// What [`count_off_thread`] counted, in the order it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffThreadCounts {
    /// The messages' counts, as [`message_count`](super::tokens::message_count) gives them.
    pub messages: Vec<u32>,
    /// The messages' [`fingerprint`]s, computed beside their counts so that keeping
    /// the counts for the next run costs the async thread nothing.
    pub fingerprints: Vec<u64>,
    /// The texts' counts, as [`count`] gives them.
    pub texts: Vec<u32>,
}

/// The exact counts of `messages` and `texts`, computed on a blocking thread so that
/// no async thread waits on the encoder. Returns as soon as `cancel` fires or
/// `timeout` passes; the blocking thread then stops before its next item. Messages
/// counted this way are added to the calling thread's count of exact counts, and the
/// bytes the encoder ran over to the bytes encoded for it (both for tests).
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
    let tally = tokens::encoded_tally();
    let work = tokio::task::spawn_blocking(move || {
        tokens::encoding_for(tally, || count_all(&messages, &texts, &worker_stop))
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

/// The counts of `messages` and `texts`, or `None` once `stop` fires (checked before
/// each item).
fn count_all(
    messages: &[Message],
    texts: &[String],
    stop: &CancellationToken,
) -> Option<OffThreadCounts> {
    let mut counts = OffThreadCounts {
        messages: Vec::with_capacity(messages.len()),
        fingerprints: Vec::with_capacity(messages.len()),
        texts: Vec::with_capacity(texts.len()),
    };
    for message in messages {
        if stop.is_cancelled() {
            return None;
        }
        counts.messages.push(message_tokens(message, count));
        counts.fingerprints.push(fingerprint(message));
    }
    for text in texts {
        if stop.is_cancelled() {
            return None;
        }
        counts.texts.push(count(text));
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::{
        MESSAGE_OVERHEAD, bytes_encoded, bytes_encoded_on_this_thread, encoder_loaded,
        messages_counted_on_this_thread,
    };

    #[tokio::test(flavor = "current_thread")]
    async fn loading_the_encoder_honours_cancellation() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            load_encoder_until_cancelled(&cancel).await,
            Err(CountInterrupted::Cancelled)
        );
        // A load cut short goes on; the next call finds it done or waits for it.
        load_encoder_until_cancelled(&CancellationToken::new())
            .await
            .unwrap();
        assert!(encoder_loaded());
        assert_eq!(
            load_encoder_until_cancelled(&cancel).await,
            Err(CountInterrupted::Cancelled)
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn counts_come_with_fingerprints_and_are_encoded_off_this_thread() {
        let messages = vec![Message::user("hello world"), Message::assistant("hi")];
        let encoded = bytes_encoded();
        let counts = count_off_thread(
            messages.clone(),
            Vec::new(),
            &CancellationToken::new(),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        let prints: Vec<u64> = messages.iter().map(fingerprint).collect();
        assert_eq!(counts.fingerprints, prints);
        assert_eq!(bytes_encoded_on_this_thread(), 0);
        // "hello world" and "hi", encoded for this thread on a blocking one.
        assert_eq!(bytes_encoded() - encoded, 13);
    }

    #[test]
    fn interruptions_become_the_runs_errors() {
        let error = CountInterrupted::TimedOut.into_error(Duration::from_millis(200));
        assert_eq!(
            error.to_string(),
            "budget `turn_timeout` exceeded: counting the prompt's tokens did not finish \
             within 200 ms"
        );
        let error = CountInterrupted::Cancelled.into_error(Duration::from_millis(200));
        assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn counting_off_thread_honours_cancellation() {
        // 100 prefixes: seconds of encoder work, far more than the 1 ms allowed below.
        let messages = vec![Message::user("x".repeat(100_000)); 100];
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
