//! Wake-ups for idle workers: one dedicated connection per store `LISTEN`s on the
//! `oxydra_runs` channel, which every new run (and every claim given up) notifies.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::database::PostgresDatabase;

/// The channel new work is announced on.
pub(super) const CHANNEL: &str = "oxydra_runs";

/// How long the listener waits before connecting again after losing its connection.
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// Started on first use; its task stops when the last clone of the store is dropped.
#[derive(Default)]
pub(super) struct Listener {
    state: OnceLock<(Arc<Notify>, DropGuard)>,
}

impl Listener {
    /// The notifier woken on each notification, starting the listening task first.
    pub(super) fn notified(&self, db: &PostgresDatabase) -> Arc<Notify> {
        let (notify, _) = self.state.get_or_init(|| {
            let notify = Arc::new(Notify::new());
            let stop = CancellationToken::new();
            tokio::spawn(listen(db.clone(), Arc::clone(&notify), stop.clone()));
            (notify, stop.drop_guard())
        });
        Arc::clone(notify)
    }
}

/// Keeps a `LISTEN` connection open until `stop`, waking `notify`'s waiters on every
/// notification (and once after each reconnection, in case one was missed).
async fn listen(db: PostgresDatabase, notify: Arc<Notify>, stop: CancellationToken) {
    loop {
        let connected = tokio::select! {
            () = stop.cancelled() => return,
            connected = db.config().connect(NoTls) => connected,
        };
        match connected {
            Ok((client, mut connection)) => {
                let stopped = stop.clone();
                let waker = Arc::clone(&notify);
                let driver = tokio::spawn(async move {
                    loop {
                        let message = tokio::select! {
                            () = stopped.cancelled() => return,
                            message = std::future::poll_fn(|cx| connection.poll_message(cx)) => message,
                        };
                        match message {
                            Some(Ok(AsyncMessage::Notification(_))) => waker.notify_waiters(),
                            Some(Ok(_)) => {}
                            Some(Err(error)) => {
                                tracing::warn!(%error, "run notifications connection failed");
                                return;
                            }
                            None => return,
                        }
                    }
                });
                if let Err(error) = client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    tracing::warn!(%error, "could not listen for run notifications");
                }
                notify.notify_waiters();
                let _ = driver.await;
            }
            Err(error) => tracing::warn!(%error, "could not open the run notifications connection"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RECONNECT_DELAY) => {}
        }
    }
}
