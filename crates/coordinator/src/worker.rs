//! [`Worker`]: the run lifecycle, written once for every [`RunSource`]. A worker takes
//! one run at a time from its source, registers it (so a cancel reaches it), starts
//! it, executes it under its own cancellation token (a child of the coordinator's
//! shutdown token) while the source holds it, and reports how it ended: `completed`,
//! `failed`, `cancelled`, or `waiting_approval` with the requests it waits for
//! ([`end_of_run`]) — the worker is then free for the next run. A run queued again
//! once its approvals were decided is executed with the decisions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::blueprint::Blueprint;
use crate::run::{RunError, RunStatus};
use crate::run_end::end_of_run;
use crate::run_source::{RunEnd, RunSignals, RunSource, TakenRun};
use crate::runners::{RunExecutor, RunOutcome, RunRequest};

/// How long a cancelled executor may take to wind down before it is dropped.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// A run a worker has taken (at most one per worker).
pub(crate) struct ActiveRun {
    pub(crate) cancel: CancellationToken,
    pub(crate) by_user: Arc<AtomicBool>,
    pub(crate) done: watch::Receiver<bool>,
}

/// The runs the workers of one pool have taken, by run id.
pub(crate) type ActiveRuns = Arc<Mutex<HashMap<String, ActiveRun>>>;

/// One worker of a pool, taking runs from `source`.
pub(crate) struct Worker<S> {
    pub(crate) source: S,
    pub(crate) executor: Arc<dyn RunExecutor>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) active: ActiveRuns,
    /// Bumped whenever a run starts or ends here, so waiters on a run wake.
    pub(crate) changes: Arc<watch::Sender<u64>>,
}

impl<S: RunSource> Worker<S> {
    /// Takes and runs one run at a time until shutdown (or the source closes).
    pub(crate) async fn serve(self) {
        while let Some(run) = self.source.next(&self.shutdown).await {
            let span = tracing::info_span!("coordinator_run", run_id = %run.run_id,
                agent_name = %run.agent_name, resumed = run.resumed);
            self.run(run).instrument(span).await;
        }
    }

    fn changed(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    async fn run(&self, run: TakenRun<S::Ticket>) {
        let blueprint = match &run.blueprint {
            Ok(blueprint) => Arc::clone(blueprint),
            Err(error) => {
                let end = RunEnd {
                    status: RunStatus::Failed,
                    result: None,
                    error: Some(error.clone()),
                    pending: Vec::new(),
                    lost: false,
                    by_shutdown: false,
                };
                self.source.end(run, end).await;
                self.changed();
                return;
            }
        };
        let run_id = run.run_id.as_str().to_owned();
        let signals = RunSignals {
            cancel: self.shutdown.child_token(),
            by_user: Arc::new(AtomicBool::new(false)),
            lost: Arc::new(AtomicBool::new(false)),
            stop: CancellationToken::new(),
        };
        let (done_tx, done_rx) = watch::channel(false);
        // Registered before the run starts, so a cancellation from now on reaches it.
        if let Ok(mut active) = self.active.lock() {
            active.insert(
                run_id.clone(),
                ActiveRun {
                    cancel: signals.cancel.clone(),
                    by_user: Arc::clone(&signals.by_user),
                    done: done_rx,
                },
            );
        }
        self.changed();
        if run.cancel_requested {
            signals.by_user.store(true, Ordering::SeqCst);
            signals.cancel.cancel();
        }
        let holder = self
            .source
            .hold(&run, signals.clone())
            .map(|hold| tokio::spawn(hold.in_current_span()));
        let outcome = self.execute(&run, blueprint, &signals.cancel).await;
        signals.stop.cancel();
        if let Some(holder) = holder {
            let _ = holder.await;
        }
        let by_user = signals.by_user.load(Ordering::SeqCst);
        let (status, result, error, pending) =
            end_of_run(outcome, signals.cancel.is_cancelled(), by_user);
        for approval in &pending {
            tracing::info!(
                run_id = %run_id,
                approval_id = %approval.approval_id,
                call_id = %approval.call_id,
                tool = %approval.tool,
                expires_at = approval.expires_at,
                "approval_requested"
            );
        }
        let end = RunEnd {
            status,
            result,
            error,
            pending,
            lost: signals.lost.load(Ordering::SeqCst),
            by_shutdown: status == RunStatus::Failed && self.shutdown.is_cancelled() && !by_user,
        };
        self.source.end(run, end).await;
        if let Ok(mut active) = self.active.lock() {
            // Only this execution's entry: a run that waited for approval may have been
            // decided and taken by another worker of the pool in the meantime.
            let ours = active
                .get(&run_id)
                .is_some_and(|entry| Arc::ptr_eq(&entry.by_user, &signals.by_user));
            if ours {
                active.remove(&run_id);
            }
        }
        let _ = done_tx.send(true);
        self.changed();
    }

    /// Starts and executes the run, giving it [`CANCEL_GRACE`] to wind down once
    /// `cancel` fires; `None` when it never started (cancelled first, or no longer
    /// startable).
    async fn execute(
        &self,
        run: &TakenRun<S::Ticket>,
        blueprint: Arc<Blueprint>,
        cancel: &CancellationToken,
    ) -> Option<Result<RunOutcome, RunError>> {
        if cancel.is_cancelled() {
            return None;
        }
        let parameters = match self.source.start(run).await {
            Ok(Some(parameters)) => parameters,
            Ok(None) => return None,
            Err(error) => {
                tracing::error!(%error, "could not mark the run running");
                return Some(Err(RunError::new("internal", error.to_string())));
            }
        };
        let decisions = match self.source.take_decisions(run).await {
            Ok(decisions) => decisions,
            Err(error) => {
                tracing::error!(%error, "could not read the decisions on the run's approvals");
                return Some(Err(RunError::new("internal", error.to_string())));
            }
        };
        tracing::info!(decisions = decisions.len(), "run started");
        let request = RunRequest {
            run_id: run.run_id.clone(),
            blueprint,
            parameters,
            resumed: run.resumed || !decisions.is_empty(),
            decisions,
            used: run.used,
            ledger: self.source.ledger(run),
            cancel: cancel.clone(),
        };
        let execution = self.executor.execute(request);
        tokio::pin!(execution);
        let outcome = tokio::select! {
            outcome = &mut execution => outcome,
            () = cancel.cancelled() => {
                match tokio::time::timeout(CANCEL_GRACE, &mut execution).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(RunError::cancelled()),
                }
            }
        };
        Some(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::atomic::AtomicUsize;

    use async_trait::async_trait;
    use futures::FutureExt;
    use futures::future::BoxFuture;
    use oxydra_types::RunId;
    use serde_json::{Value, json};

    use crate::config::BlueprintConfig;
    use crate::error::CoordinatorError;
    use crate::run_ledger::RunLedger;
    use oxydra_runtime::PendingApproval;

    /// A source handing out scripted runs and recording what the worker did with them.
    #[derive(Default)]
    struct Scripted {
        runs: Mutex<VecDeque<TakenRun<()>>>,
        started: Arc<AtomicUsize>,
        /// Its hold reports the claim lost at once.
        lose: bool,
        ends: Arc<Mutex<Vec<(String, RunEnd)>>>,
    }

    #[async_trait]
    impl RunSource for Scripted {
        type Ticket = ();

        async fn next(&self, _shutdown: &CancellationToken) -> Option<TakenRun<()>> {
            self.runs.lock().unwrap().pop_front()
        }

        async fn start(&self, _run: &TakenRun<()>) -> Result<Option<Value>, CoordinatorError> {
            self.started.fetch_add(1, Ordering::SeqCst);
            Ok(Some(json!({"prompt": "p"})))
        }

        fn hold(&self, _run: &TakenRun<()>, signals: RunSignals) -> Option<BoxFuture<'static, ()>> {
            self.lose.then(|| {
                async move {
                    signals.lost.store(true, Ordering::SeqCst);
                    signals.cancel.cancel();
                }
                .boxed()
            })
        }

        fn ledger(&self, run: &TakenRun<()>) -> RunLedger {
            RunLedger::detached(run.run_id.as_str())
        }

        async fn take_decisions(
            &self,
            _run: &TakenRun<()>,
        ) -> Result<Vec<crate::approval_row::DecidedApproval>, CoordinatorError> {
            Ok(Vec::new())
        }

        async fn end(&self, run: TakenRun<()>, end: RunEnd) {
            self.ends
                .lock()
                .unwrap()
                .push((run.run_id.as_str().to_owned(), end));
        }
    }

    /// Returns the parameters, or waits for the cancel when told to block.
    struct Echo {
        block: bool,
    }

    #[async_trait]
    impl RunExecutor for Echo {
        async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError> {
            if self.block {
                run.cancel.cancelled().await;
                return Err(RunError::new("runtime", "stopped"));
            }
            Ok(run.parameters.into())
        }
    }

    fn taken(id: &str, blueprint: Result<Arc<Blueprint>, RunError>) -> TakenRun<()> {
        TakenRun {
            run_id: RunId::from(id),
            agent_name: "a".into(),
            blueprint,
            resumed: false,
            cancel_requested: false,
            used: crate::run_usage::RunUsage::default(),
            ticket: (),
        }
    }

    fn blueprint() -> Arc<Blueprint> {
        Arc::new(
            Blueprint::from_config(BlueprintConfig::agent("a", "An agent", "You act.")).unwrap(),
        )
    }

    /// Runs a worker over `source`'s runs until it has none left: the ends recorded
    /// and how many runs were started.
    async fn serve(
        source: Scripted,
        block: bool,
        shutdown: CancellationToken,
    ) -> (Vec<(String, RunEnd)>, usize) {
        let ends = Arc::clone(&source.ends);
        let started = Arc::clone(&source.started);
        let active: ActiveRuns = Arc::default();
        let worker = Worker {
            source,
            executor: Arc::new(Echo { block }),
            shutdown,
            active: Arc::clone(&active),
            changes: Arc::new(watch::channel(0).0),
        };
        worker.serve().await;
        assert!(active.lock().unwrap().is_empty(), "every run deregistered");
        let ends = ends.lock().unwrap().clone();
        (ends, started.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn runs_complete_in_order_with_their_parameters() {
        let source = Scripted::default();
        source
            .runs
            .lock()
            .unwrap()
            .extend([taken("r1", Ok(blueprint())), taken("r2", Ok(blueprint()))]);
        let (ends, started) = serve(source, false, CancellationToken::new()).await;
        assert_eq!(started, 2);
        let ids: Vec<&str> = ends.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2"]);
        for (_, end) in &ends {
            assert_eq!(end.status, RunStatus::Completed);
            assert_eq!(end.result, Some(json!({"prompt": "p"})));
            assert!(!end.lost && !end.by_shutdown);
        }
    }

    #[tokio::test]
    async fn a_run_this_worker_cannot_run_fails_without_starting() {
        let source = Scripted::default();
        let refused = RunError::new("config", "no agent named `x`");
        source
            .runs
            .lock()
            .unwrap()
            .push_back(taken("r1", Err(refused.clone())));
        let (ends, started) = serve(source, false, CancellationToken::new()).await;
        assert_eq!(started, 0);
        assert_eq!(ends.len(), 1);
        assert_eq!(ends[0].1.status, RunStatus::Failed);
        assert_eq!(ends[0].1.error, Some(refused));
    }

    #[tokio::test]
    async fn a_cancel_asked_before_the_take_ends_the_run_cancelled_unstarted() {
        let source = Scripted::default();
        let mut run = taken("r1", Ok(blueprint()));
        run.cancel_requested = true;
        source.runs.lock().unwrap().push_back(run);
        let (ends, started) = serve(source, false, CancellationToken::new()).await;
        assert_eq!(started, 0);
        assert_eq!(ends[0].1.status, RunStatus::Cancelled);
        assert_eq!(ends[0].1.error, Some(RunError::cancelled()));
        assert!(!ends[0].1.by_shutdown);
    }

    #[tokio::test]
    async fn a_lost_hold_stops_the_run_and_says_so() {
        let source = Scripted {
            lose: true,
            ..Scripted::default()
        };
        source
            .runs
            .lock()
            .unwrap()
            .push_back(taken("r1", Ok(blueprint())));
        let (ends, _) = serve(source, true, CancellationToken::new()).await;
        let end = &ends[0].1;
        assert!(end.lost);
        assert_eq!(end.status, RunStatus::Failed);
        assert_eq!(end.error, Some(RunError::interrupted()));
    }

    #[tokio::test]
    async fn a_run_cut_short_by_shutdown_is_reported_as_such() {
        let source = Scripted::default();
        source
            .runs
            .lock()
            .unwrap()
            .push_back(taken("r1", Ok(blueprint())));
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let ((ends, _), ()) = tokio::join!(serve(source, true, shutdown), async move {
            tokio::task::yield_now().await;
            stop.cancel();
        });
        let end = &ends[0].1;
        assert!(end.by_shutdown && !end.lost);
        assert_eq!(end.status, RunStatus::Failed);
        assert_eq!(end.error, Some(RunError::interrupted()));
    }

    /// Answers with what the worker gave it beside the parameters.
    struct ShowsUsed;

    #[async_trait]
    impl RunExecutor for ShowsUsed {
        async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError> {
            Ok(RunOutcome::Finished(json!({
                "resumed": run.resumed,
                "turns": run.used.turns,
                "cost": run.used.cost,
                "ledger": run.ledger.run_id(),
            })))
        }
    }

    #[tokio::test]
    async fn a_taken_over_run_is_executed_with_what_it_used_and_its_ledger() {
        let source = Scripted::default();
        let mut run = taken("r1", Ok(blueprint()));
        run.resumed = true;
        run.used = crate::run_usage::RunUsage {
            turns: 3,
            cost: 0.5,
            ..crate::run_usage::RunUsage::default()
        };
        source.runs.lock().unwrap().push_back(run);
        let ends = Arc::clone(&source.ends);
        let worker = Worker {
            source,
            executor: Arc::new(ShowsUsed),
            shutdown: CancellationToken::new(),
            active: Arc::default(),
            changes: Arc::new(watch::channel(0).0),
        };
        worker.serve().await;
        let ends = ends.lock().unwrap();
        assert_eq!(
            ends[0].1.result,
            Some(json!({"resumed": true, "turns": 3, "cost": 0.5, "ledger": "r1"}))
        );
    }

    fn waiting() -> Vec<PendingApproval> {
        crate::run_end::tests::waiting()
    }

    /// Stops every run for approval.
    struct Defers;

    #[async_trait]
    impl RunExecutor for Defers {
        async fn execute(&self, _run: RunRequest) -> Result<RunOutcome, RunError> {
            Ok(RunOutcome::AwaitingApproval(waiting()))
        }
    }

    #[tokio::test]
    async fn a_waiting_run_is_reported_with_its_requests_and_frees_the_worker() {
        let source = Scripted::default();
        source
            .runs
            .lock()
            .unwrap()
            .extend([taken("r1", Ok(blueprint())), taken("r2", Ok(blueprint()))]);
        let ends = Arc::clone(&source.ends);
        let active: ActiveRuns = Arc::default();
        let worker = Worker {
            source,
            executor: Arc::new(Defers),
            shutdown: CancellationToken::new(),
            active: Arc::clone(&active),
            changes: Arc::new(watch::channel(0).0),
        };
        // One worker, two runs: the first one waiting does not hold the worker.
        worker.serve().await;
        assert!(active.lock().unwrap().is_empty());
        let ends = ends.lock().unwrap();
        assert_eq!(ends.len(), 2);
        for (_, end) in ends.iter() {
            assert_eq!(end.status, RunStatus::WaitingApproval);
            assert_eq!(end.pending, waiting());
            assert!(end.result.is_none() && end.error.is_none());
        }
    }
}
