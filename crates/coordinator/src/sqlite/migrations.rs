//! The coordinator's schema and its versioned migrations, recorded in a table of its
//! own (`coordinator_schema_version`).

use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::CoordinatorError;
use crate::run::now_millis;

/// The coordinator's own record of applied migrations. `PRAGMA user_version` is not
/// used: the session memory may share the database file and owns that counter.
const VERSION_TABLE: &str = "
CREATE TABLE IF NOT EXISTS coordinator_schema_version (
    version INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
);
";

/// The schema as versioned migrations, applied in order, each once, each in the same
/// transaction as the record of it. Never edit a released migration: add the next
/// one (`ALTER TABLE …`). Version 1 uses `IF NOT EXISTS`, so databases created before
/// versioning adopt it without change.
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "
CREATE TABLE IF NOT EXISTS coordinator_blueprints (
    name TEXT PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('agent', 'deterministic')),
    description TEXT NOT NULL,
    parameters_schema TEXT,
    position INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS coordinator_runs (
    id TEXT PRIMARY KEY,
    agent_name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
    parameters TEXT NOT NULL,
    result TEXT,
    error TEXT,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS coordinator_runs_by_status ON coordinator_runs (status);
",
    ),
    (
        2,
        // Run trees: where a run sits (a root has no `root_run_id` stored before this
        // version, read as its own id) and, on roots, what the tree used.
        "
ALTER TABLE coordinator_runs ADD COLUMN root_run_id TEXT;
ALTER TABLE coordinator_runs ADD COLUMN parent_run_id TEXT;
ALTER TABLE coordinator_runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE coordinator_runs ADD COLUMN tree_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE coordinator_runs ADD COLUMN tree_cost REAL NOT NULL DEFAULT 0;
",
    ),
    (
        3,
        // What a run used of its budgets over every worker that ran it (runs stored
        // before this version read as having used nothing).
        "
ALTER TABLE coordinator_runs ADD COLUMN used_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE coordinator_runs ADD COLUMN used_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE coordinator_runs ADD COLUMN used_output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE coordinator_runs ADD COLUMN used_cost REAL NOT NULL DEFAULT 0;
",
    ),
    (
        4,
        // Approvals that wait: the `waiting_approval` status (SQLite cannot alter a
        // CHECK, so the table is rebuilt with every column of versions 1 to 3 copied),
        // and the requests a waiting run stores, each with its decision once made
        // (`delivered_at`: when an execution of the run was handed it).
        "
CREATE TABLE coordinator_runs_v4 (
    id TEXT PRIMARY KEY,
    agent_name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('pending', 'running', 'waiting_approval', 'completed', 'failed', 'cancelled')),
    parameters TEXT NOT NULL,
    result TEXT,
    error TEXT,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER,
    root_run_id TEXT,
    parent_run_id TEXT,
    depth INTEGER NOT NULL DEFAULT 0,
    tree_runs INTEGER NOT NULL DEFAULT 0,
    tree_cost REAL NOT NULL DEFAULT 0,
    used_turns INTEGER NOT NULL DEFAULT 0,
    used_input_tokens INTEGER NOT NULL DEFAULT 0,
    used_output_tokens INTEGER NOT NULL DEFAULT 0,
    used_cost REAL NOT NULL DEFAULT 0
);
INSERT INTO coordinator_runs_v4 (id, agent_name, status, parameters, result, error,
    created_at, started_at, finished_at, root_run_id, parent_run_id, depth, tree_runs,
    tree_cost, used_turns, used_input_tokens, used_output_tokens, used_cost)
SELECT id, agent_name, status, parameters, result, error,
    created_at, started_at, finished_at, root_run_id, parent_run_id, depth, tree_runs,
    tree_cost, used_turns, used_input_tokens, used_output_tokens, used_cost
FROM coordinator_runs ORDER BY rowid;
DROP TABLE coordinator_runs;
ALTER TABLE coordinator_runs_v4 RENAME TO coordinator_runs;
CREATE INDEX coordinator_runs_by_status ON coordinator_runs (status);
CREATE TABLE coordinator_run_approvals (
    approval_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    tier TEXT NOT NULL,
    scope TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    decision TEXT,
    decided_at INTEGER,
    delivered_at INTEGER
);
CREATE INDEX coordinator_run_approvals_by_run
    ON coordinator_run_approvals (run_id, requested_at);
CREATE INDEX coordinator_run_approvals_undecided
    ON coordinator_run_approvals (expires_at) WHERE decision IS NULL;
",
    ),
    (
        5,
        // What a person lists, without a scan and a sort of every run: runs newest
        // first (all of them, or of one status or one agent, each continued by the
        // keyset `(created_at, id)`), and the undecided approvals oldest first. The
        // status-led index takes over the one on `status` alone.
        "
DROP INDEX IF EXISTS coordinator_runs_by_status;
CREATE INDEX coordinator_runs_by_created ON coordinator_runs (created_at, id);
CREATE INDEX coordinator_runs_by_status_created
    ON coordinator_runs (status, created_at, id);
CREATE INDEX coordinator_runs_by_agent_created
    ON coordinator_runs (agent_name, created_at, id);
CREATE INDEX coordinator_run_approvals_undecided_by_request
    ON coordinator_run_approvals (requested_at, approval_id) WHERE decision IS NULL;
",
    ),
    (
        6,
        // Why a person must decide each request (the provenance hold naming the
        // untrusted source, the consent rule or the tier); `NULL` for requests stored
        // before.
        "
ALTER TABLE coordinator_run_approvals ADD COLUMN reason TEXT;
",
    ),
];

/// The version table's DDL, for tests that build an older database by hand.
#[cfg(test)]
pub(crate) const VERSION_TABLE_FOR_TESTS: &str = VERSION_TABLE;

/// The schema version this build writes and understands.
pub(crate) const SCHEMA_VERSION: i64 = 6;

/// The highest coordinator schema version recorded in `connection` (0: none).
fn schema_version(connection: &Connection) -> Result<i64, CoordinatorError> {
    connection
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM coordinator_schema_version",
            [],
            |row| row.get(0),
        )
        .map_err(CoordinatorError::storage("reading the schema version"))
}

/// Brings the coordinator's tables up to [`SCHEMA_VERSION`]. One immediate
/// transaction, so two processes opening the same file cannot both migrate. A
/// database written by a newer coordinator is refused rather than misread.
pub(crate) fn migrate(connection: &mut Connection) -> Result<(), CoordinatorError> {
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(CoordinatorError::storage("starting the schema migration"))?;
    tx.execute_batch(VERSION_TABLE)
        .map_err(CoordinatorError::storage(
            "creating the schema version table",
        ))?;
    let current = schema_version(&tx)?;
    if current > SCHEMA_VERSION {
        return Err(CoordinatorError::CorruptRow {
            what: "schema version",
            detail: format!(
                "the database has coordinator schema version {current}, newer than the \
                 {SCHEMA_VERSION} this build supports"
            ),
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version > current) {
        tx.execute_batch(sql)
            .map_err(CoordinatorError::storage("applying a schema migration"))?;
        tx.execute(
            "INSERT INTO coordinator_schema_version (version, applied_at) VALUES (?1, ?2)",
            params![version, now_millis()],
        )
        .map_err(CoordinatorError::storage("recording a schema migration"))?;
        tracing::debug!(version, "applied coordinator schema migration");
    }
    tx.commit()
        .map_err(CoordinatorError::storage("committing the schema migration"))
}
