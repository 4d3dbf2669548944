//! [`RunHandle`]: the end of a streamed run, awaited beside its event stream.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use crate::error::RuntimeError;

/// The end of a run started with [`RunRequest::stream`](crate::RunRequest::stream) (or
/// a typed request's [`stream`](crate::TypedRunRequest::stream)): awaiting it gives
/// the run's result once it ends, as awaiting the request would have.
///
/// The run goes on when the handle is dropped; [`abort`](Self::abort) stops it (its
/// cancellation token is the way to stop it cleanly, its events ending with `error`).
///
/// # Errors
/// As the request; [`RuntimeError::RunTask`] when the run's task panicked or was
/// aborted.
#[must_use = "the run's result comes from awaiting its handle"]
#[derive(Debug)]
pub struct RunHandle<T> {
    task: JoinHandle<Result<T, RuntimeError>>,
}

impl<T> RunHandle<T> {
    /// The handle of the run on `task`.
    pub(crate) fn new(task: JoinHandle<Result<T, RuntimeError>>) -> Self {
        Self { task }
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the run's task where it is (awaiting the handle then gives
    /// [`RuntimeError::RunTask`]); prefer the request's cancellation token.
    pub fn abort(&self) {
        self.task.abort();
    }
}

impl<T> Future for RunHandle<T> {
    type Output = Result<T, RuntimeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task)
            .poll(cx)
            .map(|joined| match joined {
                Ok(result) => result,
                Err(error) if error.is_panic() => {
                    Err(RuntimeError::RunTask("the run's task panicked".to_owned()))
                }
                Err(_) => Err(RuntimeError::RunTask(
                    "the run's task was aborted".to_owned(),
                )),
            })
    }
}
