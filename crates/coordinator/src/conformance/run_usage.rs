//! What a run used of its budgets, on any backend: recorded only while it runs, each
//! counter only growing, kept when it ends and after a restart.

use std::sync::Arc;

use super::RunStoreBackend;
use crate::run::RunStatus;
use crate::run_usage::RunUsage;
use crate::store::RunStore;

/// A run's usage is zero until recorded; recorded only while it runs; never lowered
/// (a late writer with smaller counts changes nothing, larger ones are kept counter by
/// counter, even from writers racing); kept when the run ends and when the store is
/// opened again; unknown runs record nothing.
pub async fn run_usage_is_recorded_while_running_and_only_grows<B: RunStoreBackend>(backend: &B) {
    let store = Arc::new(backend.open());
    store.insert_run(super::pending("r1")).await.unwrap();
    let usage = |turns: u32, input_tokens: u64, output_tokens: u64, cost: f64| RunUsage {
        turns,
        input_tokens,
        output_tokens,
        cost,
    };
    let stored = || {
        let store = Arc::clone(&store);
        async move { store.get_run("r1").await.unwrap().unwrap().usage }
    };
    assert_eq!(stored().await, RunUsage::default());
    // Pending: nothing is recorded.
    assert!(!store.record_usage("r1", usage(1, 1, 1, 0.1)).await.unwrap());
    assert_eq!(stored().await, RunUsage::default());

    store.start_run("r1").await.unwrap().unwrap();
    assert!(
        store
            .record_usage("r1", usage(2, 100, 10, 0.25))
            .await
            .unwrap()
    );
    assert_eq!(stored().await, usage(2, 100, 10, 0.25));
    // A late writer with smaller counts lowers nothing; each larger counter is kept.
    assert!(
        store
            .record_usage("r1", usage(1, 500, 5, 0.125))
            .await
            .unwrap()
    );
    assert_eq!(stored().await, usage(2, 500, 10, 0.25));
    // Writers racing: the largest of each counter wins, whatever the order.
    let writers: Vec<_> = (1..=16u32)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let written = RunUsage {
                    turns: n,
                    input_tokens: u64::from(n) * 1_000,
                    output_tokens: u64::from(17 - n),
                    cost: f64::from(n) / 8.0,
                };
                store.record_usage("r1", written).await.unwrap()
            })
        })
        .collect();
    for writer in writers {
        assert!(writer.await.unwrap());
    }
    let raced = usage(16, 16_000, 16, 2.0);
    assert_eq!(stored().await, raced);
    // Counts as large as a backend can hold round-trip.
    let large = usage(u32::MAX, i64::MAX as u64, i64::MAX as u64, 1e12);
    assert!(store.record_usage("r1", large).await.unwrap());
    assert_eq!(stored().await, large);

    // Ended: kept, and no longer changed.
    assert!(
        store
            .finish_run("r1", RunStatus::Completed, None, None)
            .await
            .unwrap()
    );
    assert!(!store.record_usage("r1", usage(0, 0, 0, 0.0)).await.unwrap());
    assert_eq!(stored().await, large);
    assert!(
        !store
            .record_usage("missing", usage(1, 1, 1, 1.0))
            .await
            .unwrap()
    );
    drop(store);
    let reopened = backend.open();
    assert_eq!(reopened.get_run("r1").await.unwrap().unwrap().usage, large);
}
