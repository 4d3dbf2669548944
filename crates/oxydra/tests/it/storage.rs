//! The storage table (`oxydra::storage`): a path opens SQLite, a URL the backend of its
//! scheme; each row's stores work, and failures say what failed without a password.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use oxydra::storage::{self, BACKENDS, Database, StorageError};
use oxydra::types::{Message, SessionId};
use oxydra_postgres::testing::TestDatabase;

fn parse(raw: &str) -> Database {
    Database::parse(Path::new(raw), Path::new("")).unwrap()
}

#[test]
fn every_row_has_schemes_of_its_own_that_select_it() {
    let mut seen = Vec::new();
    for backend in BACKENDS {
        assert!(!backend.schemes.is_empty(), "{}", backend.name);
        for scheme in backend.schemes {
            assert_eq!(*scheme, scheme.to_ascii_lowercase(), "{scheme}");
            assert!(!seen.contains(scheme), "{scheme} is in two rows");
            seen.push(*scheme);
            let found = storage::backend_of(&format!("{}://h/db", scheme.to_uppercase()));
            assert_eq!(found.map(|row| row.name), Some(backend.name));
        }
        assert!(storage::accepted().contains(&format!("`{}://`", backend.schemes[0])));
    }
    assert!(seen.contains(&"postgres") && seen.contains(&"postgresql"));
}

#[tokio::test]
async fn a_sqlite_file_is_created_owner_only_and_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nested/data/o.db");
    let db = parse(file.to_str().unwrap());
    let session = SessionId::from("ses_storage_sqlite");
    let memory = storage::open_memory(&db).await.unwrap();
    memory
        .append(&session, &Message::user("kept"))
        .await
        .unwrap();
    drop(memory);
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("nested/data")), 0o700);
    assert_eq!(mode(&file), 0o600);
    let again = storage::open_memory(&db).await.unwrap();
    assert_eq!(again.messages(&session).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_service_on_sqlite_keeps_runs_in_the_same_file_and_no_shared_queue() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("serve.db");
    let stores = storage::open_service(&parse(file.to_str().unwrap()))
        .await
        .unwrap();
    assert!(stores.runs.shared_queue().is_none());
    assert!(stores.runs.list_blueprints().await.unwrap().is_empty());
    stores
        .memory
        .append(&SessionId::from("ses_serve"), &Message::user("hi"))
        .await
        .unwrap();
    assert!(file.exists());
}

#[tokio::test]
async fn a_database_dir_that_cannot_be_made_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a_file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let db = parse(blocker.join("sub/o.db").to_str().unwrap());
    let Err(error) = storage::open_memory(&db).await else {
        panic!("opened a database below a file");
    };
    let StorageError::CreateDir { dir: named, .. } = &error else {
        panic!("not a directory error: {error:?}");
    };
    assert_eq!(named, &blocker.join("sub"));
    assert!(error.to_string().contains("a_file/sub"), "{error}");
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error_without_the_password() {
    let db = parse("postgres://bob:s3cret@127.0.0.1:1/oxydra");
    let Err(error) = storage::open_memory(&db).await else {
        panic!("connected to port 1");
    };
    assert!(
        matches!(
            error,
            StorageError::Connect {
                backend: "PostgreSQL",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(!error.to_string().contains("s3cret"), "{error}");
    assert!(!format!("{error:?}").contains("s3cret"), "{error:?}");
}

#[tokio::test]
async fn a_postgres_url_opens_memory_and_a_shared_run_store_on_one_database() {
    let Some(database) = TestDatabase::create().await else {
        return;
    };
    let db = parse(&database.url_with_schema());
    let Database::Url(url) = &db else {
        panic!("not a URL: {db:?}");
    };
    assert_eq!(url.backend().name, "PostgreSQL");
    let session = SessionId::from("ses_storage_postgres");
    let stores = storage::open_service(&db).await.unwrap();
    assert!(stores.runs.shared_queue().is_some());
    stores
        .memory
        .append(&session, &Message::user("shared"))
        .await
        .unwrap();
    let memory = storage::open_memory(&db).await.unwrap();
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].message.content.as_deref(), Some("shared"));
}
