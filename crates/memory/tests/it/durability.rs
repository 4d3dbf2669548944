//! Bad files, locks, newer schemas, and surviving SIGKILL.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use oxydra_memory::{Memory, MemoryError, SCHEMA_VERSION, SqliteConfig, SqliteMemory, Synchronous};
use oxydra_types::{Message, SessionId};

const CHILD_ENV: &str = "OXYDRA_MEMORY_KILL_TEST_DB";
const KILL_SESSION: &str = "ses_kill";

#[test]
fn garbage_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![0xA5_u8; 8192]).unwrap();
    let error = SqliteMemory::open(&path, SqliteConfig::default()).unwrap_err();
    let text = error.to_string();
    assert!(text.contains(path.to_str().unwrap()), "{text}");
    assert!(matches!(
        error,
        MemoryError::Storage {
            backend: "sqlite",
            ..
        }
    ));
    // The garbage is left alone.
    assert_eq!(std::fs::read(&path).unwrap(), vec![0xA5_u8; 8192]);
}

#[test]
fn missing_directory_and_directory_paths_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let inside_missing = dir.path().join("no/such/dir/memory.db");
    let text = SqliteMemory::open(&inside_missing, SqliteConfig::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains(inside_missing.to_str().unwrap()), "{text}");

    let text = SqliteMemory::open(dir.path(), SqliteConfig::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains(dir.path().to_str().unwrap()), "{text}");
}

/// `open_async` opens off the async threads (a current-thread runtime: a blocking open
/// on its one thread would still work, so the test checks what it gives, and that
/// errors still name the file) and the database is the one `open` sees.
#[tokio::test(flavor = "current_thread")]
async fn open_async_creates_the_database_and_its_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("async.db");
    let memory = SqliteMemory::open_async(&path, SqliteConfig::default())
        .await
        .unwrap();
    assert_eq!(memory.path(), path);
    let session = SessionId::from("ses_async");
    memory
        .append(&session, &Message::user("kept"))
        .await
        .unwrap();
    drop(memory);
    let reopened = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    assert_eq!(reopened.messages(&session).await.unwrap().len(), 1);

    let missing = dir.path().join("no/such/dir/memory.db");
    let text = SqliteMemory::open_async(&missing, SqliteConfig::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(text.contains(missing.to_str().unwrap()), "{text}");
}

#[test]
fn newer_schema_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    drop(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 5)
        .unwrap();
    drop(conn);
    let error = SqliteMemory::open(&path, SqliteConfig::default()).unwrap_err();
    assert!(
        matches!(error, MemoryError::SchemaTooNew { found, .. } if found == SCHEMA_VERSION + 5)
    );
    let text = error.to_string();
    assert!(
        text.contains(path.to_str().unwrap()) && text.contains("newer"),
        "{text}"
    );
}

#[tokio::test]
async fn locked_database_append_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let config = SqliteConfig {
        busy_timeout: Duration::from_millis(100),
        synchronous: Synchronous::Full,
        ..SqliteConfig::default()
    };
    let memory = SqliteMemory::open(&path, config).unwrap();
    let session = SessionId::from("ses_locked");
    assert_eq!(
        memory
            .append(&session, &Message::user("before"))
            .await
            .unwrap(),
        1
    );

    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker
        .execute_batch("BEGIN EXCLUSIVE; INSERT INTO sessions (session_id, created_at, updated_at, last_sequence) VALUES ('x', 0, 0, 0);")
        .unwrap();
    let error = memory
        .append(&session, &Message::user("blocked"))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains(path.to_str().unwrap()), "{text}");
    assert!(
        text.to_lowercase().contains("locked") || text.contains("busy"),
        "{text}"
    );
    blocker.execute_batch("ROLLBACK").unwrap();

    // Nothing was half-written, and the next append gets the next sequence.
    assert_eq!(
        memory
            .append(&session, &Message::user("after"))
            .await
            .unwrap(),
        2
    );
    let texts: Vec<String> = memory
        .messages(&session)
        .await
        .unwrap()
        .iter()
        .map(|m| m.message.text().to_owned())
        .collect();
    assert_eq!(texts, vec!["before", "after"]);
}

#[tokio::test]
async fn corrupt_payload_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    let session = SessionId::from("ses_c");
    memory
        .append(&session, &Message::user("fine"))
        .await
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE conversation_events SET payload = '{not json' WHERE sequence = 1",
        [],
    )
    .unwrap();
    let error = memory.restore(&session).await.unwrap_err();
    assert!(matches!(error, MemoryError::Corrupt { .. }));
    assert!(error.to_string().contains("corrupt.db"), "{error}");
}

/// The writer half of `killed_writer_loses_no_acknowledged_message`: does nothing
/// unless started by that test as a child process.
#[test]
fn kill_safety_child_writer() {
    let Ok(db) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let memory = SqliteMemory::open(&db, SqliteConfig::default()).unwrap();
    let session = SessionId::from(KILL_SESSION);
    let stdout = std::io::stdout();
    rt.block_on(async {
        for i in 0..1_000_000_u64 {
            let sequence = memory
                .append(&session, &Message::user(format!("payload {i}")))
                .await
                .unwrap();
            let mut out = stdout.lock();
            writeln!(out, "ACK {sequence} {i}").unwrap();
            out.flush().unwrap();
        }
    });
}

#[tokio::test]
async fn killed_writer_loses_no_acknowledged_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "durability::kill_safety_child_writer",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked: Vec<(u64, u64)> = Vec::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let record = |line: &str, acked: &mut Vec<(u64, u64)>| {
        if let Some((sequence, index)) = line.strip_prefix("ACK ").and_then(|r| r.split_once(' ')) {
            acked.push((sequence.parse().unwrap(), index.trim_end().parse().unwrap()));
        }
    };
    while acked.len() < 200 {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "child stopped before 200 acks"
        );
        record(&line, &mut acked);
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Acks printed after we stopped reading count too; an unterminated last line does not.
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    let complete = rest.rsplit_once('\n').map_or("", |(lines, _)| lines);
    for line in complete.lines() {
        record(line, &mut acked);
    }

    let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    let stored = memory
        .messages(&SessionId::from(KILL_SESSION))
        .await
        .unwrap();
    assert!(
        stored.len() >= acked.len(),
        "{} stored < {} acked",
        stored.len(),
        acked.len()
    );
    for (position, message) in stored.iter().enumerate() {
        assert_eq!(message.sequence, position as u64 + 1, "gap in sequences");
    }
    for (sequence, index) in &acked {
        let message = &stored[*sequence as usize - 1];
        assert_eq!(message.message.text(), format!("payload {index}"));
    }
}
