//! Connecting and migrating: errors name the server, workers starting together apply
//! each migration once, an older schema is brought up to date, a newer one is refused.

use oxydra_memory::{Memory, MemoryError, SessionMeta};
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresDatabase, PostgresError, PostgresMemory, PostgresOptions};
use oxydra_types::{Message, SessionId};

#[tokio::test]
async fn an_unreachable_server_is_an_error_naming_it() {
    // Port 1 on loopback: nothing listens there.
    let options = PostgresOptions::new("postgres://postgres:pw@127.0.0.1:1/somedb");
    let error = PostgresDatabase::connect(&options).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, PostgresError::Connect { .. }), "{error:?}");
    assert!(text.contains("127.0.0.1:1/somedb"), "{text}");
    assert!(!text.contains("pw"), "{text}");
}

#[tokio::test]
async fn a_malformed_url_is_an_error_before_any_connection() {
    for url in ["postgres://h:port/db", "/tmp/memory.db", ""] {
        let error = PostgresDatabase::connect(&PostgresOptions::new(url))
            .await
            .unwrap_err();
        assert!(
            matches!(error, PostgresError::InvalidUrl { .. }),
            "{url}: {error:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_starting_together_migrate_once() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let connects: Vec<_> = (0..6)
        .map(|_| {
            let options = test.options();
            tokio::spawn(async move { PostgresDatabase::connect(&options).await })
        })
        .collect();
    for connect in connects {
        connect.await.unwrap().unwrap();
    }
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let rows = client
        .query(
            &format!(
                "SELECT component, count(*), max(version) FROM {}.oxydra_schema_migrations GROUP BY component ORDER BY component",
                test.schema()
            ),
            &[],
        )
        .await
        .unwrap();
    // Each version of each component recorded once: as many rows as versions.
    let counts: Vec<(String, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let components: Vec<&str> = counts.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(components, ["memory", "runs"]);
    for (component, count, max) in &counts {
        assert_eq!(count, max, "{component}: {counts:?}");
    }
    assert!(
        counts[0].2 >= 2,
        "memory has its session meta migration: {counts:?}"
    );
}

/// A database whose memory schema predates session meta (version 1) gains it on the
/// next connect: its sessions stay, listed without a model, and take a meta from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_schema_from_before_session_meta_is_migrated() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let session = SessionId::from("ses_old");
    let memory = PostgresMemory::new(test.connect().await, Default::default());
    memory.append(&session, &Message::user("hi")).await.unwrap();
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Back to the schema of version 1, the session kept.
    client
        .batch_execute(&format!(
            "DROP TABLE {schema}.session_meta;
             DROP TABLE {schema}.checkpoints, {schema}.checkpoint_blobs, {schema}.checkpoint_blob_refs;
             DROP TABLE {schema}.tool_intents;
             DELETE FROM {schema}.oxydra_schema_migrations WHERE component = 'memory' AND version >= 2",
            schema = test.schema()
        ))
        .await
        .unwrap();
    let memory = PostgresMemory::new(test.connect().await, Default::default());
    let listed = memory.list_sessions().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].messages, listed[0].model.as_deref()), (1, None));
    assert_eq!(memory.session_meta(&session).await.unwrap(), None);
    let meta = SessionMeta {
        model: "m".into(),
        system_prompt: Some("p".into()),
        agent: None,
        workspace: Some("/w".into()),
        replay_of: Some("ses_original".into()),
    };
    memory.store_session_meta(&session, &meta).await.unwrap();
    assert_eq!(memory.session_meta(&session).await.unwrap(), Some(meta));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_naming_the_database() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let db = test.connect().await;
    let memory = PostgresMemory::new(db, Default::default());
    memory
        .append(&SessionId::from("ses_1"), &Message::user("hi"))
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "INSERT INTO {}.oxydra_schema_migrations (component, version) VALUES ('memory', 99)",
            test.schema()
        ))
        .await
        .unwrap();
    let error = PostgresDatabase::connect(&test.options())
        .await
        .unwrap_err();
    assert!(
        matches!(error, PostgresError::SchemaTooNew { found: 99, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("127.0.0.1:5432"), "{error}");
    let converted = MemoryError::from(error);
    assert!(matches!(converted, MemoryError::SchemaTooNew { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_payload_is_reported_not_skipped() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let memory = PostgresMemory::new(test.connect().await, Default::default());
    let session = SessionId::from("ses_bad");
    memory.append(&session, &Message::user("ok")).await.unwrap();
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "UPDATE {}.conversation_events SET payload = '{{not json'",
            test.schema()
        ))
        .await
        .unwrap();
    let error = memory.messages(&session).await.unwrap_err();
    assert!(matches!(error, MemoryError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("ses_bad"), "{error}");
}

/// A database whose run store predates run usage (runs schema version 2), with a run
/// in it, gains the usage columns on the next connect: the run reads as having used
/// nothing and records usage from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_schema_from_before_run_usage_is_migrated() {
    use oxydra_coordinator::{RunStatus, RunStore, RunUsage};
    use oxydra_postgres::PostgresRunStore;

    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let store = PostgresRunStore::single_process(test.connect().await);
    store
        .insert_run(oxydra_coordinator::conformance::pending("old"))
        .await
        .unwrap();
    store.start_run("old").await.unwrap().unwrap();
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Back to the runs schema of version 2, the run kept.
    client
        .batch_execute(&format!(
            "ALTER TABLE {schema}.coordinator_runs
                 DROP COLUMN used_turns, DROP COLUMN used_input_tokens,
                 DROP COLUMN used_output_tokens, DROP COLUMN used_cost;
             DROP TABLE {schema}.coordinator_run_approvals;
             DELETE FROM {schema}.oxydra_schema_migrations WHERE component = 'runs' AND version >= 3",
            schema = test.schema()
        ))
        .await
        .unwrap();
    let store = PostgresRunStore::single_process(test.connect().await);
    let recorded: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.oxydra_schema_migrations WHERE component = 'runs' AND version = 3",
                test.schema()
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, 1, "the usage migration is recorded once");
    let run = store.get_run("old").await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(run.usage, RunUsage::default());
    let usage = RunUsage {
        turns: 3,
        input_tokens: 30,
        output_tokens: 3,
        cost: 0.75,
    };
    assert!(store.record_usage("old", usage).await.unwrap());
    assert_eq!(store.get_run("old").await.unwrap().unwrap().usage, usage);
}

/// A database whose run store predates approvals that wait (runs schema version 3),
/// with runs in it, gains the `waiting_approval` status and the approvals table on the
/// next connect: every run and what it used is kept, and a running run can then wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_schema_from_before_approvals_is_migrated() {
    use oxydra_coordinator::conformance::{approvals::request, pending};
    use oxydra_coordinator::{RunStatus, RunStore, RunUsage};
    use oxydra_postgres::PostgresRunStore;

    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let store = PostgresRunStore::single_process(test.connect().await);
    let usage = RunUsage {
        turns: 2,
        input_tokens: 20,
        output_tokens: 2,
        cost: 0.5,
    };
    for id in ["done", "busy"] {
        store.insert_run(pending(id)).await.unwrap();
        store.start_run(id).await.unwrap().unwrap();
        assert!(store.record_usage(id, usage).await.unwrap());
    }
    store
        .finish_run(
            "done",
            RunStatus::Completed,
            Some(serde_json::json!({"ok": 1})),
            None,
        )
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Back to the runs schema of version 3, the runs kept.
    client
        .batch_execute(&format!(
            "DROP TABLE {schema}.coordinator_run_approvals;
             ALTER TABLE {schema}.coordinator_runs DROP CONSTRAINT coordinator_runs_status_check;
             ALTER TABLE {schema}.coordinator_runs ADD CONSTRAINT coordinator_runs_status_check
                 CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled'));
             DELETE FROM {schema}.oxydra_schema_migrations WHERE component = 'runs' AND version >= 4",
            schema = test.schema()
        ))
        .await
        .unwrap();
    // At version 3 a run cannot wait.
    assert!(
        client
            .execute(
                &format!(
                    "UPDATE {}.coordinator_runs SET status = 'waiting_approval' WHERE id = 'busy'",
                    test.schema()
                ),
                &[],
            )
            .await
            .is_err()
    );
    let store = PostgresRunStore::single_process(test.connect().await);
    let done = store.get_run("done").await.unwrap().unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.result, Some(serde_json::json!({"ok": 1})));
    assert_eq!(done.usage, usage);
    let busy = store.get_run("busy").await.unwrap().unwrap();
    assert_eq!(busy.status, RunStatus::Running);
    assert_eq!(busy.usage, usage);
    let waiting = request("apr_1", 1, std::time::Duration::from_secs(60));
    assert!(
        store
            .suspend_run("busy", vec![waiting.clone()])
            .await
            .unwrap()
    );
    assert_eq!(
        store.pending_approvals("busy").await.unwrap(),
        vec![waiting]
    );
    assert_eq!(
        store.get_run("busy").await.unwrap().unwrap().usage,
        usage,
        "what it used is kept while it waits"
    );
}

/// A database whose run store predates approval reasons (runs schema version 5), with
/// a run waiting, gains the `reason` column on the next connect: the request kept
/// reads without a reason, and a request stored after keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_schema_from_before_approval_reasons_is_migrated() {
    use oxydra_coordinator::RunStore;
    use oxydra_coordinator::conformance::{approvals::request, pending};
    use oxydra_postgres::PostgresRunStore;

    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let hour = std::time::Duration::from_secs(3600);
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let store = PostgresRunStore::single_process(test.connect().await);
    for id in ["old", "new"] {
        store.insert_run(pending(id)).await.unwrap();
        store.start_run(id).await.unwrap().unwrap();
    }
    let old = request("apr_old", now, hour);
    assert!(store.suspend_run("old", vec![old.clone()]).await.unwrap());
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Back to the runs schema of version 5, the waiting request kept.
    client
        .batch_execute(&format!(
            "ALTER TABLE {schema}.coordinator_run_approvals DROP COLUMN reason;
             DELETE FROM {schema}.oxydra_schema_migrations WHERE component = 'runs' AND version >= 6",
            schema = test.schema()
        ))
        .await
        .unwrap();
    let store = PostgresRunStore::single_process(test.connect().await);
    assert_eq!(store.pending_approvals("old").await.unwrap(), vec![old]);
    let new = oxydra_coordinator::PendingApproval {
        reason: Some("this run read https://x.test/ since your last decision".into()),
        ..request("apr_new", now + 1, hour)
    };
    assert!(store.suspend_run("new", vec![new.clone()]).await.unwrap());
    assert_eq!(store.pending_approvals("new").await.unwrap(), vec![new]);
}
