//! The test suites every [`RunStore`] backend must pass, written once (feature
//! `conformance`).
//!
//! A backend implements [`RunStoreBackend`] in its tests and expands
//! [`run_store_conformance_tests!`](crate::run_store_conformance_tests) to get one
//! `#[tokio::test]` per case, or awaits [`run_all`]. Cases: insert and read back, a
//! claim (`start_run`) granted once even under concurrency, status transitions ended
//! once, cancelling a queued run, the blueprint list, scrubbing of what is stored,
//! restart recovery (`interrupted`), run tree accounts, what runs used of their
//! budgets, approvals that wait ([`approvals`]) and what a person lists ([`listing`]). [`run_trees`] has whole
//! scenarios of agents starting agents, run on a coordinator over any store.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod approvals;
pub mod listing;
pub mod run_trees;
pub mod run_usage;

pub use approvals::{
    a_waiting_run_is_decided_once_and_queued_again, an_approval_keeps_why_a_person_must_decide,
    lapsed_requests_are_denials, only_a_waiting_run_is_decided,
    racing_decisions_decide_once_and_queue_once,
};
pub use listing::{
    runs_are_listed_newest_first_filtered_and_paged,
    waiting_approvals_are_listed_across_runs_oldest_first,
};
pub use run_trees::run_trees_are_counted_and_charged_on_the_root;
pub use run_usage::run_usage_is_recorded_while_running_and_only_grows;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::blueprint::BlueprintSummary;
use crate::config::BlueprintKind;
use crate::run::{Run, RunError, RunLineage, RunStatus};
use crate::store::RunStore;

/// Opens the stores a case runs on.
pub trait RunStoreBackend {
    /// The store under test.
    type Store: RunStore + 'static;

    /// A store on this value's database (new and empty when the value was made). Each
    /// call opens another store on the same database, as a restarted coordinator would:
    /// it must see everything committed through a store dropped before.
    fn open(&self) -> Self::Store;
}

/// Expands one `#[tokio::test]` per conformance case; `$backend` is an expression
/// making a fresh [`RunStoreBackend`], evaluated once per case.
///
/// ```ignore
/// oxydra_coordinator::run_store_conformance_tests!(SqliteFile::new());
/// ```
#[macro_export]
macro_rules! run_store_conformance_tests {
    ($backend:expr) => {
        $crate::run_store_conformance_tests!(@cases $backend;
            runs_move_through_their_states_once,
            a_run_is_claimed_by_one_worker_only,
            a_queued_run_cancelled_is_never_started,
            blueprints_are_replaced_and_listed_in_order,
            what_is_stored_is_scrubbed,
            recovery_fails_unfinished_runs,
            run_trees_are_counted_and_charged_on_the_root,
            run_usage_is_recorded_while_running_and_only_grows,
            a_waiting_run_is_decided_once_and_queued_again,
            an_approval_keeps_why_a_person_must_decide,
            lapsed_requests_are_denials,
            only_a_waiting_run_is_decided,
            racing_decisions_decide_once_and_queue_once,
            runs_are_listed_newest_first_filtered_and_paged,
            waiting_approvals_are_listed_across_runs_oldest_first,
        );
    };
    (@cases $backend:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $crate::conformance::$case(&$backend).await;
            }
        )*
    };
}

/// Runs every case in turn, each on a fresh backend from `make`.
pub async fn run_all<B: RunStoreBackend>(make: impl Fn() -> B) {
    runs_move_through_their_states_once(&make()).await;
    a_run_is_claimed_by_one_worker_only(&make()).await;
    a_queued_run_cancelled_is_never_started(&make()).await;
    blueprints_are_replaced_and_listed_in_order(&make()).await;
    what_is_stored_is_scrubbed(&make()).await;
    recovery_fails_unfinished_runs(&make()).await;
    run_trees_are_counted_and_charged_on_the_root(&make()).await;
    run_usage_is_recorded_while_running_and_only_grows(&make()).await;
    a_waiting_run_is_decided_once_and_queued_again(&make()).await;
    an_approval_keeps_why_a_person_must_decide(&make()).await;
    lapsed_requests_are_denials(&make()).await;
    only_a_waiting_run_is_decided(&make()).await;
    racing_decisions_decide_once_and_queue_once(&make()).await;
    runs_are_listed_newest_first_filtered_and_paged(&make()).await;
    waiting_approvals_are_listed_across_runs_oldest_first(&make()).await;
}

/// A pending run of `researcher` with id `id`.
pub fn pending(id: &str) -> Run {
    Run::pending(
        id,
        "researcher",
        json!({"prompt": "hi"}),
        RunLineage::root(id),
    )
}

/// Pending → running once, running → completed once; unknown runs are `None`.
pub async fn runs_move_through_their_states_once<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    store.insert_run(pending("r1")).await.unwrap();
    let stored = store.get_run("r1").await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Pending);
    assert_eq!(stored.agent_name, "researcher");
    assert_eq!(stored.parameters, json!({"prompt": "hi"}));
    assert!(stored.started_at.is_none() && stored.finished_at.is_none());
    assert!(store.start_run("r1").await.unwrap().is_some());
    assert!(store.start_run("r1").await.unwrap().is_none());
    assert_eq!(store.start_run("r1").await.unwrap(), None);
    store.insert_run(pending("r2")).await.unwrap();
    assert_eq!(
        store.start_run("r2").await.unwrap(),
        Some(json!({"prompt": "hi"}))
    );
    assert_eq!(
        store.get_run("r2").await.unwrap().unwrap().status,
        RunStatus::Running
    );
    assert!(
        store
            .finish_run("r1", RunStatus::Completed, Some(json!({"ok": 1})), None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_run("r1", RunStatus::Failed, None, Some(RunError::cancelled()))
            .await
            .unwrap()
    );
    let run = store.get_run("r1").await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.result, Some(json!({"ok": 1})));
    assert!(run.started_at.is_some() && run.finished_at.is_some());
    assert!(store.get_run("nope").await.unwrap().is_none());
    assert_eq!(store.start_run("nope").await.unwrap(), None);
    assert!(
        !store
            .finish_run("nope", RunStatus::Completed, None, None)
            .await
            .unwrap()
    );
}

/// Of many workers claiming one pending run at once, exactly one gets it.
pub async fn a_run_is_claimed_by_one_worker_only<B: RunStoreBackend>(backend: &B) {
    let store = Arc::new(backend.open());
    store.insert_run(pending("contested")).await.unwrap();
    let claims: Vec<_> = (0..16)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.start_run("contested").await.unwrap() })
        })
        .collect();
    let mut granted = 0;
    for claim in claims {
        if claim.await.unwrap().is_some() {
            granted += 1;
        }
    }
    assert_eq!(granted, 1);
    assert_eq!(
        store.get_run("contested").await.unwrap().unwrap().status,
        RunStatus::Running
    );
}

/// A run cancelled while queued is never started, keeps its `cancelled` error, and
/// cannot be ended again.
pub async fn a_queued_run_cancelled_is_never_started<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    store.insert_run(pending("queued")).await.unwrap();
    assert!(
        store
            .finish_run(
                "queued",
                RunStatus::Cancelled,
                None,
                Some(RunError::cancelled())
            )
            .await
            .unwrap()
    );
    assert_eq!(store.start_run("queued").await.unwrap(), None);
    let run = store.get_run("queued").await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Cancelled);
    assert_eq!(run.error.unwrap().kind, RunError::cancelled().kind);
    assert!(run.started_at.is_none() && run.finished_at.is_some());
    assert!(
        !store
            .finish_run("queued", RunStatus::Completed, Some(json!(1)), None)
            .await
            .unwrap()
    );
}

/// Replacing the blueprints drops the old ones; the list keeps the given order.
pub async fn blueprints_are_replaced_and_listed_in_order<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    assert!(store.list_blueprints().await.unwrap().is_empty());
    let summary = |name: &str, schema: Option<Value>| BlueprintSummary {
        name: name.into(),
        kind: if schema.is_some() {
            BlueprintKind::Deterministic
        } else {
            BlueprintKind::Agent
        },
        description: format!("{name} does things"),
        parameters_schema: schema,
    };
    store
        .replace_blueprints(vec![summary("old", None)])
        .await
        .unwrap();
    let listed = vec![
        summary("zeta", None),
        summary("alpha", Some(json!({"type": "object"}))),
    ];
    store.replace_blueprints(listed.clone()).await.unwrap();
    assert_eq!(store.list_blueprints().await.unwrap(), listed);
}

/// Parameters, results and errors come back with their secrets redacted.
pub async fn what_is_stored_is_scrubbed<B: RunStoreBackend>(backend: &B) {
    const SECRET: &str = "hunter2-very-secret";
    let store = backend.open();
    let mut run = pending("r1");
    run.parameters = json!({"prompt": format!("log in with password={SECRET}")});
    store.insert_run(run).await.unwrap();
    let started = store.start_run("r1").await.unwrap().unwrap().to_string();
    assert!(!started.contains("hunter2"), "{started}");
    assert!(started.contains("[REDACTED]"), "{started}");
    store
        .finish_run(
            "r1",
            RunStatus::Failed,
            Some(json!({"output": format!("password={SECRET}")})),
            Some(RunError::new("step_failed", format!("password={SECRET}"))),
        )
        .await
        .unwrap();
    let run = store.get_run("r1").await.unwrap().unwrap();
    let shown = serde_json::to_string(&run).unwrap();
    assert!(!shown.contains("hunter2"), "{shown}");
}

/// A restarted store marks the runs left pending or running as failed `interrupted`,
/// and leaves ended runs alone.
pub async fn recovery_fails_unfinished_runs<B: RunStoreBackend>(backend: &B) {
    {
        let store = backend.open();
        for id in ["a", "b", "c"] {
            store.insert_run(pending(id)).await.unwrap();
        }
        store.start_run("a").await.unwrap();
        store
            .finish_run("c", RunStatus::Completed, Some(json!(1)), None)
            .await
            .unwrap();
    }
    let store = backend.open();
    assert_eq!(store.recover_interrupted().await.unwrap(), 2);
    for id in ["a", "b"] {
        let run = store.get_run(id).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.error.unwrap().kind, "interrupted");
    }
    assert_eq!(
        store.get_run("c").await.unwrap().unwrap().status,
        RunStatus::Completed
    );
    assert_eq!(store.recover_interrupted().await.unwrap(), 0);
}
