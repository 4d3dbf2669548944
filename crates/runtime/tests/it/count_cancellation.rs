//! Cancelling a run while it counts a long history. (The test watches this process's
//! encoder being loaded: nextest runs each test in a process of its own.)

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use oxydra_memory::SqliteMemory;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, RuntimeError, RuntimeLimits, testing};
use oxydra_types::{Message, SessionId};
use tokio_util::sync::CancellationToken;

/// The run loads the encoder, then counts 100 messages of 128 KiB (ten seconds of
/// encoder work unoptimised). Cancelled once the encoder is loaded, it ends as
/// `Cancelled` without asking the provider and without waiting for the counts: when it
/// returns, the encoder has been run over fewer than half of the messages. The only
/// wall-clock bound is on the time from the cancellation to the return, where nothing
/// is left to wait for; loading the session and the encoder before it may take as long
/// as a loaded machine makes them.
#[tokio::test(flavor = "current_thread")]
async fn cancelling_while_counting_returns_promptly() {
    assert!(!testing::encoder_loaded());
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![ScriptedTurn::text("never reached")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits({
            let mut custom = RuntimeLimits::default();
            custom.context_window = Some(4_000);
            custom.max_output_tokens = Some(500);
            custom
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    let history: Vec<Message> = (0..100)
        .map(|i| {
            let text = format!("{i} {}", "b".repeat(128 * 1024));
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect();
    runtime.append_messages(&session, history).await.unwrap();
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            while !testing::encoder_loaded() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let cancelled_at = Instant::now();
            cancel.cancel();
            cancelled_at
        })
    };
    // Only a guard against a hang: the bound asserted is the one after cancelling.
    let error = tokio::time::timeout(
        Duration::from_secs(300),
        runtime.session(&session).prompt("and now?").cancel(&cancel),
    )
    .await
    .expect("the run did not end")
    .unwrap_err();
    let returned_at = Instant::now();
    let encoded = testing::bytes_encoded();
    assert!(matches!(error, RuntimeError::Cancelled), "{error}");
    assert!(provider.requests().is_empty());
    let cancelled_at = canceller.await.unwrap();
    let after_cancel = returned_at.duration_since(cancelled_at);
    assert!(
        after_cancel < Duration::from_secs(5),
        "the run ended {after_cancel:?} after being cancelled"
    );
    // Each message costs one prefix; counting them all would have run the encoder
    // over 100 of them.
    let all = 100 * testing::EXACT_PREFIX_BYTES as u64;
    assert!(
        encoded < all / 2,
        "the encoder ran over {encoded} bytes of {all}"
    );
}
