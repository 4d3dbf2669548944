//! Approvals that wait, on any backend: a running run suspended with its requests,
//! decided once each (the last decision queuing it again), decisions handed out once,
//! lapsed requests denied by the sweep, a waiting run cancelled, and all of it kept
//! across a restart.

use std::sync::Arc;
use std::time::Duration;

use oxydra_executor::PermissionScope;
use oxydra_runtime::{ApprovalDecision, EXPIRED_REASON, PendingApproval};
use oxydra_types::{ApprovalId, CallId, SafetyTier};

use super::{RunStoreBackend, pending};
use crate::error::CoordinatorError;
use crate::run::{RunError, RunStatus, now_millis};
use crate::store::RunStore;

/// A request `id` for call `call_<id>`, asked at `requested_at`, lapsing `ttl` later.
pub fn request(id: &str, requested_at: i64, ttl: Duration) -> PendingApproval {
    PendingApproval {
        approval_id: ApprovalId::from(id),
        call_id: CallId::from(format!("call_{id}")),
        tool: "shell_exec".into(),
        arguments: format!("{{\n  \"command\": \"rm -rf build/{id}\"\n}}"),
        tier: SafetyTier::Privileged,
        scope: PermissionScope::Session,
        requested_at,
        expires_at: requested_at + i64::try_from(ttl.as_millis()).unwrap(),
        used: Default::default(),
        reason: None,
    }
}

/// Stores run `run_id`, starts it and suspends it with `requests`.
async fn waiting(store: &impl RunStore, run_id: &str, requests: &[PendingApproval]) {
    store.insert_run(pending(run_id)).await.unwrap();
    store.start_run(run_id).await.unwrap().unwrap();
    assert!(store.suspend_run(run_id, requests.to_vec()).await.unwrap());
}

async fn status(store: &impl RunStore, run_id: &str) -> RunStatus {
    store.get_run(run_id).await.unwrap().unwrap().status
}

/// A running run suspends with its requests (listed oldest first, arguments as
/// shown); it is neither started nor recovered while it waits; each request is
/// decided once (a second decision, an unknown request or run are errors); the last
/// decision queues the run again; the decisions (a denial's reason scrubbed) are
/// handed out once, in order; all of it is kept across a restart.
pub async fn a_waiting_run_is_decided_once_and_queued_again<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    let now = now_millis();
    let hour = Duration::from_secs(3600);
    let first = request("apr_1", now, hour);
    let second = request("apr_2", now + 1, hour);
    // Only a running run can wait.
    store.insert_run(pending("idle")).await.unwrap();
    assert!(
        !store
            .suspend_run("idle", vec![first.clone()])
            .await
            .unwrap()
    );
    assert!(
        !store
            .suspend_run("nope", vec![first.clone()])
            .await
            .unwrap()
    );
    assert!(store.pending_approvals("idle").await.unwrap().is_empty());

    waiting(&store, "r1", &[second.clone(), first.clone()]).await;
    assert_eq!(status(&store, "r1").await, RunStatus::WaitingApproval);
    assert_eq!(
        store.pending_approvals("r1").await.unwrap(),
        vec![first.clone(), second.clone()]
    );
    // Waiting is not running: no second suspension, no start, no usage, no recovery.
    assert!(!store.suspend_run("r1", vec![]).await.unwrap());
    assert_eq!(store.start_run("r1").await.unwrap(), None);
    assert_eq!(store.recover_interrupted().await.unwrap(), 1);
    assert_eq!(status(&store, "idle").await, RunStatus::Failed);
    assert_eq!(status(&store, "r1").await, RunStatus::WaitingApproval);
    // Nothing decided, nothing to hand out.
    assert!(store.take_decisions("r1").await.unwrap().is_empty());

    // A restart sees the same.
    drop(store);
    let store = backend.open();
    assert_eq!(store.pending_approvals("r1").await.unwrap().len(), 2);

    let unknown_run = store
        .decide_approval("nope", "apr_1", ApprovalDecision::ApproveOnce, now)
        .await;
    assert!(
        matches!(unknown_run, Err(CoordinatorError::RunNotFound { .. })),
        "{unknown_run:?}"
    );
    for (run, approval) in [("r1", "apr_9"), ("idle", "apr_1"), ("r1", "")] {
        let unknown = store
            .decide_approval(run, approval, ApprovalDecision::ApproveOnce, now)
            .await;
        assert!(
            matches!(unknown, Err(CoordinatorError::ApprovalNotFound { .. })),
            "{run}/{approval}: {unknown:?}"
        );
    }

    let once = store
        .decide_approval("r1", "apr_1", ApprovalDecision::ApproveOnce, now)
        .await
        .unwrap();
    assert_eq!(once.approval, first);
    assert_eq!(once.decision, ApprovalDecision::ApproveOnce);
    assert!(!once.requeued);
    assert_eq!(status(&store, "r1").await, RunStatus::WaitingApproval);
    assert_eq!(
        store.pending_approvals("r1").await.unwrap(),
        vec![second.clone()]
    );
    let again = store
        .decide_approval("r1", "apr_1", ApprovalDecision::Deny { reason: None }, now)
        .await;
    assert!(
        matches!(again, Err(CoordinatorError::ApprovalAlreadyDecided { .. })),
        "{again:?}"
    );

    let denial = ApprovalDecision::Deny {
        reason: Some("not with password=hunter2-very-secret".into()),
    };
    let last = store
        .decide_approval("r1", "apr_2", denial, now)
        .await
        .unwrap();
    assert!(last.requeued);
    assert_eq!(status(&store, "r1").await, RunStatus::Pending);
    assert!(store.pending_approvals("r1").await.unwrap().is_empty());
    // Decided: a late decision is refused as such.
    let late = store
        .decide_approval("r1", "apr_2", ApprovalDecision::ApproveOnce, now)
        .await;
    assert!(
        matches!(late, Err(CoordinatorError::ApprovalAlreadyDecided { .. })),
        "{late:?}"
    );

    // Started again, the run is handed its decisions once, oldest first.
    assert!(store.start_run("r1").await.unwrap().is_some());
    drop(store);
    let store = backend.open();
    let decided = store.take_decisions("r1").await.unwrap();
    assert_eq!(decided.len(), 2);
    assert_eq!(decided[0].pending, first);
    assert_eq!(decided[0].decision, ApprovalDecision::ApproveOnce);
    assert_eq!(decided[1].pending, second);
    let ApprovalDecision::Deny {
        reason: Some(reason),
    } = &decided[1].decision
    else {
        panic!("{:?}", decided[1]);
    };
    assert!(!reason.contains("hunter2"), "{reason}");
    assert!(store.take_decisions("r1").await.unwrap().is_empty());

    // It may wait again, with new requests only.
    let third = request("apr_3", now + 2, hour);
    assert!(store.suspend_run("r1", vec![third.clone()]).await.unwrap());
    assert_eq!(store.pending_approvals("r1").await.unwrap(), vec![third]);
}

/// A decision that comes after the request lapsed is a denial with
/// [`EXPIRED_REASON`]; the sweep denies lapsed requests of waiting runs only, queues a
/// run once nothing is left undecided, and decides each request once.
pub async fn lapsed_requests_are_denials<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    let now = now_millis();
    let expired = || ApprovalDecision::Deny {
        reason: Some(EXPIRED_REASON.to_owned()),
    };
    // Decided too late: a denial, whatever was answered.
    waiting(
        &store,
        "late",
        &[request("apr_l", now - 10, Duration::from_millis(5))],
    )
    .await;
    let recorded = store
        .decide_approval("late", "apr_l", ApprovalDecision::ApproveForSession, now)
        .await
        .unwrap();
    assert_eq!(recorded.decision, expired());
    assert!(recorded.requeued);

    // One lapsed request, one not: the sweep denies the first, the run still waits.
    let short = request("apr_s", now - 10, Duration::from_millis(5));
    let long = request("apr_g", now - 9, Duration::from_secs(3600));
    waiting(&store, "mixed", &[short, long.clone()]).await;
    // A cancelled run's requests are not swept.
    waiting(
        &store,
        "gone",
        &[request("apr_c", now - 10, Duration::from_millis(5))],
    )
    .await;
    assert!(
        store
            .finish_run(
                "gone",
                RunStatus::Cancelled,
                None,
                Some(RunError::cancelled())
            )
            .await
            .unwrap()
    );
    assert!(store.expire_approvals(now).await.unwrap().is_empty());
    assert_eq!(status(&store, "mixed").await, RunStatus::WaitingApproval);
    assert_eq!(store.pending_approvals("mixed").await.unwrap(), vec![long]);
    assert_eq!(status(&store, "gone").await, RunStatus::Cancelled);

    // Later, the other lapses too: the run is queued, once.
    let later = now + 3_600_000;
    assert_eq!(store.expire_approvals(later).await.unwrap(), vec!["mixed"]);
    assert!(store.expire_approvals(later).await.unwrap().is_empty());
    assert_eq!(status(&store, "mixed").await, RunStatus::Pending);
    store.start_run("mixed").await.unwrap().unwrap();
    let decided = store.take_decisions("mixed").await.unwrap();
    assert_eq!(decided.len(), 2);
    assert!(decided.iter().all(|d| d.decision == expired()));
}

/// A waiting run can be cancelled (it then lists nothing and takes no decision); a
/// run that is not waiting cannot be decided for.
pub async fn only_a_waiting_run_is_decided<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    let now = now_millis();
    let hour = Duration::from_secs(3600);
    waiting(&store, "r1", &[request("apr_1", now, hour)]).await;
    assert!(
        store
            .finish_run(
                "r1",
                RunStatus::Cancelled,
                None,
                Some(RunError::cancelled())
            )
            .await
            .unwrap()
    );
    assert!(store.pending_approvals("r1").await.unwrap().is_empty());
    let refused = store
        .decide_approval("r1", "apr_1", ApprovalDecision::ApproveOnce, now)
        .await;
    assert!(
        matches!(
            refused,
            Err(CoordinatorError::NotWaitingApproval {
                status: RunStatus::Cancelled,
                ..
            })
        ),
        "{refused:?}"
    );
    // Waiting again after a restart of the run, then completed: nothing to decide.
    waiting(&store, "r2", &[request("apr_2", now, hour)]).await;
    store
        .decide_approval("r2", "apr_2", ApprovalDecision::ApproveOnce, now)
        .await
        .unwrap();
    store.start_run("r2").await.unwrap().unwrap();
    assert!(
        store
            .suspend_run("r2", vec![request("apr_3", now, hour)])
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_run("r2", RunStatus::Failed, None, Some(RunError::interrupted()))
            .await
            .unwrap()
    );
    let refused = store
        .decide_approval("r2", "apr_3", ApprovalDecision::ApproveOnce, now)
        .await;
    assert!(
        matches!(refused, Err(CoordinatorError::NotWaitingApproval { .. })),
        "{refused:?}"
    );
}

/// Deciders racing: each request is decided by exactly one of them, and of the
/// deciders of a run's last requests exactly one queues it.
pub async fn racing_decisions_decide_once_and_queue_once<B: RunStoreBackend>(backend: &B) {
    let store = Arc::new(backend.open());
    let now = now_millis();
    let hour = Duration::from_secs(3600);
    let requests: Vec<PendingApproval> = (0..8)
        .map(|n| request(&format!("apr_{n}"), now + n, hour))
        .collect();
    waiting(store.as_ref(), "r1", &requests).await;
    // Every request decided by 3 deciders at once.
    let mut deciders = Vec::new();
    for n in 0..8 {
        for _ in 0..3 {
            let store = Arc::clone(&store);
            deciders.push(tokio::spawn(async move {
                store
                    .decide_approval(
                        "r1",
                        &format!("apr_{n}"),
                        ApprovalDecision::ApproveOnce,
                        now,
                    )
                    .await
            }));
        }
    }
    let mut recorded = 0;
    let mut requeued = 0;
    for decider in deciders {
        match decider.await.unwrap() {
            Ok(decision) => {
                recorded += 1;
                requeued += usize::from(decision.requeued);
            }
            Err(CoordinatorError::ApprovalAlreadyDecided { .. })
            | Err(CoordinatorError::NotWaitingApproval { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(recorded, 8);
    assert_eq!(requeued, 1);
    assert_eq!(status(store.as_ref(), "r1").await, RunStatus::Pending);
    // Handed out once, even to racing takers.
    store.start_run("r1").await.unwrap().unwrap();
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.take_decisions("r1").await.unwrap().len() })
        })
        .collect();
    let mut handed = 0;
    for taker in takers {
        handed += taker.await.unwrap();
    }
    assert_eq!(handed, 8);
}

/// Each request keeps why a person must decide it (the provenance hold naming the
/// untrusted source, the consent rule or the tier): the run's pending requests, the
/// list of what waits across runs, and the request a decision records all carry it,
/// across a restart; a request without one reads back without one.
pub async fn an_approval_keeps_why_a_person_must_decide<B: RunStoreBackend>(backend: &B) {
    let store = backend.open();
    let now = now_millis();
    let hour = Duration::from_secs(3600);
    let held = PendingApproval {
        reason: Some("this run read https://evil.test/readme since your last decision".into()),
        ..request("apr_held", now, hour)
    };
    let ruled = PendingApproval {
        reason: Some("the tool has a requires_consent rule".into()),
        ..request("apr_ruled", now + 1, hour)
    };
    let bare = request("apr_bare", now + 2, hour);
    waiting(&store, "r1", &[held.clone(), ruled.clone(), bare.clone()]).await;
    drop(store);
    let store = backend.open();
    assert_eq!(
        store.pending_approvals("r1").await.unwrap(),
        vec![held.clone(), ruled.clone(), bare.clone()]
    );
    let listed: Vec<Option<String>> = store
        .waiting_approvals(10)
        .await
        .unwrap()
        .into_iter()
        .map(|waiting| waiting.approval.reason)
        .collect();
    assert_eq!(listed, [held.reason.clone(), ruled.reason.clone(), None]);
    let recorded = store
        .decide_approval("r1", "apr_held", ApprovalDecision::ApproveOnce, now)
        .await
        .unwrap();
    assert_eq!(recorded.approval.reason, held.reason);
}
