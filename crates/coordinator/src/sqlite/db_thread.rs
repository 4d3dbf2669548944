//! The thread that owns the coordinator's SQLite connection.
//!
//! Every store operation is a job sent to this one thread, so no SQLite work ever
//! runs on an async worker. Jobs that queue up while the thread is busy run together
//! in one transaction (group commit): under load, many runs are stored with one
//! commit. Each caller learns its result only once its transaction has committed.

use std::sync::mpsc;

use rusqlite::Connection;

use crate::error::CoordinatorError;

/// Most jobs committed together.
const MAX_BATCH: usize = 256;

type Completion = Box<dyn FnOnce(bool) + Send>;
type Job = Box<dyn FnOnce(&mut Connection) -> Completion + Send>;

/// A handle on the database thread; cheap to clone. The thread ends when the last
/// handle is dropped.
#[derive(Clone)]
pub(crate) struct DbThread {
    sender: mpsc::Sender<Job>,
}

impl DbThread {
    /// Moves `connection` to a new thread.
    pub(crate) fn spawn(connection: Connection) -> Result<Self, CoordinatorError> {
        let (sender, receiver) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("oxydra-coordinator-db".into())
            .spawn(move || serve(connection, &receiver))
            .map_err(|source| CoordinatorError::Io {
                action: "starting the coordinator database thread",
                source,
            })?;
        Ok(Self { sender })
    }

    /// Runs `work` on the database thread and waits for its (committed) result.
    pub(crate) async fn call<R, F>(&self, work: F) -> Result<R, CoordinatorError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, CoordinatorError> + Send + 'static,
    {
        let (reply, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let outcome = work(connection);
            Box::new(move |committed| {
                let _ = reply.send(if committed {
                    outcome
                } else {
                    Err(CoordinatorError::StorageTask(
                        "the transaction holding this change could not be committed".into(),
                    ))
                });
            })
        });
        self.sender
            .send(job)
            .map_err(|_| CoordinatorError::StorageTask("the database thread has stopped".into()))?;
        result.await.map_err(|_| {
            CoordinatorError::StorageTask("the database thread dropped the request".into())
        })?
    }
}

fn serve(mut connection: Connection, receiver: &mpsc::Receiver<Job>) {
    while let Ok(first) = receiver.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let grouped = jobs.len() > 1 && connection.execute_batch("BEGIN IMMEDIATE").is_ok();
        let completions: Vec<Completion> =
            jobs.into_iter().map(|job| job(&mut connection)).collect();
        let committed = !grouped
            || match connection.execute_batch("COMMIT") {
                Ok(()) => true,
                Err(error) => {
                    tracing::error!(%error, jobs = completions.len(), "group commit failed");
                    let _ = connection.execute_batch("ROLLBACK");
                    false
                }
            };
        for completion in completions {
            completion(committed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_jobs_all_commit() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE t (n INTEGER NOT NULL)")
            .unwrap();
        let db = DbThread::spawn(connection).unwrap();
        let writes: Vec<_> = (0..200)
            .map(|n| {
                let db = db.clone();
                tokio::spawn(async move {
                    db.call(move |c| {
                        c.execute("INSERT INTO t (n) VALUES (?1)", [n])
                            .map_err(CoordinatorError::storage("insert"))
                    })
                    .await
                })
            })
            .collect();
        for write in writes {
            assert_eq!(write.await.unwrap().unwrap(), 1);
        }
        let count: i64 = db
            .call(|c| {
                c.query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0))
                    .map_err(CoordinatorError::storage("count"))
            })
            .await
            .unwrap();
        assert_eq!(count, 200);
        // A failing job reports its own error and does not spoil the others.
        let failed = db
            .call(|c| {
                c.execute("INSERT INTO t (n) VALUES (NULL)", [])
                    .map_err(CoordinatorError::storage("insert"))
            })
            .await;
        assert!(failed.is_err());
    }
}
