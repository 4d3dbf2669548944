//! Migration 4 on a database of version 3 with runs in it: the table rebuilt for the
//! `waiting_approval` status keeps every run and every column. Migration 6 on a
//! database of version 5 with a run waiting: its request is kept (without a reason),
//! and requests stored after keep theirs.

use rusqlite::Connection;
use serde_json::json;

use super::SqliteRunStore;
use super::migrations::{MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE_FOR_TESTS};
use super::tests::recorded_versions;
use crate::run::RunStatus;
use crate::run_usage::RunUsage;
use crate::store::RunStore;
use oxydra_runtime::PendingApproval;

/// A request `id` asked at `requested_at`, lapsing `ttl` later.
fn request(id: &str, requested_at: i64, ttl: std::time::Duration) -> PendingApproval {
    PendingApproval {
        approval_id: oxydra_types::ApprovalId::from(id),
        call_id: oxydra_types::CallId::from("call_1"),
        tool: "shell_exec".into(),
        arguments: "{}".into(),
        tier: oxydra_types::SafetyTier::Privileged,
        scope: oxydra_executor::PermissionScope::Session,
        requested_at,
        expires_at: requested_at + i64::try_from(ttl.as_millis()).unwrap(),
        used: Default::default(),
        reason: None,
    }
}

#[tokio::test]
async fn a_database_of_version_3_gains_approvals_with_every_run_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(VERSION_TABLE_FOR_TESTS).unwrap();
        for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version <= 3) {
            connection.execute_batch(sql).unwrap();
            connection
                .execute(
                    "INSERT INTO coordinator_schema_version (version, applied_at) VALUES (?1, 0)",
                    [version],
                )
                .unwrap();
        }
        connection
            .execute_batch(
                "INSERT INTO coordinator_runs (id, agent_name, status, parameters, result,
                     error, created_at, started_at, finished_at, root_run_id, parent_run_id,
                     depth, tree_runs, tree_cost, used_turns, used_input_tokens,
                     used_output_tokens, used_cost)
                 VALUES
                 ('done', 'researcher', 'completed', '{\"prompt\":\"a\"}', '{\"ok\":1}',
                  NULL, 1, 2, 3, 'done', NULL, 0, 2, 0.75, 3, 300, 30, 0.5),
                 ('child', 'researcher', 'failed', '{}', NULL,
                  '{\"kind\":\"provider\",\"message\":\"down\"}', 4, 5, 6, 'done',
                  'done', 1, 0, 0, 1, 10, 1, 0.25),
                 ('busy', 'researcher', 'running', '{}', NULL, NULL, 7, 8, NULL, 'busy',
                  NULL, 0, 0, 0, 2, 20, 2, 0.125);",
            )
            .unwrap();
        // At version 3 a run cannot wait.
        assert!(
            connection
                .execute(
                    "UPDATE coordinator_runs SET status = 'waiting_approval' WHERE id = 'busy'",
                    [],
                )
                .is_err()
        );
    }
    let store = SqliteRunStore::open(Some(&path)).unwrap();
    assert_eq!(
        recorded_versions(&path),
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let done = store.get_run("done").await.unwrap().unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.result, Some(json!({"ok": 1})));
    assert_eq!((done.started_at, done.finished_at), (Some(2), Some(3)));
    assert_eq!(done.tree.tree_runs, 2);
    assert!((done.tree.tree_cost - 0.75).abs() < 1e-12);
    assert_eq!(
        done.usage,
        RunUsage {
            turns: 3,
            input_tokens: 300,
            output_tokens: 30,
            cost: 0.5
        }
    );
    let child = store.get_run("child").await.unwrap().unwrap();
    assert_eq!(child.lineage.parent_run_id.as_deref(), Some("done"));
    assert_eq!(child.lineage.depth, 1);
    assert_eq!(child.error.unwrap().kind, "provider");
    assert_eq!(child.usage.turns, 1);
    // The running run can now wait, keeping what it used.
    let waiting = request("apr_1", 1, std::time::Duration::from_secs(60));
    assert!(
        store
            .suspend_run("busy", vec![waiting.clone()])
            .await
            .unwrap()
    );
    let busy = store.get_run("busy").await.unwrap().unwrap();
    assert_eq!(busy.status, RunStatus::WaitingApproval);
    assert_eq!(busy.usage.input_tokens, 20);
    assert_eq!(
        store.pending_approvals("busy").await.unwrap(),
        vec![waiting]
    );
    // The status-led listing index (migration 5) stands on the rebuilt table, in
    // place of the one on status alone.
    let index = |name: &str| -> i64 {
        Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1",
                [name],
                |row| row.get(0),
            )
            .unwrap()
    };
    assert_eq!(index("coordinator_runs_by_status_created"), 1);
    assert_eq!(index("coordinator_runs_by_status"), 0);
}

#[tokio::test]
async fn a_database_of_version_5_keeps_its_waiting_request_and_gains_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(VERSION_TABLE_FOR_TESTS).unwrap();
        for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version <= 5) {
            connection.execute_batch(sql).unwrap();
            connection
                .execute(
                    "INSERT INTO coordinator_schema_version (version, applied_at) VALUES (?1, 0)",
                    [version],
                )
                .unwrap();
        }
        connection
            .execute_batch(
                "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at,
                     started_at, root_run_id, depth, tree_runs, tree_cost, used_turns,
                     used_input_tokens, used_output_tokens, used_cost)
                 VALUES ('old', 'researcher', 'waiting_approval', '{}', 1, 2, 'old', 0, 0, 0,
                     1, 10, 1, 0);
                 INSERT INTO coordinator_run_approvals (approval_id, run_id, call_id, tool,
                     arguments, tier, scope, requested_at, expires_at)
                 VALUES ('apr_old', 'old', 'call_1', 'shell_exec', '{}', 'privileged',
                     'session', 1, 9999999999999);",
            )
            .unwrap();
    }
    let store = SqliteRunStore::open(Some(&path)).unwrap();
    assert_eq!(
        recorded_versions(&path),
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let old = store.pending_approvals("old").await.unwrap();
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].approval_id.as_str(), "apr_old");
    assert_eq!(old[0].reason, None);
    // A request stored now keeps why a person must decide it.
    store
        .insert_run(crate::run::Run::pending(
            "new",
            "researcher",
            json!({}),
            crate::run::RunLineage::root("new"),
        ))
        .await
        .unwrap();
    store.start_run("new").await.unwrap().unwrap();
    let mut request = request("apr_new", 1, std::time::Duration::from_secs(60));
    request.reason = Some("this run read https://x.test/ since your last decision".into());
    assert!(
        store
            .suspend_run("new", vec![request.clone()])
            .await
            .unwrap()
    );
    assert_eq!(store.pending_approvals("new").await.unwrap(), vec![request]);
}
