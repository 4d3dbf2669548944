//! Capturing a turn's checkpoint: a scan of the workspace before the first call that
//! may change it, another after each such batch, what changed folded into the turn's
//! [`Captured`], and the turn's [`Checkpoint`] stored after each batch (replacing the
//! one stored after the batch before), so a crash loses at most the batch running.
//!
//! Scans run on the blocking pool. A scan that fails (the workspace unreadable) is
//! logged and the turn goes on without a checkpoint: capture never fails a run.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_memory::CheckpointStore;
use oxydra_scrubbing::Scrubber;
use oxydra_tools::ToolRegistry;
use oxydra_tools::checkpoint::{Captured, CheckpointConfig, Snapshot, changes, scan};
use oxydra_types::{Checkpoint, SafetyTier, SessionId, ToolCall};

/// Where a runtime stores checkpoints, and how much.
#[derive(Clone)]
pub(crate) struct CheckpointSettings {
    pub store: Arc<dyn CheckpointStore>,
    pub config: CheckpointConfig,
}

/// Tools whose effects a checkpoint captures: they change only the workspace.
const REVERSIBLE_TOOLS: &[&str] = &["file_write", "file_edit", "shell_exec"];

/// The checkpoint of the turn running.
pub(crate) struct TurnCapture {
    /// The scan after the last batch (the state before the next).
    snapshot: Snapshot,
    captured: Captured,
    irreversible: Vec<String>,
    /// The turn's ordinal and the sequence before its user message.
    turn: u64,
    messages_before: u64,
}

/// The calls of a batch that may change something (neither read-only nor unknown).
pub(crate) fn changing(registry: &ToolRegistry, calls: &[ToolCall]) -> bool {
    calls
        .iter()
        .any(|call| registry.tier(&call.name) != Some(SafetyTier::ReadOnly))
}

/// The names of the calls whose effects a checkpoint cannot undo: a `web_fetch`
/// other than GET or HEAD, and any changing tool other than the file tools and
/// `shell_exec` (MCP tools, tools of the embedding program).
fn irreversible(registry: &ToolRegistry, calls: &[ToolCall]) -> Vec<String> {
    calls
        .iter()
        .filter(|call| {
            if call.name == "web_fetch" {
                let arguments: serde_json::Value =
                    serde_json::from_str(&call.arguments).unwrap_or_default();
                let method = arguments
                    .get("method")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("GET");
                return !method.eq_ignore_ascii_case("GET") && !method.eq_ignore_ascii_case("HEAD");
            }
            registry.tier(&call.name) != Some(SafetyTier::ReadOnly)
                && !REVERSIBLE_TOOLS.contains(&call.name.as_str())
        })
        .map(|call| call.name.clone())
        .collect()
}

async fn scan_blocking(root: PathBuf, previous: Option<Snapshot>, budget: u64) -> Option<Snapshot> {
    let scanned = tokio::task::spawn_blocking(move || scan(&root, previous.as_ref(), budget)).await;
    match scanned {
        Ok(Ok(snapshot)) => Some(snapshot),
        Ok(Err(error)) => {
            tracing::warn!(%error, "the workspace could not be scanned: no checkpoint");
            None
        }
        Err(error) => {
            tracing::warn!(%error, "the workspace scan failed: no checkpoint");
            None
        }
    }
}

impl TurnCapture {
    /// Scans the workspace before the turn's first changing batch.
    pub async fn begin(
        root: PathBuf,
        config: &CheckpointConfig,
        turn: u64,
        messages_before: u64,
    ) -> Option<Self> {
        let snapshot = scan_blocking(root, None, config.max_bytes).await?;
        Some(Self {
            snapshot,
            captured: Captured::default(),
            irreversible: Vec::new(),
            turn,
            messages_before,
        })
    }

    /// Whether this capture is of `turn`.
    pub fn is_turn(&self, turn: u64) -> bool {
        self.turn == turn
    }

    /// After a batch: what it changed, folded into the turn and stored.
    pub async fn after_batch(
        &mut self,
        settings: &CheckpointSettings,
        registry: &ToolRegistry,
        root: PathBuf,
        session: &SessionId,
        calls: &[ToolCall],
        scrubber: &Scrubber,
    ) {
        let budget = settings.config.max_bytes;
        let before = std::mem::take(&mut self.snapshot);
        let scan_root = root.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let after = scan(&scan_root, Some(&before), budget)?;
            let changed = changes(&scan_root, &before, &after);
            Ok::<_, std::io::Error>((after, changed))
        })
        .await;
        let (after, changed) = match joined {
            Ok(Ok(done)) => done,
            Ok(Err(error)) => {
                tracing::warn!(%error, "the workspace could not be scanned after a call");
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "the workspace scan failed after a call");
                return;
            }
        };
        self.snapshot = after;
        self.captured.merge(changed);
        for name in irreversible(registry, calls) {
            if !self.irreversible.contains(&name) {
                self.irreversible.push(name);
            }
        }
        let checkpoint = Checkpoint {
            turn: self.turn,
            workspace: root.to_string_lossy().into_owned(),
            messages_before: self.messages_before,
            entries: self.captured.entries.clone(),
            not_captured: self.captured.not_captured.clone(),
            irreversible: self.irreversible.clone(),
            created_at_ms: now_ms(),
            undone: false,
        };
        if checkpoint.is_empty() {
            return;
        }
        let blobs = crate::checkpoint_secrets::stored_blobs(&self.captured.blobs);
        // No secret is stored: contents holding one are named, not kept.
        let scrubber = scrubber.clone();
        let checked = tokio::task::spawn_blocking(move || {
            let (mut checkpoint, mut blobs) = (checkpoint, blobs);
            crate::checkpoint_secrets::withhold_secrets(&mut checkpoint, &mut blobs, &scrubber);
            (checkpoint, blobs)
        })
        .await;
        let Ok((checkpoint, blobs)) = checked else {
            tracing::warn!("the turn's checkpoint could not be checked for secrets: not stored");
            return;
        };
        let keep = match settings.config.max_age_days {
            None => settings.config.keep_last,
            Some(_) => match settings.store.checkpoints(session).await {
                Ok(stored) => {
                    let others: Vec<i64> = stored
                        .iter()
                        .filter(|s| s.checkpoint.turn != checkpoint.turn)
                        .map(|s| s.checkpoint.created_at_ms)
                        .collect();
                    settings
                        .config
                        .keep_count(&others, checkpoint.created_at_ms)
                }
                Err(error) => {
                    tracing::warn!(%error, "the session's checkpoints could not be listed");
                    settings.config.keep_last
                }
            },
        };
        let stored = settings
            .store
            .store_checkpoint(session, &checkpoint, &blobs, keep)
            .await;
        if let Err(error) = stored {
            tracing::warn!(%error, "the turn's checkpoint could not be stored");
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
