//! The listing queries' plans (`EXPLAIN QUERY PLAN`) on the migrated schema: every
//! filter of `GET /runs` and `GET /approvals` walks an index in the listing's order,
//! so a page costs its own rows, not a scan and a sort of every run.

use rusqlite::{Connection, params_from_iter};

use super::listing::{runs_statement, waiting_statement};
use super::migrations::migrate;
use crate::run::RunStatus;
use crate::run_query::{RunCursor, RunQuery};

/// A migrated in-memory database with a few runs and approvals.
fn database() -> Connection {
    let mut connection = Connection::open_in_memory().unwrap();
    migrate(&mut connection).unwrap();
    for i in 0..20 {
        let status = if i % 4 == 0 {
            "waiting_approval"
        } else {
            "completed"
        };
        connection
            .execute(
                "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at)
                 VALUES (?1, ?2, ?3, '{}', ?4)",
                rusqlite::params![format!("run_{i:02}"), format!("agent_{}", i % 3), status, i],
            )
            .unwrap();
        connection
            .execute(
                "INSERT INTO coordinator_run_approvals (approval_id, run_id, call_id, tool,
                     arguments, tier, scope, requested_at, expires_at)
                 VALUES (?1, ?2, 'c', 'shell_exec', '{}', 'privileged', 'session', ?3, ?4)",
                rusqlite::params![format!("apr_{i:02}"), format!("run_{i:02}"), i, i + 1000],
            )
            .unwrap();
    }
    connection
}

/// The plan's lines of `sql` with `args`.
fn plan(connection: &Connection, sql: &str, args: Vec<rusqlite::types::Value>) -> Vec<String> {
    let mut statement = connection
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap();
    statement
        .query_map(params_from_iter(args), |row| row.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Asserts that `plan` reads `table` through `index` and sorts nothing.
fn uses(plan: &[String], table: &str, index: &str) {
    assert!(
        plan.iter().all(|line| !line.contains("TEMP B-TREE")),
        "no sort of the rows: {plan:?}"
    );
    assert!(
        plan.iter()
            .filter(|line| line.contains(&format!(" {table} ")) || line.ends_with(table))
            .all(|line| line.contains("INDEX")),
        "{table} is never scanned without an index: {plan:?}"
    );
    assert!(
        plan.iter().any(|line| line.contains(index)),
        "{index} is used: {plan:?}"
    );
}

#[test]
fn every_run_listing_walks_an_index_in_order() {
    let connection = database();
    let cursor = Some(RunCursor::after(10, "run_10"));
    let cases = [
        (RunQuery::default(), "coordinator_runs_by_created"),
        (
            RunQuery {
                after: cursor.clone(),
                ..RunQuery::default()
            },
            "coordinator_runs_by_created",
        ),
        (
            RunQuery {
                since: Some(5),
                ..RunQuery::default()
            },
            "coordinator_runs_by_created",
        ),
        (
            RunQuery {
                status: Some(RunStatus::WaitingApproval),
                ..RunQuery::default()
            },
            "coordinator_runs_by_status_created",
        ),
        (
            RunQuery {
                status: Some(RunStatus::Completed),
                after: cursor.clone(),
                ..RunQuery::default()
            },
            "coordinator_runs_by_status_created",
        ),
        (
            RunQuery {
                agent: Some("agent_1".into()),
                after: cursor,
                ..RunQuery::default()
            },
            "coordinator_runs_by_agent_created",
        ),
    ];
    for (query, index) in cases {
        let (sql, args) = runs_statement(&query);
        uses(&plan(&connection, &sql, args), "coordinator_runs", index);
    }
    // Both filters: one of the two indexes, still no sort.
    let (sql, args) = runs_statement(&RunQuery {
        status: Some(RunStatus::Completed),
        agent: Some("agent_1".into()),
        ..RunQuery::default()
    });
    let both = plan(&connection, &sql, args);
    uses(&both, "coordinator_runs", "coordinator_runs_by_");
}

#[test]
fn the_keyset_cursor_continues_the_listing_exactly() {
    let connection = database();
    let page = |query: &RunQuery| -> Vec<String> {
        let (sql, args) = runs_statement(query);
        let mut statement = connection.prepare(&sql).unwrap();
        statement
            .query_map(params_from_iter(args), |row| row.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    // Two runs at the same instant are ordered by id, and the cursor between them
    // neither repeats nor skips one.
    connection
        .execute(
            "INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at)
             VALUES ('run_10b', 'agent_1', 'completed', '{}', 10)",
            [],
        )
        .unwrap();
    let mut seen = Vec::new();
    let mut query = RunQuery {
        limit: 3,
        ..RunQuery::default()
    };
    loop {
        let ids = page(&query);
        let Some(last) = ids.last().cloned() else {
            break;
        };
        let at: i64 = connection
            .query_row(
                "SELECT created_at FROM coordinator_runs WHERE id = ?1",
                [&last],
                |row| row.get(0),
            )
            .unwrap();
        seen.extend(ids);
        query.after = Some(RunCursor::after(at, &last));
    }
    assert_eq!(seen.len(), 21, "{seen:?}");
    assert_eq!(&seen[..3], ["run_19", "run_18", "run_17"]);
    let ten = seen.iter().position(|id| id == "run_10b").unwrap();
    assert_eq!(seen[ten + 1], "run_10");
}

#[test]
fn the_waiting_approvals_walk_the_undecided_index() {
    let connection = database();
    let plan = plan(
        &connection,
        &waiting_statement(),
        vec![rusqlite::types::Value::Integer(100)],
    );
    uses(&plan, "a", "coordinator_run_approvals_undecided_by_request");
}
