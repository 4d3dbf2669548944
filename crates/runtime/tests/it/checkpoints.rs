//! The library's checkpoints (`Checkpoints`): an undo that stops part way records what
//! it put back, so it can itself be undone; a files-only revert (what `serve` does)
//! keeps the conversation and is undone the same way.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use oxydra_memory::{CheckpointBlob, CheckpointStore, Memory, SqliteMemory};
use oxydra_runtime::{Checkpoints, CheckpointsError};
use oxydra_tools::checkpoint::{CheckpointConfig, CheckpointError, changes, scan};
use oxydra_types::{Checkpoint, Message, SessionId};

const CAP: u64 = 1024 * 1024;

/// A session of `turns` prompts on `store`, and its checkpoints handle.
async fn session(store: &Arc<SqliteMemory>, turns: usize) -> (SessionId, Checkpoints) {
    let id = SessionId::generate();
    for turn in 0..turns {
        store
            .append(&id, &Message::user(format!("prompt {turn}")))
            .await
            .unwrap();
        store
            .append(&id, &Message::assistant(format!("answer {turn}")))
            .await
            .unwrap();
    }
    let handle = Checkpoints::new(
        Arc::clone(store) as Arc<dyn CheckpointStore>,
        Arc::clone(store) as Arc<dyn Memory>,
        &CheckpointConfig::default(),
    );
    (id, handle)
}

/// Records what `change` does to `root` as turn `turn`'s checkpoint.
async fn record(
    store: &SqliteMemory,
    session: &SessionId,
    root: &Path,
    turn: u64,
    change: impl FnOnce(&Path),
) {
    let before = scan(root, None, CAP).unwrap();
    change(root);
    let after = scan(root, Some(&before), CAP).unwrap();
    let captured = changes(root, &before, &after);
    let checkpoint = Checkpoint {
        turn,
        workspace: root.to_string_lossy().into_owned(),
        entries: captured.entries,
        not_captured: captured.not_captured,
        ..Checkpoint::default()
    };
    let blobs: Vec<CheckpointBlob> = captured
        .blobs
        .iter()
        .map(|(hash, content)| CheckpointBlob {
            hash: hash.clone(),
            content: content.as_ref().clone(),
        })
        .collect();
    store
        .store_checkpoint(session, &checkpoint, &blobs, 50)
        .await
        .unwrap();
}

fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "a before\n").unwrap();
    fs::write(root.join("b.txt"), "b before\n").unwrap();
    (dir, root)
}

fn read(root: &Path, name: &str) -> String {
    fs::read_to_string(root.join(name)).unwrap()
}

#[tokio::test]
async fn a_partial_undo_records_what_it_put_back_so_undoing_again_redoes_it() {
    let (_dir, root) = workspace();
    let store = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let (id, handle) = session(&store, 1).await;
    record(&store, &id, &root, 1, |root| {
        fs::write(root.join("a.txt"), "a after\n").unwrap();
        fs::write(root.join("b.txt"), "b after\n").unwrap();
        fs::create_dir(root.join("build")).unwrap();
        fs::write(root.join("build/out.o"), "obj").unwrap();
    })
    .await;
    // Someone adds a file to the directory the turn made: it cannot be removed.
    fs::write(root.join("build/theirs.txt"), "mine").unwrap();

    let error = handle.undo(&id, false).await.unwrap_err();
    let CheckpointsError::Restore(CheckpointError::Partial {
        restored, failed, ..
    }) = &error
    else {
        panic!("{error}");
    };
    assert_eq!(
        failed.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
        ["build"]
    );
    assert!(restored.iter().any(|p| p == "a.txt"), "{restored:?}");
    assert_eq!(read(&root, "a.txt"), "a before\n");
    assert_eq!(read(&root, "b.txt"), "b before\n");

    // The paths put back are the turn's checkpoint now, marked undone; the one not
    // put back is named in it.
    let stored = handle.list(&id).await.unwrap();
    assert_eq!(stored.len(), 1);
    let redo = &stored[0].checkpoint;
    assert!(redo.undone);
    let paths: Vec<&str> = redo.entries.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"a.txt") && paths.contains(&"b.txt"),
        "{paths:?}"
    );
    assert!(!paths.contains(&"build"), "{paths:?}");
    assert!(
        redo.not_captured
            .iter()
            .any(|n| n.path == "build" && n.why().contains("not put back")),
        "{:?}",
        redo.not_captured
    );

    // Undoing the undo puts the turn's files forward again.
    let redone = handle.undo(&id, false).await.unwrap();
    assert!(redone.paths.iter().any(|p| p == "a.txt"), "{redone:?}");
    assert_eq!(read(&root, "a.txt"), "a after\n");
    assert_eq!(read(&root, "b.txt"), "b after\n");
    assert_eq!(read(&root, "build/out.o"), "obj");
    assert_eq!(read(&root, "build/theirs.txt"), "mine");
    // And that is recorded too: the turn's checkpoint is no longer undone.
    let stored = handle.list(&id).await.unwrap();
    assert!(!stored[0].checkpoint.undone);
}

#[tokio::test]
async fn a_partial_undo_that_put_nothing_back_keeps_the_checkpoint_to_retry() {
    let (_dir, root) = workspace();
    let store = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let (id, handle) = session(&store, 1).await;
    record(&store, &id, &root, 1, |root| {
        fs::create_dir(root.join("build")).unwrap();
    })
    .await;
    fs::write(root.join("build/theirs.txt"), "mine").unwrap();
    let before = handle.list(&id).await.unwrap();
    let error = handle.undo(&id, false).await.unwrap_err();
    assert!(
        matches!(
            &error,
            CheckpointsError::Restore(CheckpointError::Partial { restored, .. }) if restored.is_empty()
        ),
        "{error}"
    );
    assert_eq!(handle.list(&id).await.unwrap(), before);
    fs::remove_file(root.join("build/theirs.txt")).unwrap();
    handle.undo(&id, false).await.unwrap();
    assert!(!root.join("build").exists());
}

#[tokio::test]
async fn a_files_only_revert_keeps_the_conversation_and_can_be_undone() {
    let (_dir, root) = workspace();
    let store = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let (id, handle) = session(&store, 2).await;
    record(&store, &id, &root, 1, |root| {
        fs::write(root.join("a.txt"), "a turn 1\n").unwrap();
    })
    .await;
    record(&store, &id, &root, 2, |root| {
        fs::write(root.join("a.txt"), "a turn 2\n").unwrap();
        fs::remove_file(root.join("b.txt")).unwrap();
    })
    .await;
    let messages = store.messages(&id).await.unwrap().len();

    let reverted = handle.revert_files(&id, 1, false).await.unwrap();
    assert_eq!(reverted.turns, [1, 2]);
    assert_eq!(read(&root, "a.txt"), "a before\n");
    assert_eq!(read(&root, "b.txt"), "b before\n");
    assert_eq!(reverted.messages_kept, None);
    assert_eq!(store.messages(&id).await.unwrap().len(), messages);
    // One checkpoint, turn 1, undone: reverting again changes nothing and keeps it.
    let stored = handle.list(&id).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].checkpoint.undone && stored[0].checkpoint.turn == 1);
    let again = handle.revert_files(&id, 1, false).await.unwrap();
    assert!(again.turns.is_empty());
    assert_eq!(handle.list(&id).await.unwrap(), stored);
    // The structured changes show it.
    let changes = handle.changes(&id).await.unwrap();
    assert_eq!((changes.len(), changes[0].undone), (1, true));
    // Undo takes the files forward to where the run left them.
    handle.undo(&id, false).await.unwrap();
    assert_eq!(read(&root, "a.txt"), "a turn 2\n");
    assert!(!root.join("b.txt").exists());

    for bad in [0, 3] {
        let error = handle.revert_files(&id, bad, false).await.unwrap_err();
        assert!(
            matches!(error, CheckpointsError::NoTurn { turn, turns: 2, .. } if turn == bad),
            "{error}"
        );
    }
}
