//! The schema as numbered migrations per component, recorded in
//! `oxydra_schema_migrations`. Workers starting together take a transaction-scoped
//! advisory lock first, so each migration is applied exactly once; the others wait and
//! then find nothing left to do.

use deadpool_postgres::Object;

use crate::error::{PostgresError, driver_message};
use crate::pgvector::VectorSetup;
use crate::schema_version::{record, version};

/// The memory's migrations: migration `n` (1-based) brings it from version `n - 1` to
/// `n`. Never edit a released one: add the next.
pub(crate) const MEMORY_MIGRATIONS: &[&str] = &[
    // 1: sessions, their messages, summaries, leases and indexed chunks. Vectors are
    // stored as little-endian f32 bytes and ranked in the process (until the
    // `memory_pgvector` migrations move them to pgvector); the full text is a generated
    // `tsvector` with a GIN index.
    "
    CREATE TABLE sessions (
        session_id    TEXT PRIMARY KEY,
        created_at    BIGINT NOT NULL,
        updated_at    BIGINT NOT NULL,
        last_sequence BIGINT NOT NULL
    );
    CREATE TABLE conversation_events (
        session_id TEXT NOT NULL,
        sequence   BIGINT NOT NULL,
        role       TEXT NOT NULL,
        payload    TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (session_id, sequence)
    );
    CREATE TABLE session_state (
        session_id     TEXT PRIMARY KEY,
        summary        TEXT,
        covers_through BIGINT NOT NULL DEFAULT 0,
        epoch          BIGINT NOT NULL DEFAULT 0,
        updated_at     BIGINT NOT NULL
    );
    CREATE TABLE session_leases (
        session_id  TEXT PRIMARY KEY,
        owner       TEXT NOT NULL,
        pid         BIGINT NOT NULL,
        host        TEXT NOT NULL,
        acquired_at BIGINT NOT NULL,
        expires_at  BIGINT NOT NULL
    );
    CREATE TABLE chunks (
        id         BIGSERIAL PRIMARY KEY,
        session_id TEXT,
        text       TEXT NOT NULL,
        model      TEXT NOT NULL,
        dims       INTEGER NOT NULL,
        embedding  BYTEA NOT NULL,
        created_at BIGINT NOT NULL,
        tsv        TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
    );
    CREATE INDEX chunks_by_session ON chunks (session_id);
    CREATE INDEX chunks_by_model ON chunks (model, dims, id);
    CREATE INDEX chunks_fts ON chunks USING GIN (tsv);
    ",
    // 2: what each session runs with (model, system prompt, agent). Sessions stored
    // before have none: they list no model and continue with the caller's prompt.
    "
    CREATE TABLE session_meta (
        session_id    TEXT PRIMARY KEY,
        model         TEXT NOT NULL,
        system_prompt TEXT,
        agent         TEXT,
        updated_at    BIGINT NOT NULL
    );
    ",
    // 3: the workspace each session worked in (see the SQLite store's migration 4).
    "
    ALTER TABLE session_meta ADD COLUMN workspace TEXT;
    ",
    // 4: workspace checkpoints and their contents by hash (the SQLite store's
    // migration 5).
    "
    CREATE TABLE checkpoints (
        id         BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn       BIGINT NOT NULL,
        payload    TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        UNIQUE (session_id, turn)
    );
    CREATE TABLE checkpoint_blobs (
        hash    TEXT PRIMARY KEY,
        content BYTEA NOT NULL
    );
    CREATE TABLE checkpoint_blob_refs (
        checkpoint_id BIGINT NOT NULL,
        hash          TEXT NOT NULL,
        PRIMARY KEY (checkpoint_id, hash)
    );
    CREATE INDEX checkpoint_blob_refs_by_hash ON checkpoint_blob_refs (hash);
    ",
    // 5: the session a session replays (the SQLite store's migration 6).
    "
    ALTER TABLE session_meta ADD COLUMN replay_of TEXT;
    ",
    // 6: intents and outcomes of side-effecting tool calls, keyed by idempotency key
    // (the SQLite store's migration 7).
    "
    CREATE TABLE tool_intents (
        idempotency_key TEXT PRIMARY KEY,
        session_id      TEXT NOT NULL,
        call_id         TEXT NOT NULL,
        tool            TEXT NOT NULL,
        args_digest     TEXT NOT NULL,
        state_before    TEXT,
        created_at      BIGINT NOT NULL,
        outcome         TEXT,
        result_digest   TEXT,
        finished_at     BIGINT
    );
    CREATE INDEX tool_intents_by_session ON tool_intents (session_id, created_at);
    ",
];

/// The run store's migrations.
pub(crate) const RUN_MIGRATIONS: &[&str] = &[
    // 1: blueprints and runs; a run carries the worker holding it and until when.
    "
    CREATE TABLE coordinator_blueprints (
        name              TEXT PRIMARY KEY,
        type              TEXT NOT NULL CHECK (type IN ('agent', 'deterministic')),
        description       TEXT NOT NULL,
        parameters_schema TEXT,
        position          BIGINT NOT NULL,
        updated_at        BIGINT NOT NULL
    );
    CREATE TABLE coordinator_runs (
        id               TEXT PRIMARY KEY,
        agent_name       TEXT NOT NULL,
        status           TEXT NOT NULL
            CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
        parameters       TEXT NOT NULL,
        result           TEXT,
        error            TEXT,
        created_at       BIGINT NOT NULL,
        started_at       BIGINT,
        finished_at      BIGINT,
        holder           TEXT,
        lease_expires_at BIGINT,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
        attempts         INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX coordinator_runs_open ON coordinator_runs (created_at)
        WHERE status IN ('pending', 'running');
    ",
    // 2: run trees (a run's root, parent and depth; on roots, what the tree used), and
    // an insertion order, as run ids are random and no longer sort by creation.
    "
    ALTER TABLE coordinator_runs
        ADD COLUMN root_run_id   TEXT,
        ADD COLUMN parent_run_id TEXT,
        ADD COLUMN depth         INTEGER NOT NULL DEFAULT 0,
        ADD COLUMN tree_runs     INTEGER NOT NULL DEFAULT 0,
        ADD COLUMN tree_cost     DOUBLE PRECISION NOT NULL DEFAULT 0,
        ADD COLUMN seq           BIGSERIAL;
    ",
    // 3: what a run used of its budgets over every worker that ran it, so that a worker
    // taking it over starts from there (runs stored before read as having used
    // nothing).
    "
    ALTER TABLE coordinator_runs
        ADD COLUMN used_turns         BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN used_input_tokens  BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN used_output_tokens BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN used_cost          DOUBLE PRECISION NOT NULL DEFAULT 0;
    ",
    // 4: approvals that wait: the `waiting_approval` status, and the requests a waiting
    // run stores, each with its decision once made (`delivered_at`: when an execution
    // of the run was handed it).
    "
    ALTER TABLE coordinator_runs DROP CONSTRAINT coordinator_runs_status_check;
    ALTER TABLE coordinator_runs ADD CONSTRAINT coordinator_runs_status_check
        CHECK (status IN ('pending', 'running', 'waiting_approval', 'completed', 'failed',
                          'cancelled'));
    CREATE TABLE coordinator_run_approvals (
        approval_id  TEXT PRIMARY KEY,
        run_id       TEXT NOT NULL,
        call_id      TEXT NOT NULL,
        tool         TEXT NOT NULL,
        arguments    TEXT NOT NULL,
        tier         TEXT NOT NULL,
        scope        TEXT NOT NULL,
        requested_at BIGINT NOT NULL,
        expires_at   BIGINT NOT NULL,
        decision     TEXT,
        decided_at   BIGINT,
        delivered_at BIGINT
    );
    CREATE INDEX coordinator_run_approvals_by_run
        ON coordinator_run_approvals (run_id, requested_at);
    CREATE INDEX coordinator_run_approvals_undecided
        ON coordinator_run_approvals (expires_at) WHERE decision IS NULL;
    ",
    // 5: what a person lists, read in order from an index rather than sorted from a
    // scan of every run: runs newest first (all, of one status, of one agent, each
    // continued by the keyset `(created_at, id)`) and the undecided approvals oldest
    // first. `IF NOT EXISTS`: a schema taken back to an older version keeps them.
    "
    CREATE INDEX IF NOT EXISTS coordinator_runs_by_created
        ON coordinator_runs (created_at, id);
    CREATE INDEX IF NOT EXISTS coordinator_runs_by_status_created
        ON coordinator_runs (status, created_at, id);
    CREATE INDEX IF NOT EXISTS coordinator_runs_by_agent_created
        ON coordinator_runs (agent_name, created_at, id);
    CREATE INDEX IF NOT EXISTS coordinator_run_approvals_undecided_by_request
        ON coordinator_run_approvals (requested_at, approval_id) WHERE decision IS NULL;
    ",
    // 6: why a person must decide each request (the provenance hold naming the
    // untrusted source, the consent rule or the tier); `NULL` for requests stored
    // before (the SQLite store's migration 6). `IF NOT EXISTS`: a schema taken back to
    // an older version keeps the column.
    "
    ALTER TABLE coordinator_run_approvals ADD COLUMN IF NOT EXISTS reason TEXT;
    ",
];

/// Applies what is pending of every component in one transaction under the advisory
/// lock of the current schema, then decides (and sets up) where vectors are searched:
/// pgvector when `use_pgvector` and the server has it (see [`crate::pgvector`]).
pub(crate) async fn migrate_all(
    client: &mut Object,
    location: &str,
    use_pgvector: bool,
) -> Result<VectorSetup, PostgresError> {
    let err = |action: &str, error: tokio_postgres::Error| {
        PostgresError::query(location, action, &driver_message(&error))
    };
    let mut tx = client
        .transaction()
        .await
        .map_err(|e| err("begin the migration", e))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('oxydra-migrations:' || coalesce(current_schema(), '')))",
        &[],
    )
    .await
    .map_err(|e| err("take the migration lock", e))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS oxydra_schema_migrations (
            component  TEXT NOT NULL,
            version    BIGINT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (component, version)
        )",
    )
    .await
    .map_err(|e| err("create the migrations table", e))?;
    for (component, migrations) in [("memory", MEMORY_MIGRATIONS), ("runs", RUN_MIGRATIONS)] {
        let found = version(&tx, location, component, migrations.len() as i64).await?;
        for (index, sql) in migrations.iter().enumerate().skip(found.max(0) as usize) {
            let version = index as i64 + 1;
            tracing::info!(location, component, version, "applying schema migration");
            let action = format!("apply {component} migration {version}");
            tx.batch_execute(sql).await.map_err(|e| err(&action, e))?;
            record(&tx, location, component, version).await?;
        }
    }
    let vectors = crate::pgvector::setup(&mut tx, location, use_pgvector).await?;
    tx.commit()
        .await
        .map_err(|e| err("commit the migrations", e))?;
    Ok(vectors)
}
