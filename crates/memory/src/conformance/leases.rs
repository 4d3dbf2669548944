#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Session leases: one writer per session across two stores on one database (as two
//! processes have), a lapsed lease taken over, a dead holder taken over at once.

use std::time::Duration;

use oxydra_types::{CallId, Message, SessionId, ToolCall};

use super::MemoryBackend;
use crate::{LeaseOwner, Memory, MemoryError, RetrievalConfig, is_well_formed, this_host};

const TTL: Duration = Duration::from_secs(60);

/// A live lease excludes other owners from taking it and from appending; releasing hands it over.
pub async fn two_holders_exclude_each_other<B: MemoryBackend>(backend: &B) {
    let (first, second) = (
        backend.open(RetrievalConfig::default()),
        backend.open(RetrievalConfig::default()),
    );
    let session = SessionId::from("ses_shared");
    let (a, b) = (LeaseOwner::generate(), LeaseOwner::generate());
    let lease = first
        .acquire_session_lease(&session, &a, TTL)
        .await
        .unwrap();
    assert!(lease.is_held_by(&a));
    assert_eq!(lease.pid, std::process::id());

    // The second owner is refused, with the holder named.
    let busy = second
        .acquire_session_lease(&session, &b, TTL)
        .await
        .unwrap_err();
    let MemoryError::SessionBusy { holder } = &busy else {
        panic!("expected SessionBusy, got {busy:?}");
    };
    assert_eq!(holder.owner, a.id);
    let text = busy.to_string();
    assert!(
        text.starts_with("session ses_shared is in use by another run (pid ")
            && text.contains(" UTC)"),
        "{text}"
    );
    // Nor can it write past the lease; the holder can.
    let refused = second.append(&session, &Message::user("b")).await;
    assert!(
        matches!(refused, Err(MemoryError::SessionBusy { .. })),
        "{refused:?}"
    );
    let refused = second
        .append_many(&session, &[Message::user("b1"), Message::user("b2")])
        .await;
    assert!(
        matches!(refused, Err(MemoryError::SessionBusy { .. })),
        "{refused:?}"
    );
    assert_eq!(
        first.append(&session, &Message::user("a")).await.unwrap(),
        1
    );
    // Reading needs no lease.
    assert_eq!(second.messages(&session).await.unwrap().len(), 1);
    // Other sessions are not affected.
    let other = SessionId::from("ses_other");
    second.acquire_session_lease(&other, &b, TTL).await.unwrap();

    // Asking again as the holder renews and keeps the start.
    let again = first
        .acquire_session_lease(&session, &a, TTL)
        .await
        .unwrap();
    assert_eq!(again.acquired_at_ms, lease.acquired_at_ms);
    assert!(again.expires_at_ms >= lease.expires_at_ms);

    // Released, the session is the other's, and the first store may no longer write.
    first.release_session_lease(&again).await.unwrap();
    let taken = second
        .acquire_session_lease(&session, &b, TTL)
        .await
        .unwrap();
    assert!(taken.is_held_by(&b));
    assert_eq!(
        second.append(&session, &Message::user("b")).await.unwrap(),
        2
    );
    let refused = first.append(&session, &Message::user("late")).await;
    assert!(
        matches!(refused, Err(MemoryError::SessionBusy { .. })),
        "{refused:?}"
    );
    // Releasing a lease that is not one's own changes nothing.
    first.release_session_lease(&again).await.unwrap();
    let busy = first.acquire_session_lease(&session, &a, TTL).await;
    assert!(
        matches!(busy, Err(MemoryError::SessionBusy { .. })),
        "{busy:?}"
    );
}

/// A lapsed lease is taken over; its old holder gets `LeaseLost` on renewal and cannot append.
pub async fn a_lapsed_lease_is_taken_over_and_its_holder_fenced_off<B: MemoryBackend>(backend: &B) {
    let (first, second) = (
        backend.open(RetrievalConfig::default()),
        backend.open(RetrievalConfig::default()),
    );
    let session = SessionId::from("ses_crashed");
    let (a, b) = (LeaseOwner::generate(), LeaseOwner::generate());
    // A holder that stopped renewing: its lease has lapsed (a zero time to live lapses
    // at once, as a `kill -9`ed holder's does after its time to live).
    let stale = first
        .acquire_session_lease(&session, &a, Duration::ZERO)
        .await
        .unwrap();
    first
        .append(&session, &Message::user("before"))
        .await
        .unwrap();

    let lease = second
        .acquire_session_lease(&session, &b, TTL)
        .await
        .unwrap();
    assert!(lease.is_held_by(&b));
    assert!(lease.acquired_at_ms >= stale.acquired_at_ms);

    // The old holder finds out when it renews, and cannot write meanwhile.
    let lost = first.renew_session_lease(&stale, TTL).await.unwrap_err();
    assert!(matches!(lost, MemoryError::LeaseLost { .. }), "{lost:?}");
    assert!(lost.to_string().contains("ses_crashed"), "{lost}");
    let refused = first.append(&session, &Message::user("stale write")).await;
    assert!(
        matches!(refused, Err(MemoryError::SessionBusy { .. })),
        "{refused:?}"
    );
    second
        .append(&session, &Message::user("after"))
        .await
        .unwrap();
    let texts: Vec<String> = second
        .messages(&session)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.text().to_owned())
        .collect();
    assert_eq!(texts, ["before", "after"]);

    // The new holder renews its own lease.
    let renewed = second.renew_session_lease(&lease, TTL).await.unwrap();
    assert!(renewed.expires_at_ms >= lease.expires_at_ms);
}

/// Restore repairs what two unleased writers interleaved into a well-formed conversation.
pub async fn restore_repairs_messages_two_writers_interleaved<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    let session = SessionId::from("ses_interleaved");
    let call = |id: &str| ToolCall::new(CallId::from(id), "file_read", "{}");
    let result = |id: &str, run: &str| {
        Message::tool_result(CallId::from(id), "file_read", format!("{run} {id}"))
    };
    // What two runs without leases stored when given the same script.
    let stored = vec![
        Message::user("task 1"),
        Message::user("task 2"),
        Message::assistant_with_tool_calls(None, vec![call("call_a"), call("call_b")]),
        Message::assistant_with_tool_calls(None, vec![call("call_a"), call("call_b")]),
        result("call_a", "1"),
        result("call_b", "1"),
        result("call_a", "2"),
        result("call_b", "2"),
        Message::assistant("done 1"),
        Message::assistant("done 2"),
    ];
    memory.append_many(&session, &stored).await.unwrap();
    assert!(!is_well_formed(&stored));
    let restored = memory.restore(&session).await.unwrap();
    assert!(is_well_formed(&restored), "{restored:#?}");
    assert_eq!(restored.len(), stored.len());
}

/// A lease whose holder's process is gone (this host) is taken over at once; one on another host is not.
pub async fn a_holder_whose_process_is_gone_is_taken_over_at_once<B: MemoryBackend>(backend: &B) {
    let (first, second) = (
        backend.open(RetrievalConfig::default()),
        backend.open(RetrievalConfig::default()),
    );
    // A process that held a lease and died (as after `kill -9`): its lease is still
    // within its time to live.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let gone = LeaseOwner {
        id: "gone".into(),
        pid: dead,
        host: this_host().to_owned(),
    };
    let session = SessionId::from("ses_orphaned");
    first
        .acquire_session_lease(&session, &gone, TTL)
        .await
        .unwrap();
    let b = LeaseOwner::generate();
    let lease = second
        .acquire_session_lease(&session, &b, TTL)
        .await
        .unwrap();
    assert!(lease.is_held_by(&b));

    // A holder on another host is not second-guessed: its lease runs its course.
    let remote = LeaseOwner {
        id: "remote".into(),
        pid: dead,
        host: "another-host".into(),
    };
    let elsewhere = SessionId::from("ses_remote");
    first
        .acquire_session_lease(&elsewhere, &remote, TTL)
        .await
        .unwrap();
    let busy = second.acquire_session_lease(&elsewhere, &b, TTL).await;
    assert!(
        matches!(busy, Err(MemoryError::SessionBusy { .. })),
        "{busy:?}"
    );
}
