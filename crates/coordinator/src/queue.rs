//! The worker pool: a fixed set of `max_concurrent_runs` [`Worker`]s, taking runs from
//! this process's own queue ([`LocalSource`]) or, on a store shared by several
//! processes, claiming them from the store ([`ClaimSource`]). A queued run costs an id
//! and a blueprint handle in memory (its parameters stay in the database row) — no
//! task, no token — so a flood of accepted runs cannot grow the number of tasks. The
//! pool cancels runs, waits for them and shuts down; each run's lifecycle is the
//! worker's.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oxydra_types::RunId;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::blueprint::Blueprint;
use crate::claim_source::{ClaimSource, SharedSettings};
use crate::error::CoordinatorError;
use crate::local_source::{LocalSource, Queued, Receiver};
use crate::run::{RunError, RunStatus};
use crate::run_source::RunSource;
use crate::runners::RunExecutor;
use crate::store::RunStore;
use crate::worker::{ActiveRuns, Worker};

/// How often a waiter on a run of a shared queue looks at the store (the run may be
/// executing in another process).
const SHARED_POLL: Duration = Duration::from_millis(100);

pub(crate) struct RunQueue {
    store: Arc<dyn RunStore>,
    sender: mpsc::UnboundedSender<Queued>,
    receiver: Receiver,
    tracker: TaskTracker,
    shutdown: CancellationToken,
    active: ActiveRuns,
    /// Bumped whenever a run starts or ends here, so waiters on a queued run wake.
    changes: Arc<watch::Sender<u64>>,
    /// The store's shared queue, when runs are claimed from the store.
    shared: Option<SharedSettings>,
}

impl RunQueue {
    /// Starts `workers` worker tasks (call from within a Tokio runtime): taking runs
    /// from this process's own queue, or with `shared` claiming them from the store.
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        executor: Arc<dyn RunExecutor>,
        workers: usize,
        shared: Option<SharedSettings>,
    ) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        let receiver: Receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        let queue = Self {
            store,
            sender,
            receiver,
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            active: Arc::new(Mutex::new(HashMap::new())),
            changes: Arc::new(watch::channel(0).0),
            shared,
        };
        if let Some(settings) = &queue.shared {
            let process = oxydra_memory::LeaseOwner::generate().id;
            for index in 0..workers {
                queue.spawn(
                    index,
                    ClaimSource {
                        settings: settings.clone(),
                        store: Arc::clone(&queue.store),
                        holder: format!("{process}-w{index}"),
                    },
                    &executor,
                );
            }
            return queue;
        }
        for index in 0..workers {
            queue.spawn(
                index,
                LocalSource {
                    store: Arc::clone(&queue.store),
                    receiver: Arc::clone(&queue.receiver),
                },
                &executor,
            );
        }
        queue
    }

    /// Starts worker `index` taking runs from `source`.
    fn spawn<S: RunSource>(&self, index: usize, source: S, executor: &Arc<dyn RunExecutor>) {
        let worker = Worker {
            source,
            executor: Arc::clone(executor),
            shutdown: self.shutdown.clone(),
            active: Arc::clone(&self.active),
            changes: Arc::clone(&self.changes),
        };
        self.tracker.spawn(
            worker
                .serve()
                .instrument(tracing::debug_span!("coordinator_worker", worker = index)),
        );
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// How many worker tasks are alive (the pool size, whatever the queue length).
    #[cfg(test)]
    #[cfg(feature = "sqlite")]
    pub(crate) fn worker_tasks(&self) -> usize {
        self.tracker.len()
    }

    /// Queues a stored, pending run. Refused once the coordinator is shutting down.
    pub(crate) fn enqueue(
        &self,
        run_id: RunId,
        blueprint: Arc<Blueprint>,
    ) -> Result<(), CoordinatorError> {
        self.queue(run_id, blueprint, false)
    }

    /// Queues a run that waited for approval and is pending again (its decisions
    /// stored): the worker that takes it resumes it with them.
    pub(crate) fn requeue(
        &self,
        run_id: RunId,
        blueprint: Arc<Blueprint>,
    ) -> Result<(), CoordinatorError> {
        self.queue(run_id, blueprint, true)
    }

    /// With a shared queue, wakes an idle worker of this process (a run became
    /// pending in the store) and says so; `false` for this process's own queue.
    pub(crate) fn wake_shared(&self) -> bool {
        match &self.shared {
            Some(shared) => {
                shared.wake.notify_one();
                true
            }
            None => false,
        }
    }

    /// The token that fires when the coordinator begins to shut down.
    pub(crate) fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    fn queue(
        &self,
        run_id: RunId,
        blueprint: Arc<Blueprint>,
        resumed: bool,
    ) -> Result<(), CoordinatorError> {
        if self.is_shutting_down() {
            return Err(CoordinatorError::ShuttingDown);
        }
        if let Some(shared) = &self.shared {
            // The run is in the store already: wake an idle worker of this process.
            shared.wake.notify_one();
            return Ok(());
        }
        self.sender
            .send(Queued {
                run_id,
                blueprint,
                resumed,
            })
            .map_err(|_| CoordinatorError::ShuttingDown)
    }

    /// Signals the active run `run_id` as cancelled by the user; its `done` receiver.
    fn signal(&self, run_id: &str) -> Option<watch::Receiver<bool>> {
        let active = self.active.lock().ok()?;
        let run = active.get(run_id)?;
        run.by_user.store(true, Ordering::SeqCst);
        run.cancel.cancel();
        Some(run.done.clone())
    }

    /// Cancels run `run_id`. A run a worker has taken is signalled and awaited up to
    /// `wait`; a queued one is ended `cancelled` in the store, so the worker that later
    /// takes its id finds it no longer pending and skips it.
    pub(crate) async fn cancel(
        &self,
        run_id: &str,
        wait: Duration,
    ) -> Result<(), CoordinatorError> {
        if let Some(done) = self.signal(run_id) {
            let _ = wait_done(done, wait).await;
            return Ok(());
        }
        if let Some(shared) = &self.shared {
            // Held by another process (or pending): its holder sees the request when
            // it next renews its claim.
            shared.queue.request_cancel(run_id).await?;
            self.wait(run_id, wait).await;
            return Ok(());
        }
        let ended = self
            .store
            .finish_run(
                run_id,
                RunStatus::Cancelled,
                None,
                Some(RunError::cancelled()),
            )
            .await?;
        // A worker may have taken the run between the check and the update (a worker
        // registers a run before starting it): make sure it stops.
        if let Some(done) = self.signal(run_id) {
            let _ = wait_done(done, wait).await;
        }
        if ended {
            self.changes
                .send_modify(|count| *count = count.wrapping_add(1));
        }
        Ok(())
    }

    /// Waits up to `wait` for run `run_id` to end (or to stop for a person's approval),
    /// whether a worker has it or it is still queued; `false` if it is still going.
    pub(crate) async fn wait(&self, run_id: &str, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            // Subscribe before looking, so a change in between is not missed.
            let mut changes = self.changes.subscribe();
            let done = match self.active.lock() {
                Ok(active) => active.get(run_id).map(|run| run.done.clone()),
                Err(_) => None,
            };
            if let Some(done) = done {
                return wait_done(done, deadline.saturating_duration_since(Instant::now())).await;
            }
            match self.store.get_run(run_id).await {
                Ok(Some(run))
                    if !run.status.is_terminal() && run.status != RunStatus::WaitingApproval => {}
                // Ended, waiting for a person, unknown or unreadable: nothing to wait for.
                _ => return true,
            }
            if self.shared.is_some() {
                // Another process may be running it: look again shortly.
                if Instant::now() >= deadline {
                    return false;
                }
                let next = (Instant::now() + SHARED_POLL).min(deadline);
                let _ = tokio::time::timeout_at(next, changes.changed()).await;
                continue;
            }
            if !matches!(
                tokio::time::timeout_at(deadline, changes.changed()).await,
                Ok(Ok(()))
            ) {
                return false;
            }
        }
    }

    /// Stops taking runs, cancels the active ones (they end `failed` / `interrupted`),
    /// waits for the workers, then ends every run still queued `failed` /
    /// `interrupted`.
    pub(crate) async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        let mut receiver = self.receiver.lock().await;
        receiver.close();
        let mut interrupted = 0_usize;
        while let Ok(queued) = receiver.try_recv() {
            match self
                .store
                .finish_run(
                    queued.run_id.as_str(),
                    RunStatus::Failed,
                    None,
                    Some(RunError::interrupted()),
                )
                .await
            {
                Ok(ended) => interrupted += usize::from(ended),
                Err(error) => {
                    tracing::error!(%error, run_id = %queued.run_id, "could not end a queued run");
                }
            }
        }
        if interrupted > 0 {
            tracing::info!(runs = interrupted, "queued runs ended as interrupted");
        }
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }
}

async fn wait_done(mut done: watch::Receiver<bool>, wait: Duration) -> bool {
    tokio::time::timeout(wait, done.wait_for(|finished| *finished))
        .await
        .is_ok_and(|result| result.is_ok())
}

#[cfg(test)]
#[cfg(feature = "sqlite")]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    use async_trait::async_trait;
    use serde_json::json;
    use tokio::sync::Semaphore;

    use crate::runners::RunRequest;

    use crate::config::BlueprintConfig;
    use crate::run::{Run, RunLineage, new_run_id};
    use crate::sqlite::SqliteRunStore;

    /// Counts how many runs it executes at once; each run waits for a permit.
    struct Counting {
        release: Arc<Semaphore>,
        in_flight: AtomicUsize,
        max_in_flight: AtomicUsize,
        executed: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl RunExecutor for Counting {
        async fn execute(&self, run: RunRequest) -> Result<crate::runners::RunOutcome, RunError> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            self.executed
                .lock()
                .unwrap()
                .push(run.run_id.as_str().to_owned());
            let permit = tokio::select! {
                permit = self.release.acquire() => permit.ok(),
                () = run.cancel.cancelled() => None,
            };
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            match permit {
                Some(permit) => {
                    permit.forget();
                    Ok(run.parameters.into())
                }
                None => Err(RunError::cancelled()),
            }
        }
    }

    fn counting() -> Arc<Counting> {
        Arc::new(Counting {
            release: Arc::new(Semaphore::new(0)),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            executed: Mutex::new(Vec::new()),
        })
    }

    async fn submit(
        store: &dyn RunStore,
        queue: &RunQueue,
        blueprint: &Arc<Blueprint>,
        n: usize,
    ) -> String {
        let run_id = new_run_id();
        store
            .insert_run(Run::pending(
                run_id.as_str(),
                blueprint.name(),
                json!({"prompt": format!("task {n}")}),
                RunLineage::root(run_id.as_str()),
            ))
            .await
            .unwrap();
        let id = run_id.as_str().to_owned();
        queue.enqueue(run_id, Arc::clone(blueprint)).unwrap();
        id
    }

    fn blueprint() -> Arc<Blueprint> {
        Arc::new(
            Blueprint::from_config(BlueprintConfig::agent("a", "An agent", "You act.")).unwrap(),
        )
    }

    async fn wait_for(mut condition: impl FnMut() -> bool) {
        for _ in 0..100 {
            if condition() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("condition not reached within 1 s");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_queued_runs_share_a_fixed_pool_and_all_complete() {
        let store = Arc::new(SqliteRunStore::open(None).unwrap());
        let executor = counting();
        let queue = RunQueue::new(store.clone(), executor.clone(), 3, None);
        let blueprint = blueprint();
        let mut ids = Vec::new();
        for n in 0..100 {
            ids.push(submit(store.as_ref(), &queue, &blueprint, n).await);
        }
        wait_for(|| executor.in_flight.load(Ordering::SeqCst) == 3).await;
        // 100 accepted runs, still only the 3 worker tasks.
        assert_eq!(queue.worker_tasks(), 3);
        let mut pending = 0;
        for id in &ids {
            if store.get_run(id).await.unwrap().unwrap().status == RunStatus::Pending {
                pending += 1;
            }
        }
        assert_eq!(pending, 97);
        executor.release.add_permits(100);
        for (n, id) in ids.iter().enumerate() {
            assert!(queue.wait(id, Duration::from_secs(1)).await, "run {n}");
            let run = store.get_run(id).await.unwrap().unwrap();
            assert_eq!(run.status, RunStatus::Completed, "{run:?}");
            assert_eq!(run.result, Some(json!({"prompt": format!("task {n}")})));
        }
        assert_eq!(executor.max_in_flight.load(Ordering::SeqCst), 3);
        assert_eq!(executor.executed.lock().unwrap().len(), 100);
        assert_eq!(queue.worker_tasks(), 3);
        queue.shutdown().await;
        assert_eq!(queue.worker_tasks(), 0);
    }

    #[tokio::test]
    async fn a_queued_run_cancelled_never_starts_and_waiters_see_it_end() {
        let store = Arc::new(SqliteRunStore::open(None).unwrap());
        let executor = counting();
        let queue = RunQueue::new(store.clone(), executor.clone(), 1, None);
        let blueprint = blueprint();
        let first = submit(store.as_ref(), &queue, &blueprint, 0).await;
        let second = submit(store.as_ref(), &queue, &blueprint, 1).await;
        let third = submit(store.as_ref(), &queue, &blueprint, 2).await;
        wait_for(|| executor.in_flight.load(Ordering::SeqCst) == 1).await;

        // A waiter on a queued run is woken when it ends.
        let wait = queue.wait(&second, Duration::from_secs(1));
        let cancel = async {
            tokio::task::yield_now().await;
            queue.cancel(&second, Duration::from_secs(1)).await.unwrap();
        };
        let (ended, ()) = tokio::join!(wait, cancel);
        assert!(ended);
        let cancelled = store.get_run(&second).await.unwrap().unwrap();
        assert_eq!(cancelled.status, RunStatus::Cancelled);
        assert!(cancelled.started_at.is_none());

        executor.release.add_permits(2);
        for id in [&first, &third] {
            assert!(queue.wait(id, Duration::from_secs(1)).await);
            let run = store.get_run(id).await.unwrap().unwrap();
            assert_eq!(run.status, RunStatus::Completed);
        }
        assert_eq!(*executor.executed.lock().unwrap(), vec![first, third]);
        assert_eq!(
            store.get_run(&second).await.unwrap().unwrap().status,
            RunStatus::Cancelled
        );
        queue.shutdown().await;
    }

    #[tokio::test]
    async fn shutdown_interrupts_queued_runs_and_refuses_new_ones() {
        let store = Arc::new(SqliteRunStore::open(None).unwrap());
        let executor = counting();
        let queue = RunQueue::new(store.clone(), executor.clone(), 1, None);
        let blueprint = blueprint();
        let running = submit(store.as_ref(), &queue, &blueprint, 0).await;
        let queued = submit(store.as_ref(), &queue, &blueprint, 1).await;
        wait_for(|| executor.in_flight.load(Ordering::SeqCst) == 1).await;
        queue.shutdown().await;
        for id in [&running, &queued] {
            let run = store.get_run(id).await.unwrap().unwrap();
            assert_eq!(run.status, RunStatus::Failed);
            assert_eq!(run.error.unwrap().kind, "interrupted");
        }
        assert!(matches!(
            queue.enqueue(new_run_id(), blueprint),
            Err(CoordinatorError::ShuttingDown)
        ));
    }
}
