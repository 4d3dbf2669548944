#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Connecting and migrating: errors name the server, workers starting together apply
//! each migration once, a newer schema is refused.

use oxydra_memory::{Memory, MemoryError};
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
                "SELECT component, count(*) FROM {}.oxydra_schema_migrations GROUP BY component ORDER BY component",
                test.schema()
            ),
            &[],
        )
        .await
        .unwrap();
    let counts: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(counts, [("memory".to_owned(), 1), ("runs".to_owned(), 1)]);
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
