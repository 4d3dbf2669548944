//! Per-run rule state (`max_calls`, `exclusive_group`), kept on the executor by
//! [`SessionRunId`] so it lasts through every turn and heartbeat continuation of the run.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::context::SessionRunId;

/// Counters of one session run.
#[derive(Debug, Clone)]
pub(crate) struct RunConstraints {
    /// Calls per tool that ran successfully or are running (for `max_calls`).
    pub(crate) call_counts: HashMap<String, u32>,
    /// Group key → the member used first (for `exclusive_group`).
    pub(crate) exclusive_group_selections: HashMap<String, String>,
    /// When the run was first seen (for pruning).
    pub(crate) created_at: Instant,
}

impl RunConstraints {
    fn new(now: Instant) -> Self {
        Self {
            call_counts: HashMap::new(),
            exclusive_group_selections: HashMap::new(),
            created_at: now,
        }
    }
}

/// All live runs.
#[derive(Debug, Default)]
pub(crate) struct RunStates {
    runs: DashMap<SessionRunId, RunConstraints>,
}

impl RunStates {
    /// Read `run`'s counters (`None` for a run with none yet).
    pub(crate) fn read<R>(
        &self,
        run: SessionRunId,
        read: impl FnOnce(Option<&RunConstraints>) -> R,
    ) -> R {
        match self.runs.get(&run) {
            Some(state) => read(Some(state.value())),
            None => read(None),
        }
    }

    /// Apply `update` to `run`'s counters, creating them if needed.
    pub(crate) fn update(&self, run: SessionRunId, update: impl FnOnce(&mut RunConstraints)) {
        let mut entry = self
            .runs
            .entry(run)
            .or_insert_with(|| RunConstraints::new(Instant::now()));
        update(entry.value_mut());
    }

    /// Forget a finished run.
    pub(crate) fn remove(&self, run: SessionRunId) {
        self.runs.remove(&run);
    }

    /// Forget runs older than `ttl` (ones never completed).
    pub(crate) fn prune(&self, ttl: Duration, now: Instant) {
        self.runs
            .retain(|_, state| now.saturating_duration_since(state.created_at) < ttl);
    }

    /// How many runs have state.
    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }
}
