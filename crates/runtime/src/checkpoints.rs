//! A session's checkpoints, for a library user, the CLI and `serve`: list them, undo
//! the last changing turn, rewind files and conversation to before a turn, revert the
//! files only, fork a session at a turn, and show what turns changed (as text or data).
//!
//! An undo restores the last checkpoint's paths and stores the undo as that turn's
//! checkpoint in its place (marked `undone`), so undoing again brings the turn back.
//! A rewind restores every checkpoint from the turn on as one change (a path keeps
//! the state from before the first of them), deletes those checkpoints and the
//! conversation from the turn's user message on, and stores what it did as the
//! turn's checkpoint, marked `undone`, so `undo` right after takes the files forward
//! again. A files-only revert ([`Checkpoints::revert_files`], what `serve` does) is a
//! rewind that keeps the conversation. Nothing is written when a path changed since by
//! someone else, unless forced (see [`restore`]); a restore that stops part way stores
//! what it did put back in the same way, so even a partial undo can be undone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use oxydra_memory::{CheckpointStore, Memory, StoredCheckpoint};
use oxydra_scrubbing::Scrubber;
use oxydra_tools::checkpoint::{
    Captured, CheckpointConfig, CheckpointError, content_hash, restore,
};
use oxydra_types::{Checkpoint, MessageRole, NotCaptured, SessionId};

use crate::checkpoints_error::CheckpointsError;

/// What an undo or a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reverted {
    /// The turns whose changes were reverted, oldest first.
    pub turns: Vec<u64>,
    /// The paths put back.
    pub paths: Vec<String>,
    /// Paths whose content before was not captured (over the size cap, or holding a
    /// secret): not put back.
    pub not_captured: Vec<NotCaptured>,
    /// Calls of the reverted turns whose effects cannot be undone, as `turn N: tool`.
    pub irreversible: Vec<String>,
    /// For a rewind: the conversation now ends with this message sequence.
    pub messages_kept: Option<u64>,
}

/// A session's checkpoints on a store. Cheap to clone.
#[derive(Clone)]
pub struct Checkpoints {
    store: Arc<dyn CheckpointStore>,
    memory: Arc<dyn Memory>,
    keep_last: usize,
    scrubber: Scrubber,
    session_wait: std::time::Duration,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("keep_last", &self.keep_last)
            .finish_non_exhaustive()
    }
}

/// The user turns of a session: the sequence of each user message, in order.
async fn user_sequences(
    memory: &dyn Memory,
    session: &SessionId,
) -> Result<Vec<u64>, CheckpointsError> {
    Ok(memory
        .messages(session)
        .await?
        .into_iter()
        .filter(|stored| stored.message.role == MessageRole::User)
        .map(|stored| stored.sequence)
        .collect())
}

/// The session's current turn (the ordinal of its last user message) and the
/// sequence before that message; `(0, 0)` for a session without one.
pub(crate) async fn current_turn(
    memory: &dyn Memory,
    session: &SessionId,
) -> Result<(u64, u64), CheckpointsError> {
    let users = user_sequences(memory, session).await?;
    let last = users.last().copied().unwrap_or(1);
    Ok((users.len() as u64, last.saturating_sub(1)))
}

impl Checkpoints {
    /// The checkpoints `store` keeps for the sessions of `memory` (usually the same
    /// store), keeping `config.keep_last` per session.
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        memory: Arc<dyn Memory>,
        config: &CheckpointConfig,
    ) -> Self {
        Self {
            store,
            memory,
            keep_last: config.keep_last,
            scrubber: Scrubber::default(),
            session_wait: crate::session_lease::DEFAULT_SESSION_WAIT,
        }
    }

    /// How long an undo or a rewind waits for the session's lease while a run holds
    /// it (default [`DEFAULT_SESSION_WAIT`](crate::DEFAULT_SESSION_WAIT)); then it
    /// fails with [`CheckpointsError::Busy`], changing nothing.
    #[must_use]
    pub fn session_wait(mut self, wait: std::time::Duration) -> Self {
        self.session_wait = wait;
        self
    }

    /// Takes the session's lease, as a run does: an undo or a rewind never races a
    /// running turn.
    async fn lease(
        &self,
        session: &SessionId,
    ) -> Result<crate::session_lease::HeldLease, CheckpointsError> {
        let settings = crate::session_lease::LeaseSettings {
            wait: self.session_wait,
            ..crate::session_lease::LeaseSettings::default()
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        crate::session_lease::acquire(&self.memory, session, settings, &cancel)
            .await
            .map_err(|error| match error {
                crate::RuntimeError::SessionBusy(error) => CheckpointsError::Busy(error),
                crate::RuntimeError::Memory(error) => CheckpointsError::Memory(error),
                other => CheckpointsError::Worker(other.to_string()),
            })
    }

    /// These checkpoints checking what an undo stores (the turn's result, to redo it)
    /// with `scrubber` (with the keys your program holds, see
    /// `Scrubber::with_known_secrets`): a content holding a secret is not stored
    /// and the path is named as not captured. The runtime's own handle
    /// ([`crate::AgentRuntime::checkpoints`]) uses the runtime's scrubber.
    #[must_use]
    pub fn with_scrubber(mut self, scrubber: Scrubber) -> Self {
        self.scrubber = scrubber;
        self
    }

    /// The session's checkpoints, oldest turn first.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn list(
        &self,
        session: &SessionId,
    ) -> Result<Vec<StoredCheckpoint>, CheckpointsError> {
        Ok(self.store.checkpoints(session).await?)
    }

    /// The contents `checkpoints` need, each checked against its hash (a stored
    /// content that does not match is left out: the restore then refuses its path).
    async fn blobs(
        &self,
        checkpoints: &[&Checkpoint],
    ) -> Result<BTreeMap<String, Arc<Vec<u8>>>, CheckpointsError> {
        let mut blobs = BTreeMap::new();
        for checkpoint in checkpoints {
            for hash in checkpoint.before_hashes() {
                if blobs.contains_key(hash) {
                    continue;
                }
                if let Some(content) = self.store.checkpoint_blob(hash).await?
                    && content_hash(&content) == hash
                {
                    blobs.insert(hash.to_owned(), Arc::new(content));
                }
            }
        }
        Ok(blobs)
    }

    /// Restores `checkpoints` (oldest first) as one change and stores the restore as
    /// the first one's turn, marked undone. A restore that stops part way
    /// ([`CheckpointError::Partial`]) stores what it did put back the same way (so it
    /// can be undone too), naming the paths it could not put back as not captured in
    /// that checkpoint, and fails naming both.
    async fn revert(
        &self,
        session: &SessionId,
        checkpoints: &[&Checkpoint],
        as_turn: u64,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let Some(first) = checkpoints.first() else {
            return Ok(Reverted::default());
        };
        let blobs = self.blobs(checkpoints).await?;
        let mut combined = Captured::default();
        let mut reverted = Reverted::default();
        for checkpoint in checkpoints {
            let part = Captured {
                entries: checkpoint.entries.clone(),
                not_captured: checkpoint.not_captured.clone(),
                blobs: checkpoint
                    .before_hashes()
                    .filter_map(|hash| blobs.get(hash).map(|b| (hash.to_owned(), b.clone())))
                    .collect(),
            };
            combined.merge(part);
            reverted.turns.push(checkpoint.turn);
            reverted.irreversible.extend(
                checkpoint
                    .irreversible
                    .iter()
                    .map(|name| format!("turn {}: {name}", checkpoint.turn)),
            );
        }
        let root = PathBuf::from(&first.workspace);
        let entries = combined.entries.clone();
        let blobs = combined.blobs.clone();
        let outcome = tokio::task::spawn_blocking(move || restore(&root, &entries, &blobs, force))
            .await
            .map_err(|err| CheckpointsError::Worker(err.to_string()))?;
        let (done, partial) = match outcome {
            Ok(restored) => (restored.inverse, None),
            Err(CheckpointError::Partial {
                restored,
                failed,
                inverse,
            }) => (*inverse, Some((restored, failed))),
            Err(other) => return Err(other.into()),
        };
        let mut inverse = Checkpoint {
            turn: as_turn,
            workspace: first.workspace.clone(),
            messages_before: first.messages_before,
            entries: done.entries,
            not_captured: Vec::new(),
            irreversible: Vec::new(),
            created_at_ms: first.created_at_ms,
            undone: !first.undone,
        };
        if let Some((_, failed)) = &partial {
            if inverse.entries.is_empty() {
                // Nothing was put back: the checkpoints stay as they are, to retry.
                return Err(partial_error(partial));
            }
            inverse.not_captured = failed
                .iter()
                .map(|not| NotCaptured {
                    path: not.path.clone(),
                    bytes: 0,
                    reason: Some(format!("not put back by the restore: {}", not.error)),
                })
                .collect();
        }
        let mut inverse_blobs = crate::checkpoint_secrets::stored_blobs(&done.blobs);
        let scrubber = self.scrubber.clone();
        let (inverse, inverse_blobs) = tokio::task::spawn_blocking(move || {
            crate::checkpoint_secrets::withhold_secrets(
                &mut inverse,
                &mut inverse_blobs,
                &scrubber,
            );
            (inverse, inverse_blobs)
        })
        .await
        .map_err(|err| CheckpointsError::Worker(err.to_string()))?;
        self.store
            .store_checkpoint(session, &inverse, &inverse_blobs, self.keep_last)
            .await?;
        if partial.is_some() {
            // The checkpoints after the first are in the one just stored.
            self.store
                .delete_checkpoints_from(session, as_turn.saturating_add(1))
                .await?;
            return Err(partial_error(partial));
        }
        reverted.paths = combined.entries.iter().map(|e| e.path.clone()).collect();
        reverted.not_captured = combined.not_captured;
        Ok(reverted)
    }

    /// Undoes the session's last changing turn (or, when it was undone, does it
    /// again), holding the session's lease. Refuses, changing nothing, when a path
    /// changed since, unless `force`.
    ///
    /// # Errors
    /// [`CheckpointsError::NoCheckpoint`], [`CheckpointsError::Busy`] while a run
    /// holds the session, a refused restore ([`CheckpointError::Conflicts`] names the
    /// paths), a partial one ([`CheckpointError::Partial`] names the paths put back and
    /// not: the paths put back are stored as the turn's checkpoint, marked undone, so
    /// undoing again puts them forward; the paths not put back are named in it as not
    /// captured; when nothing was put back the checkpoint is kept as it was), or the
    /// store's failure.
    pub async fn undo(
        &self,
        session: &SessionId,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let lease = self.lease(session).await?;
        let undone = self.undo_held(session, force).await;
        lease.release().await;
        undone
    }

    async fn undo_held(
        &self,
        session: &SessionId,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let all = self.store.checkpoints(session).await?;
        let Some(last) = all.last() else {
            return Err(CheckpointsError::NoCheckpoint {
                session: session.clone(),
                turn: None,
            });
        };
        // The undo's checkpoint replaces the turn's: its turns are redone by the same call.
        self.revert(session, &[&last.checkpoint], last.checkpoint.turn, force)
            .await
    }

    /// Takes files and conversation back to the state before turn `to_turn` (from 1):
    /// restores every checkpoint from that turn on, deletes them and the messages from
    /// the turn's user message on, holding the session's lease (so it never races a
    /// running turn). Refuses, changing nothing, when a path changed since, unless
    /// `force`. A restore that fails part way ([`CheckpointError::Partial`]) keeps the
    /// whole conversation and stores the paths it put back as the turn's checkpoint,
    /// marked undone (as [`undo`](Self::undo) does), so `undo` takes them forward again.
    ///
    /// # Errors
    /// [`CheckpointsError::NoTurn`], [`CheckpointsError::Busy`], a refused or partial
    /// restore, or the store's failure.
    pub async fn rewind(
        &self,
        session: &SessionId,
        to_turn: u64,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let lease = self.lease(session).await?;
        let rewound = self.rewind_held(session, to_turn, force).await;
        lease.release().await;
        rewound
    }

    async fn rewind_held(
        &self,
        session: &SessionId,
        to_turn: u64,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let user_sequence = self.user_sequence(session, to_turn).await?;
        let mut reverted = self.restore_from(session, to_turn, force).await?;
        if reverted.turns.is_empty() {
            // Nothing to restore: the turns' checkpoints (undone ones) go with them.
            self.store.delete_checkpoints_from(session, to_turn).await?;
        }
        let keep = user_sequence.saturating_sub(1);
        self.store.truncate_messages(session, keep).await?;
        reverted.messages_kept = Some(keep);
        Ok(reverted)
    }

    /// The sequence of turn `turn`'s user message, or [`CheckpointsError::NoTurn`].
    async fn user_sequence(&self, session: &SessionId, turn: u64) -> Result<u64, CheckpointsError> {
        let users = user_sequences(self.memory.as_ref(), session).await?;
        usize::try_from(turn.saturating_sub(1))
            .ok()
            .and_then(|index| users.get(index))
            .filter(|_| turn >= 1)
            .copied()
            .ok_or_else(|| CheckpointsError::NoTurn {
                session: session.clone(),
                turn,
                turns: users.len() as u64,
            })
    }

    /// Restores every checkpoint of turn `from_turn` and later that is not undone as
    /// one change, stored as `from_turn`'s checkpoint (marked undone) in place of
    /// them; with none, changes nothing (no turns in what it returns).
    async fn restore_from(
        &self,
        session: &SessionId,
        from_turn: u64,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let all = self.store.checkpoints(session).await?;
        let from: Vec<&Checkpoint> = all
            .iter()
            .map(|stored| &stored.checkpoint)
            .filter(|checkpoint| checkpoint.turn >= from_turn && !checkpoint.undone)
            .collect();
        if from.is_empty() {
            return Ok(Reverted::default());
        }
        // Checked and restored first: a refused restore changes nothing at all.
        let reverted = self.revert(session, &from, from_turn, force).await?;
        self.store
            .delete_checkpoints_from(session, from_turn.saturating_add(1))
            .await?;
        Ok(reverted)
    }

    /// Takes the files back to the state before turn `from_turn` (from 1), keeping
    /// the conversation (what `serve`'s revert of a run does): every checkpoint from
    /// that turn on that is not undone is restored as one change, holding the
    /// session's lease, and the revert is stored as turn `from_turn`'s checkpoint,
    /// marked undone, in place of them, so [`undo`](Self::undo) takes the files
    /// forward again. Refuses, changing nothing, when a path changed since, unless
    /// `force`; a partial restore is stored as [`rewind`](Self::rewind) stores one.
    ///
    /// # Errors
    /// [`CheckpointsError::NoTurn`], [`CheckpointsError::Busy`], a refused or partial
    /// restore, or the store's failure.
    pub async fn revert_files(
        &self,
        session: &SessionId,
        from_turn: u64,
        force: bool,
    ) -> Result<Reverted, CheckpointsError> {
        let lease = self.lease(session).await?;
        let reverted = match self.user_sequence(session, from_turn).await {
            Ok(_) => self.restore_from(session, from_turn, force).await,
            Err(error) => Err(error),
        };
        lease.release().await;
        reverted
    }

    /// A new session holding the conversation of `session` before turn `at_turn`;
    /// files are not touched. Returns the new session's id.
    ///
    /// # Errors
    /// [`CheckpointsError::NoTurn`] or the store's failure.
    pub async fn fork(
        &self,
        session: &SessionId,
        at_turn: u64,
    ) -> Result<SessionId, CheckpointsError> {
        let messages = self.memory.messages(session).await?;
        let users: Vec<u64> = messages
            .iter()
            .filter(|m| m.message.role == MessageRole::User)
            .map(|m| m.sequence)
            .collect();
        let turns = users.len() as u64;
        let Some(&user_sequence) = usize::try_from(at_turn.saturating_sub(1))
            .ok()
            .and_then(|index| users.get(index))
            .filter(|_| at_turn >= 1)
        else {
            return Err(CheckpointsError::NoTurn {
                session: session.clone(),
                turn: at_turn,
                turns,
            });
        };
        let kept: Vec<_> = messages
            .into_iter()
            .filter(|m| m.sequence < user_sequence)
            .map(|m| m.message)
            .collect();
        let fork = SessionId::generate();
        if let Some(meta) = self.memory.session_meta(session).await? {
            self.memory.store_session_meta(&fork, &meta).await?;
        }
        if !kept.is_empty() {
            self.memory.append_many(&fork, &kept).await?;
        }
        Ok(fork)
    }

    /// What the session's turns changed, as data, oldest turn first: per turn each
    /// path with its kind of change and, for a text file that still holds the turn's
    /// result, lines added and removed and the diff (see [`TurnChanges`](crate::TurnChanges)).
    ///
    /// # Errors
    /// The store's failure.
    pub async fn changes(
        &self,
        session: &SessionId,
    ) -> Result<Vec<crate::TurnChanges>, CheckpointsError> {
        let all = self.store.checkpoints(session).await?;
        let chosen: Vec<&Checkpoint> = all.iter().map(|stored| &stored.checkpoint).collect();
        let blobs = self.blobs(&chosen).await?;
        let chosen: Vec<Checkpoint> = chosen.into_iter().cloned().collect();
        tokio::task::spawn_blocking(move || {
            chosen
                .iter()
                .map(|checkpoint| crate::checkpoint_changes::turn_changes(checkpoint, &blobs))
                .collect()
        })
        .await
        .map_err(|err| CheckpointsError::Worker(err.to_string()))
    }

    /// What the session's turns changed (only `turn`, when given), as text: each
    /// checkpoint's paths with their state before and after, a unified diff for text
    /// files whose content after is still the file's, and what was not captured or
    /// cannot be undone.
    ///
    /// # Errors
    /// [`CheckpointsError::NoCheckpoint`] for a turn without one, or the store's failure.
    pub async fn diff(
        &self,
        session: &SessionId,
        turn: Option<u64>,
    ) -> Result<String, CheckpointsError> {
        let all = self.store.checkpoints(session).await?;
        let chosen: Vec<&Checkpoint> = all
            .iter()
            .map(|stored| &stored.checkpoint)
            .filter(|checkpoint| turn.is_none_or(|t| checkpoint.turn == t))
            .collect();
        if chosen.is_empty() && turn.is_some() {
            return Err(CheckpointsError::NoCheckpoint {
                session: session.clone(),
                turn,
            });
        }
        let blobs = self.blobs(&chosen).await?;
        let chosen: Vec<Checkpoint> = chosen.into_iter().cloned().collect();
        tokio::task::spawn_blocking(move || {
            chosen
                .iter()
                .map(|checkpoint| crate::checkpoint_diff::describe(checkpoint, &blobs))
                .collect::<String>()
        })
        .await
        .map_err(|err| CheckpointsError::Worker(err.to_string()))
    }
}

/// The error of a partial restore, from what [`restore`] said.
/// (The error keeps no inverse: the caller stored it as a checkpoint.)
fn partial_error(
    partial: Option<(Vec<String>, Vec<oxydra_tools::checkpoint::NotRestored>)>,
) -> CheckpointsError {
    let (restored, failed) = partial.unwrap_or_default();
    CheckpointsError::Restore(CheckpointError::Partial {
        restored,
        failed,
        inverse: Box::default(),
    })
}

/// Whether `error` is a refusal over paths changed since, with them.
pub fn conflicts(error: &CheckpointsError) -> Option<&[oxydra_tools::checkpoint::Conflict]> {
    match error {
        CheckpointsError::Restore(CheckpointError::Conflicts(conflicts)) => Some(conflicts),
        _ => None,
    }
}
