//! A run's usage on SQLite: recorded in the run's row, each counter only growing.

use rusqlite::{Connection, params};

use crate::error::CoordinatorError;
use crate::run_row::UsageColumns;
use crate::run_usage::RunUsage;

/// Records `usage` on running run `run_id`, keeping the larger of the stored and the
/// given value of each counter; `false` when the run is not running.
pub(super) fn record(
    connection: &mut Connection,
    run_id: &str,
    usage: RunUsage,
) -> Result<bool, CoordinatorError> {
    let columns = UsageColumns::encode(usage);
    let changed = connection
        .prepare_cached(
            "UPDATE coordinator_runs
             SET used_turns = MAX(used_turns, ?2),
                 used_input_tokens = MAX(used_input_tokens, ?3),
                 used_output_tokens = MAX(used_output_tokens, ?4),
                 used_cost = MAX(used_cost, ?5)
             WHERE id = ?1 AND status = 'running'",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                run_id,
                columns.turns,
                columns.input_tokens,
                columns.output_tokens,
                columns.cost
            ])
        })
        .map_err(CoordinatorError::storage("recording a run's usage"))?;
    Ok(changed == 1)
}

#[cfg(test)]
mod tests {
    use super::super::SqliteRunStore;
    use super::super::migrations::{MIGRATIONS, SCHEMA_VERSION};
    use crate::run::{Run, RunLineage, RunStatus};
    use crate::run_usage::RunUsage;
    use crate::store::RunStore;
    use rusqlite::{Connection, params};

    /// A database left at schema version 2 (before run usage) by an older coordinator,
    /// with a run it was running, opens, upgrades, and records usage from then on.
    #[tokio::test]
    async fn a_database_at_the_previous_version_upgrades_with_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.db");
        {
            let connection = Connection::open(&path).unwrap();
            connection
                .execute_batch(
                    "CREATE TABLE coordinator_schema_version (
                         version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
                )
                .unwrap();
            for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version <= 2) {
                connection.execute_batch(sql).unwrap();
                connection
                    .execute(
                        "INSERT INTO coordinator_schema_version VALUES (?1, 0)",
                        params![version],
                    )
                    .unwrap();
            }
            connection
                .execute(
                    "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at,
                         root_run_id, depth)
                     VALUES ('old', 'researcher', 'running', '{}', 1, 'old', 0)",
                    [],
                )
                .unwrap();
        }
        let store = SqliteRunStore::open(Some(&path)).unwrap();
        let versions: i64 = Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT MAX(version) FROM coordinator_schema_version",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(versions, SCHEMA_VERSION);
        let run = store.get_run("old").await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Running);
        assert_eq!(run.usage, RunUsage::default());
        let usage = RunUsage {
            turns: 2,
            input_tokens: 10,
            output_tokens: 1,
            cost: 0.5,
        };
        assert!(store.record_usage("old", usage).await.unwrap());
        assert_eq!(store.get_run("old").await.unwrap().unwrap().usage, usage);
        // Reopening applies nothing again and keeps the usage.
        drop(store);
        let store = SqliteRunStore::open(Some(&path)).unwrap();
        assert_eq!(store.get_run("old").await.unwrap().unwrap().usage, usage);
        let new = Run::pending(
            "new",
            "researcher",
            serde_json::json!({}),
            RunLineage::root("new"),
        );
        store.insert_run(new).await.unwrap();
        assert_eq!(
            store.get_run("new").await.unwrap().unwrap().usage,
            RunUsage::default()
        );
    }
}
