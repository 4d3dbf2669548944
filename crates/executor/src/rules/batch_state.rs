//! Per-batch rule state, kept on the executor by batch id so it survives heartbeat
//! continuations within the batch.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::context::BatchId;

/// Counters of one batch.
#[derive(Debug, Clone)]
pub(crate) struct BatchConstraints {
    /// Calls per tool that ran successfully or are running (for `max_calls`).
    pub(crate) call_counts: HashMap<String, u32>,
    /// Group key → the member used first (for `exclusive_group`).
    pub(crate) exclusive_group_selections: HashMap<String, String>,
    /// When the batch was first seen (for pruning).
    pub(crate) created_at: Instant,
}

impl BatchConstraints {
    fn new(now: Instant) -> Self {
        Self {
            call_counts: HashMap::new(),
            exclusive_group_selections: HashMap::new(),
            created_at: now,
        }
    }
}

/// All live batches.
#[derive(Debug, Default)]
pub(crate) struct BatchStates {
    batches: DashMap<BatchId, BatchConstraints>,
}

impl BatchStates {
    /// Read `batch`'s counters (`None` for a batch with none yet).
    pub(crate) fn read<R>(
        &self,
        batch: BatchId,
        read: impl FnOnce(Option<&BatchConstraints>) -> R,
    ) -> R {
        match self.batches.get(&batch) {
            Some(state) => read(Some(state.value())),
            None => read(None),
        }
    }

    /// Apply `update` to `batch`'s counters, creating them if needed.
    pub(crate) fn update(&self, batch: BatchId, update: impl FnOnce(&mut BatchConstraints)) {
        let mut entry = self
            .batches
            .entry(batch)
            .or_insert_with(|| BatchConstraints::new(Instant::now()));
        update(entry.value_mut());
    }

    /// Forget a finished batch.
    pub(crate) fn remove(&self, batch: BatchId) {
        self.batches.remove(&batch);
    }

    /// Forget batches older than `ttl` (ones never completed).
    pub(crate) fn prune(&self, ttl: Duration, now: Instant) {
        self.batches
            .retain(|_, state| now.saturating_duration_since(state.created_at) < ttl);
    }

    /// How many batches have state.
    pub(crate) fn len(&self) -> usize {
        self.batches.len()
    }
}
