#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Session meta: what a session runs with (model, system prompt, agent).

use oxydra_types::{Message, SessionId};

use super::MemoryBackend;
use crate::{Memory, RetrievalConfig, SessionMeta};

fn meta(model: &str, prompt: Option<&str>, agent: Option<&str>) -> SessionMeta {
    SessionMeta {
        model: model.to_owned(),
        system_prompt: prompt.map(str::to_owned),
        agent: agent.map(str::to_owned),
        workspace: Some(format!("/work/{model}")),
        replay_of: None,
    }
}

/// A session's meta reads back as stored (from another store too), a second store
/// replaces it whole, the listing carries its model and agent, and a session without
/// one lists neither.
pub async fn session_meta_round_trips_replaces_and_is_listed<B: MemoryBackend>(backend: &B) {
    let (with, without) = (SessionId::from("ses_meta"), SessionId::from("ses_plain"));
    let first = SessionMeta {
        replay_of: Some("ses_original".into()),
        ..meta(
            "model-a",
            Some("You research ✓ questions.\nLine two."),
            Some("researcher"),
        )
    };
    {
        let memory = backend.open(RetrievalConfig::default());
        assert_eq!(memory.session_meta(&with).await.unwrap(), None);
        memory.store_session_meta(&with, &first).await.unwrap();
        memory.append(&with, &Message::user("hello")).await.unwrap();
        memory.append(&without, &Message::user("hi")).await.unwrap();
    }
    let memory = backend.open(RetrievalConfig::default());
    assert_eq!(memory.session_meta(&with).await.unwrap(), Some(first));
    assert_eq!(memory.session_meta(&without).await.unwrap(), None);
    let listed = memory.list_sessions().await.unwrap();
    let find = |id: &SessionId| listed.iter().find(|s| &s.session_id == id).unwrap().clone();
    assert_eq!(find(&with).model.as_deref(), Some("model-a"));
    assert_eq!(find(&with).agent.as_deref(), Some("researcher"));
    assert_eq!(find(&with).workspace.as_deref(), Some("/work/model-a"));
    assert_eq!(find(&with).messages, 1);
    assert_eq!((find(&without).model, find(&without).agent), (None, None));
    assert_eq!(find(&without).workspace, None);
    assert_eq!(find(&with).replay_of.as_deref(), Some("ses_original"));
    assert_eq!(find(&without).replay_of, None);

    // Storing again replaces every field, absent ones included.
    let second = meta("model-b", None, None);
    memory.store_session_meta(&with, &second).await.unwrap();
    assert_eq!(memory.session_meta(&with).await.unwrap(), Some(second));
    let listed = memory.list_sessions().await.unwrap();
    let again = listed.iter().find(|s| s.session_id == with).unwrap();
    assert_eq!(
        (
            again.model.as_deref(),
            again.agent.as_deref(),
            again.workspace.as_deref()
        ),
        (Some("model-b"), None, Some("/work/model-b"))
    );
    assert_eq!(again.replay_of, None);

    // A meta stored before the session's first message is not a session of its own.
    let early = SessionId::from("ses_early");
    memory
        .store_session_meta(&early, &meta("model-c", Some("p"), None))
        .await
        .unwrap();
    assert!(!memory.session_exists(&early).await.unwrap());
    assert_eq!(memory.list_sessions().await.unwrap().len(), 2);
    assert_eq!(
        memory.session_meta(&early).await.unwrap().map(|m| m.model),
        Some("model-c".to_owned())
    );
}

/// Deleting a session deletes its meta, and leaves other sessions' metas alone.
pub async fn session_meta_is_deleted_with_its_session<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    let (gone, kept) = (
        SessionId::from("ses_gone_meta"),
        SessionId::from("ses_kept_meta"),
    );
    for session in [&gone, &kept] {
        memory
            .store_session_meta(session, &meta("m", Some("prompt"), Some("agent")))
            .await
            .unwrap();
        memory
            .append(session, &Message::user("hello"))
            .await
            .unwrap();
    }
    memory.delete_session(&gone).await.unwrap();
    assert_eq!(memory.session_meta(&gone).await.unwrap(), None);
    assert!(memory.session_meta(&kept).await.unwrap().is_some());
    // The id used again starts without a meta.
    memory.append(&gone, &Message::user("again")).await.unwrap();
    let listed = memory.list_sessions().await.unwrap();
    let reused = listed.iter().find(|s| s.session_id == gone).unwrap();
    assert_eq!(reused.model, None);
}
