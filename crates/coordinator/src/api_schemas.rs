//! Types that exist only to describe bodies in the OpenAPI document: the error body,
//! and mirrors of lower crates' types (which do not depend on `utoipa`), each kept
//! true by a test against the real type's JSON. Never built, hence `dead_code`.

use serde::Serialize;

/// The body of every error the API answers: a stable code and a sentence for a
/// person; some errors add fields (`field` for `invalid_query`, `validation_errors`
/// and `parameters_schema` for `parameter_validation_failed`, `limit_bytes` for
/// `payload_too_large`, `retry_after_secs` for `login_locked`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ErrorBody {
    /// The error's code (`run_not_found`, `invalid_query`, …).
    pub(crate) error: String,
    /// What went wrong, for a person.
    pub(crate) message: String,
}

/// A tool's tier, as [`oxydra_types::SafetyTier`] writes it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = SafetyTier)]
#[allow(dead_code)]
pub(crate) enum SafetyTierDoc {
    /// Reads only.
    ReadOnly,
    /// Changes the workspace or the world.
    SideEffecting,
    /// Can do anything (a shell).
    Privileged,
}

/// What approving for the session covers, as
/// [`oxydra_executor::PermissionScope`] writes it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = PermissionScope)]
#[allow(dead_code)]
pub(crate) enum PermissionScopeDoc {
    /// Every call of the tool, in any session.
    Tool,
    /// Every call of the tool in the session that asked.
    Session,
    /// Calls with exactly these arguments.
    Arguments,
}

/// What a run had used when it stopped to wait (absent when nothing).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = UsedBudget)]
pub(crate) struct UsedBudgetDoc {
    /// Provider calls.
    pub(crate) turns: u64,
    /// Tokens (`input_tokens`, `output_tokens`, …).
    pub(crate) usage: serde_json::Value,
    /// Cost in US dollars.
    pub(crate) cost: f64,
}

/// A tool call that waits for a person's decision, as
/// [`oxydra_runtime::PendingApproval`] writes it (a test keeps the two the same).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = PendingApproval)]
pub(crate) struct PendingApprovalDoc {
    /// The request, to decide it by (unique across runs).
    pub(crate) approval_id: String,
    /// The call that waits.
    pub(crate) call_id: String,
    /// The tool.
    pub(crate) tool: String,
    /// The arguments as a person sees them: scrubbed, pretty-printed JSON, every
    /// character outside printable ASCII escaped.
    pub(crate) arguments: String,
    /// The tool's tier.
    pub(crate) tier: SafetyTierDoc,
    /// What `approve_for_session` covers.
    pub(crate) scope: PermissionScopeDoc,
    /// When it was asked, in Unix milliseconds.
    pub(crate) requested_at: i64,
    /// When it lapses (a later decision is a denial), in Unix milliseconds.
    pub(crate) expires_at: i64,
    /// What the run had used when it stopped to wait.
    pub(crate) used: Option<UsedBudgetDoc>,
    /// Why a person must decide: the provenance hold naming the untrusted source
    /// (`this run read https://… since your last decision`), else the tool's consent
    /// rule or its tier. Absent only for a request stored before reasons were kept.
    pub(crate) reason: Option<String>,
}

/// The body of `POST /runs/{id}/approvals/{approval_id}`, as
/// [`oxydra_runtime::ApprovalDecision`] reads it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ApprovalDecision)]
pub(crate) struct ApprovalDecisionDoc {
    /// `approve_once`, `approve_for_session` or `deny`.
    pub(crate) decision: DecisionDoc,
    /// Why, for the model: with `deny` only.
    pub(crate) reason: Option<String>,
}

/// A decision's word.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Decision)]
#[allow(dead_code)]
pub(crate) enum DecisionDoc {
    /// Run the call; ask again next time.
    ApproveOnce,
    /// Run it and every later call in the request's scope.
    ApproveForSession,
    /// Do not run it.
    Deny,
}

/// One turn's changes, as [`oxydra_runtime::TurnChanges`] writes it (a test keeps
/// the two the same).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = TurnChanges)]
pub(crate) struct TurnChangesDoc {
    /// The turn (from 1).
    pub(crate) turn: u64,
    /// Whether the turn was undone or reverted: `paths` are then the revert's own
    /// change, which undoing again takes back.
    pub(crate) undone: bool,
    /// When the checkpoint was recorded, in Unix milliseconds.
    pub(crate) created_at_ms: i64,
    /// The changed paths, parents before children.
    pub(crate) paths: Vec<PathChangeDoc>,
    /// Changed paths whose content before was not kept: a revert cannot bring them
    /// back.
    pub(crate) not_captured: Vec<NotCapturedDoc>,
    /// Tools of the turn whose effects cannot be reverted (`web_fetch` other than
    /// GET, MCP tools), by name.
    pub(crate) irreversible: Vec<String>,
}

/// One changed path, as [`oxydra_runtime::PathChange`] writes it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = PathChange)]
pub(crate) struct PathChangeDoc {
    /// The path, relative to the workspace root.
    pub(crate) path: String,
    /// The kind of change.
    pub(crate) kind: ChangeKindDoc,
    /// Its state before the turn.
    pub(crate) before: EntryStateDoc,
    /// Its state after the turn.
    pub(crate) after: EntryStateDoc,
    /// For a text file that still holds the turn's result: lines added.
    pub(crate) lines_added: Option<u64>,
    /// For such a file: lines removed.
    pub(crate) lines_removed: Option<u64>,
    /// For such a file: the unified diff from before the turn to now (scrubbed, at
    /// most 16 KiB, cut at a line).
    pub(crate) diff: Option<String>,
    /// Whether `diff` was cut.
    pub(crate) diff_truncated: bool,
}

/// A kind of change, as [`oxydra_runtime::ChangeKind`] writes it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ChangeKind)]
#[allow(dead_code)]
pub(crate) enum ChangeKindDoc {
    /// Nothing was there before.
    Added,
    /// Nothing is there after.
    Deleted,
    /// The content or a symlink's target changed.
    Modified,
    /// Only the permission bits changed.
    ModeChanged,
    /// One kind of path became another.
    TypeChanged,
}

/// The state of a path, as [`oxydra_types::EntryState`] writes it: `kind` is
/// `absent`, `file` (with `hash`, `size`, `mode`), `dir` (`mode`), `symlink`
/// (`target`) or `other`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = EntryState)]
pub(crate) struct EntryStateDoc {
    /// `absent`, `file`, `dir`, `symlink` or `other`.
    pub(crate) kind: String,
    /// A file's content hash (lowercase hex SHA-256).
    pub(crate) hash: Option<String>,
    /// A file's size in bytes.
    pub(crate) size: Option<u64>,
    /// A file's or directory's permission bits.
    pub(crate) mode: Option<u32>,
    /// A symlink's target.
    pub(crate) target: Option<String>,
}

/// A changed path whose content before was not kept, as
/// [`oxydra_types::NotCaptured`] writes it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = NotCaptured)]
pub(crate) struct NotCapturedDoc {
    /// The path.
    pub(crate) path: String,
    /// Its size before, in bytes.
    pub(crate) bytes: u64,
    /// Why, when not the size cap.
    pub(crate) reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use utoipa::PartialSchema;

    /// The property names of `schema`.
    fn properties<T: utoipa::ToSchema>() -> BTreeSet<String> {
        let schema = serde_json::to_value(T::schema()).unwrap();
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    }

    #[test]
    fn the_pending_approval_mirror_names_every_field_the_real_one_writes() {
        let real = oxydra_runtime::PendingApproval {
            approval_id: oxydra_types::ApprovalId::from("apr_1"),
            call_id: oxydra_types::CallId::from("call_1"),
            tool: "shell_exec".into(),
            arguments: "{}".into(),
            tier: oxydra_types::SafetyTier::Privileged,
            scope: oxydra_executor::PermissionScope::Session,
            requested_at: 1,
            expires_at: 2,
            used: oxydra_runtime::UsedBudget {
                turns: 1,
                cost: 0.5,
                ..Default::default()
            },
            reason: Some("this run read https://x.test/ since your last decision".into()),
        };
        let written = serde_json::to_value(&real).unwrap();
        let keys: BTreeSet<String> = written.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, properties::<PendingApprovalDoc>());
        let used: BTreeSet<String> = written["used"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(used, properties::<UsedBudgetDoc>());
        // The enums' words are the real ones.
        let tiers = serde_json::to_value(SafetyTierDoc::schema()).unwrap();
        for tier in [
            oxydra_types::SafetyTier::ReadOnly,
            oxydra_types::SafetyTier::SideEffecting,
            oxydra_types::SafetyTier::Privileged,
        ] {
            let word = serde_json::to_value(tier).unwrap();
            assert!(tiers["enum"].as_array().unwrap().contains(&word), "{word}");
        }
        let scopes = serde_json::to_value(PermissionScopeDoc::schema()).unwrap();
        for scope in [
            oxydra_executor::PermissionScope::Tool,
            oxydra_executor::PermissionScope::Session,
            oxydra_executor::PermissionScope::Arguments,
        ] {
            let word = serde_json::to_value(scope).unwrap();
            assert!(scopes["enum"].as_array().unwrap().contains(&word), "{word}");
        }
        let decisions = serde_json::to_value(DecisionDoc::schema()).unwrap();
        for decision in [
            oxydra_runtime::ApprovalDecision::ApproveOnce,
            oxydra_runtime::ApprovalDecision::ApproveForSession,
            oxydra_runtime::ApprovalDecision::Deny { reason: None },
        ] {
            let word = serde_json::Value::from(decision.as_str());
            assert!(
                decisions["enum"].as_array().unwrap().contains(&word),
                "{word}"
            );
        }
    }

    #[test]
    fn the_change_mirrors_name_every_field_the_real_ones_write() {
        let file = oxydra_types::EntryState::File {
            hash: "ab".into(),
            size: 3,
            mode: 0o644,
        };
        let real = oxydra_runtime::TurnChanges {
            turn: 1,
            undone: false,
            created_at_ms: 5,
            paths: vec![oxydra_runtime::PathChange {
                path: "a.txt".into(),
                kind: oxydra_runtime::ChangeKind::Added,
                before: oxydra_types::EntryState::Absent,
                after: file.clone(),
                lines_added: Some(1),
                lines_removed: Some(0),
                diff: Some("+a\n".into()),
                diff_truncated: false,
            }],
            not_captured: vec![oxydra_types::NotCaptured {
                path: "big".into(),
                bytes: 9,
                reason: Some("holds a secret".into()),
            }],
            irreversible: vec!["web_fetch".into()],
        };
        let written = serde_json::to_value(&real).unwrap();
        let keys = |value: &serde_json::Value| -> BTreeSet<String> {
            value.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(&written), properties::<TurnChangesDoc>());
        assert_eq!(keys(&written["paths"][0]), properties::<PathChangeDoc>());
        assert_eq!(
            keys(&written["not_captured"][0]),
            properties::<NotCapturedDoc>()
        );
        let states = properties::<EntryStateDoc>();
        for state in [
            file,
            oxydra_types::EntryState::Dir { mode: 0o755 },
            oxydra_types::EntryState::Symlink { target: "t".into() },
        ] {
            let written = serde_json::to_value(&state).unwrap();
            assert!(keys(&written).is_subset(&states), "{written}");
        }
        let kinds = serde_json::to_value(ChangeKindDoc::schema()).unwrap();
        for kind in [
            oxydra_runtime::ChangeKind::Added,
            oxydra_runtime::ChangeKind::Deleted,
            oxydra_runtime::ChangeKind::Modified,
            oxydra_runtime::ChangeKind::ModeChanged,
            oxydra_runtime::ChangeKind::TypeChanged,
        ] {
            let word = serde_json::to_value(kind).unwrap();
            assert!(kinds["enum"].as_array().unwrap().contains(&word), "{word}");
        }
    }
}
