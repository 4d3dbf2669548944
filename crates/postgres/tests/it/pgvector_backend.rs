//! Which vector backend a database gets: pgvector where the server has it (the
//! extension created once even when workers start together), the in-process fallback
//! where it has not or this login may not create it, and the move of stored vectors
//! to pgvector (or, when a stored vector cannot be moved, no move at all).

use crate::common;

use common::{connect, dense_memory, embedding_type, migrations, raw};
use oxydra_memory::{MemoryRetrieval, RetrievalConfig, SearchScope};
use oxydra_postgres::testing::{self, ScratchDatabase, TestDatabase};
use oxydra_postgres::{PostgresDatabase, PostgresOptions, VectorBackend};

/// Vectors alone decide.
fn vectors_only() -> RetrievalConfig {
    RetrievalConfig {
        vector_weight: 1.0,
        text_weight: 0.0,
        ..RetrievalConfig::default()
    }
}

/// A scratch database on the pgvector server, or `None` having said why.
async fn scratch(with_owner: bool) -> Option<ScratchDatabase> {
    let Some(url) = testing::pgvector_url() else {
        testing::skip(&format!(
            "no PostgreSQL test server with pgvector: set {}",
            testing::PGVECTOR_URL_VAR
        ));
        return None;
    };
    let made = if with_owner {
        ScratchDatabase::create_with_owner(&url).await
    } else {
        ScratchDatabase::create(&url).await
    };
    match made {
        Ok(database) => Some(database),
        Err(reason) => {
            testing::skip(&format!("cannot create a database at {url}: {reason}"));
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_is_pgvector_where_the_server_has_it_and_in_process_elsewhere() {
    if let Some(test) = TestDatabase::create_pgvector().await {
        let db = test.connect().await;
        assert_eq!(db.vector_backend(), VectorBackend::PgVector);
        assert_eq!(db.pgvector_unused_reason(), None);
        let client = raw(test.url()).await;
        assert_eq!(embedding_type(&client, test.schema()).await, "vector");
        assert_eq!(
            migrations(&client, test.schema(), "memory_pgvector").await,
            1
        );
        assert!(format!("{db:?}").contains("PgVector"), "{db:?}");
        // Kept inline and uncompressed (`MAIN`), for the scan.
        let storage: String = client
            .query_one(
                &format!(
                    "SELECT attstorage::TEXT FROM pg_attribute
                     WHERE attrelid = '{}.chunks'::regclass AND attname = 'embedding'",
                    test.schema()
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(storage, "m");
    }
    // The PostgreSQL 15 server (Debian 12's has no pgvector package).
    if let Some(test) = TestDatabase::create().await {
        let client = raw(test.url()).await;
        let has_pgvector: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        let db = test.connect().await;
        if has_pgvector {
            eprintln!("{} has pgvector: the fallback is covered below", test.url());
            assert_eq!(db.vector_backend(), VectorBackend::PgVector);
        } else {
            assert_eq!(db.vector_backend(), VectorBackend::InProcess);
            let reason = db.pgvector_unused_reason().unwrap();
            assert!(reason.contains("pg_available_extensions"), "{reason}");
            assert_eq!(embedding_type(&client, test.schema()).await, "bytea");
            assert_eq!(
                migrations(&client, test.schema(), "memory_pgvector").await,
                0
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_that_may_not_create_the_extension_falls_back_and_still_ranks() {
    let Some(scratch) = scratch(true).await else {
        return;
    };
    let db = PostgresDatabase::connect(&PostgresOptions::new(scratch.owner_url()))
        .await
        .unwrap();
    assert_eq!(db.vector_backend(), VectorBackend::InProcess);
    let reason = db.pgvector_unused_reason().unwrap();
    assert!(
        reason.contains("could not be created") && reason.contains("permission denied"),
        "{reason}"
    );
    // The extension was not half made, and the fallback works.
    let client = raw(&scratch.url()).await;
    let installed: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(installed, 0);
    let memory = dense_memory(db, vectors_only());
    let ids = memory
        .store_chunks(None, vec!["alpha".into(), "beta".into(), "gamma".into()])
        .await
        .unwrap();
    let hits = memory
        .search("beta", &SearchScope::Global, 1)
        .await
        .unwrap();
    assert_eq!(hits[0].chunk_id, ids[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_starting_together_on_a_fresh_database_create_the_extension_once() {
    let Some(scratch) = scratch(false).await else {
        return;
    };
    let admin = raw(&scratch.url()).await;
    let tenants: Vec<String> = (0..6).map(|n| format!("tenant_{n}")).collect();
    for tenant in &tenants {
        admin
            .batch_execute(&format!("CREATE SCHEMA {tenant}"))
            .await
            .unwrap();
    }
    // Twelve workers, two per schema, racing to create the extension and migrate.
    let connects: Vec<_> = (0..12)
        .map(|n| {
            let options = PostgresOptions {
                schema: Some(tenants[n % tenants.len()].clone()),
                ..PostgresOptions::new(scratch.url())
            };
            tokio::spawn(async move { PostgresDatabase::connect(&options).await })
        })
        .collect();
    for connect in connects {
        let db = connect.await.unwrap().unwrap();
        assert_eq!(
            db.vector_backend(),
            VectorBackend::PgVector,
            "{:?}",
            db.pgvector_unused_reason()
        );
    }
    let schema: String = admin
        .query_one(
            "SELECT n.nspname::TEXT FROM pg_extension e
             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(schema, "public");
    for tenant in &tenants {
        assert_eq!(migrations(&admin, tenant, "memory_pgvector").await, 1);
        // The memory migrations, each applied once and none left out: as many rows as
        // the highest version (at least the six of this writing: the schema, session
        // meta, the session's workspace, checkpoints, the session a replay replays, the
        // intents of side-effecting calls).
        let (count, highest): (i64, i32) = {
            let row = admin
                .query_one(
                    &format!(
                        "SELECT count(*), max(version)::INT FROM {tenant}.oxydra_schema_migrations \
                         WHERE component = 'memory'"
                    ),
                    &[],
                )
                .await
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert_eq!(count, i64::from(highest), "{tenant}");
        assert!(count >= 6, "{tenant}: {count}");
        assert_eq!(embedding_type(&admin, tenant).await, "vector");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_stored_in_process_move_to_pgvector_keeping_the_ranking() {
    let Some(test) = TestDatabase::create_pgvector().await else {
        return;
    };
    let before = connect(&test.options(), false).await;
    assert_eq!(before.vector_backend(), VectorBackend::InProcess);
    assert_eq!(
        before.pgvector_unused_reason(),
        Some("pgvector is turned off in the options")
    );
    let memory = dense_memory(before, vectors_only());
    let texts: Vec<String> = (0..1_500).map(|n| format!("note number {n}")).collect();
    let ids = memory.store_chunks(None, texts).await.unwrap();
    let session = oxydra_types::SessionId::from("ses_moved");
    memory
        .store_chunks(Some(&session), vec!["session note".into()])
        .await
        .unwrap();
    let queries = ["note number 7", "something else", "session note"];
    let mut expected = Vec::new();
    for query in queries {
        expected.push(memory.search(query, &SearchScope::Global, 8).await.unwrap());
    }
    assert_eq!(expected[0][0].chunk_id, ids[7]);

    // Reconnecting with pgvector moves the vectors (more than one batch of them).
    let after = connect(&test.options(), true).await;
    assert_eq!(after.vector_backend(), VectorBackend::PgVector);
    let client = raw(test.url()).await;
    assert_eq!(embedding_type(&client, test.schema()).await, "vector");
    let memory = dense_memory(after, vectors_only());
    for (query, expected) in queries.iter().zip(&expected) {
        let found = memory.search(query, &SearchScope::Global, 8).await.unwrap();
        let ids = |hits: &[oxydra_memory::RetrievedChunk]| {
            hits.iter().map(|h| h.chunk_id).collect::<Vec<_>>()
        };
        assert_eq!(ids(&found), ids(expected), "{query}");
        for (a, b) in found.iter().zip(expected) {
            assert!((a.score - b.score).abs() < 1e-4, "{query}: {a:?} vs {b:?}");
        }
    }
    let scoped = memory
        .search("session note", &SearchScope::Session(session.clone()), 8)
        .await
        .unwrap();
    assert_eq!(scoped.len(), 1);
    assert_eq!(scoped[0].session_id.as_ref(), Some(&session));

    // A schema on pgvector stays on it, even with pgvector turned off, and is moved
    // once.
    let again = connect(&test.options(), false).await;
    assert_eq!(again.vector_backend(), VectorBackend::PgVector);
    assert_eq!(
        migrations(&client, test.schema(), "memory_pgvector").await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_vector_that_cannot_be_moved_leaves_the_schema_in_process() {
    let Some(test) = TestDatabase::create_pgvector().await else {
        return;
    };
    let memory = dense_memory(connect(&test.options(), false).await, vectors_only());
    let ids = memory
        .store_chunks(None, vec!["fine".into(), "broken".into()])
        .await
        .unwrap();
    let client = raw(test.url()).await;
    client
        .execute(
            &format!(
                "UPDATE {}.chunks SET embedding = '\\x01020304'::BYTEA WHERE id = $1",
                test.schema()
            ),
            &[&ids[1]],
        )
        .await
        .unwrap();
    let db = connect(&test.options(), true).await;
    assert_eq!(db.vector_backend(), VectorBackend::InProcess);
    let reason = db.pgvector_unused_reason().unwrap();
    assert!(
        reason.contains(&format!("chunk {}", ids[1])) && reason.contains("4 bytes for 32"),
        "{reason}"
    );
    // Rolled back whole: the column, the rows and the version are as they were.
    assert_eq!(embedding_type(&client, test.schema()).await, "bytea");
    assert_eq!(
        migrations(&client, test.schema(), "memory_pgvector").await,
        0
    );
    let untouched: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.chunks WHERE length(embedding) = 128",
                test.schema()
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(untouched, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_whose_extension_was_dropped_is_an_error_naming_it() {
    let Some(scratch) = scratch(false).await else {
        return;
    };
    let db = PostgresDatabase::connect(&PostgresOptions::new(scratch.url()))
        .await
        .unwrap();
    assert_eq!(db.vector_backend(), VectorBackend::PgVector);
    drop(db);
    let admin = raw(&scratch.url()).await;
    admin
        .batch_execute("DROP EXTENSION vector CASCADE")
        .await
        .unwrap();
    let error = PostgresDatabase::connect(&PostgresOptions::new(scratch.url()))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("no longer installed") && text.contains(scratch.name()),
        "{text}"
    );
}
