//! What a person lists, on any backend: pages of runs (newest first, filtered by
//! status, blueprint and creation time, continued by a cursor) and the approvals that
//! wait across runs (oldest first, decided and cancelled ones left out).

use std::time::Duration;

use oxydra_types::ApprovalId;

use super::approvals::request;
use super::{RunStoreBackend, pending};
use crate::run::{Run, RunError, RunStatus, now_millis};
use crate::run_query::{RunCursor, RunQuery};
use crate::store::RunStore;

/// A pending run `id` of `agent` created at `created_at`.
fn run_at(id: &str, agent: &str, created_at: i64) -> Run {
    let mut run = pending(id);
    run.agent_name = agent.into();
    run.created_at = created_at;
    run
}

/// The ids of the runs `query` lists.
async fn ids(store: &impl RunStore, query: RunQuery) -> Vec<String> {
    store
        .list_runs(query)
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.run_id)
        .collect()
}

/// Runs come newest first (ties by id, descending); each filter narrows; a cursor
/// continues after the last run of a page without skipping or repeating one, even
/// across runs created in the same millisecond; the limit is clamped.
pub async fn runs_are_listed_newest_first_filtered_and_paged<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    assert!(ids(&store, RunQuery::default()).await.is_empty());
    store
        .insert_run(run_at("a", "writer", 1_000))
        .await
        .unwrap();
    store
        .insert_run(run_at("b", "reader", 2_000))
        .await
        .unwrap();
    store
        .insert_run(run_at("c1", "writer", 3_000))
        .await
        .unwrap();
    store
        .insert_run(run_at("c2", "writer", 3_000))
        .await
        .unwrap();
    store
        .insert_run(run_at("d", "reader", 4_000))
        .await
        .unwrap();
    store.start_run("d").await.unwrap().unwrap();
    store
        .finish_run("a", RunStatus::Cancelled, None, Some(RunError::cancelled()))
        .await
        .unwrap();

    assert_eq!(
        ids(&store, RunQuery::default()).await,
        ["d", "c2", "c1", "b", "a"]
    );
    let query = |f: fn(&mut RunQuery)| {
        let mut query = RunQuery::default();
        f(&mut query);
        query
    };
    assert_eq!(
        ids(&store, query(|q| q.status = Some(RunStatus::Pending))).await,
        ["c2", "c1", "b"]
    );
    assert_eq!(
        ids(&store, query(|q| q.status = Some(RunStatus::Running))).await,
        ["d"]
    );
    assert_eq!(
        ids(&store, query(|q| q.agent = Some("writer".into()))).await,
        ["c2", "c1", "a"]
    );
    assert_eq!(
        ids(&store, query(|q| q.since = Some(3_000))).await,
        ["d", "c2", "c1"]
    );
    assert_eq!(
        ids(
            &store,
            query(|q| {
                q.agent = Some("writer".into());
                q.status = Some(RunStatus::Pending);
                q.since = Some(2_000);
            })
        )
        .await,
        ["c2", "c1"]
    );
    assert!(
        ids(&store, query(|q| q.agent = Some("x' OR '1'='1".into())))
            .await
            .is_empty()
    );

    // Pages of two, continued by cursor, cover every run once.
    let mut seen = Vec::new();
    let mut after: Option<RunCursor> = None;
    loop {
        let page = store
            .list_runs(RunQuery {
                limit: 2,
                after: after.clone(),
                ..RunQuery::default()
            })
            .await
            .unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some(RunCursor::after(last.created_at, last.run_id.clone()));
        seen.extend(page.into_iter().map(|run| run.run_id));
    }
    assert_eq!(seen, ["d", "c2", "c1", "b", "a"]);
    assert_eq!(ids(&store, query(|q| q.limit = 0)).await, ["d"]);
}

/// The undecided requests of waiting runs, across runs, oldest first, each with its
/// run and blueprint; decided requests, runs cancelled while waiting and running runs
/// list none; the limit holds.
pub async fn waiting_approvals_are_listed_across_runs_oldest_first<B: RunStoreBackend>(
    backend: &B,
) {
    let store = backend.open();
    assert!(store.waiting_approvals(100).await.unwrap().is_empty());
    let now = now_millis();
    let hour = Duration::from_secs(3600);
    let suspend = |id: &'static str, agent: &'static str, requests: Vec<_>| {
        let store = &store;
        async move {
            store.insert_run(run_at(id, agent, now)).await.unwrap();
            store.start_run(id).await.unwrap().unwrap();
            assert!(store.suspend_run(id, requests).await.unwrap());
        }
    };
    suspend("late", "writer", vec![request("apr_late", now + 30, hour)]).await;
    suspend(
        "early",
        "reader",
        vec![
            request("apr_b", now + 20, hour),
            request("apr_a", now + 10, hour),
        ],
    )
    .await;
    suspend("gone", "reader", vec![request("apr_gone", now, hour)]).await;
    store
        .finish_run(
            "gone",
            RunStatus::Cancelled,
            None,
            Some(RunError::cancelled()),
        )
        .await
        .unwrap();
    store
        .insert_run(run_at("busy", "reader", now))
        .await
        .unwrap();
    store.start_run("busy").await.unwrap().unwrap();

    let listed = store.waiting_approvals(100).await.unwrap();
    let seen: Vec<_> = listed
        .iter()
        .map(|waiting| {
            (
                waiting.approval.approval_id.as_str(),
                waiting.run_id.as_str(),
                waiting.agent_name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("apr_a", "early", "reader"),
            ("apr_b", "early", "reader"),
            ("apr_late", "late", "writer"),
        ]
    );
    assert_eq!(listed[0].approval, request("apr_a", now + 10, hour));
    assert_eq!(store.waiting_approvals(1).await.unwrap().len(), 1);

    store
        .decide_approval(
            "early",
            "apr_a",
            oxydra_runtime::ApprovalDecision::ApproveOnce,
            now,
        )
        .await
        .unwrap();
    let left: Vec<ApprovalId> = store
        .waiting_approvals(100)
        .await
        .unwrap()
        .into_iter()
        .map(|waiting| waiting.approval.approval_id)
        .collect();
    assert_eq!(
        left,
        [ApprovalId::from("apr_b"), ApprovalId::from("apr_late")]
    );
}
