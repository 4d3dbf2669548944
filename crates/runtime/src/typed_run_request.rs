//! A run whose final answer is a typed value: [`TypedRunRequest`], from
//! [`RunRequest::output`]. The typed request is built on the untyped one, so this
//! module uses `run_request` and not the other way round.

use std::future::IntoFuture;
use std::marker::PhantomData;

use oxydra_types::RuntimeEvent;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use crate::error::RuntimeError;
use crate::events::RuntimeEventStream;
use crate::run_handle::RunHandle;
use crate::run_outcome::{RunOutcome, TypedOutcome};
use crate::run_request::{RunFuture, RunRequest};
use crate::structured_output::OutputSchema;

impl RunRequest {
    /// The final answer must be a `T`: as [`structured`](Self::structured) with `T`'s
    /// JSON Schema, and the answer must also deserialize into `T`. The typed request
    /// resolves to a [`TypedOutcome`]: the value with the outcome, or the approvals
    /// the run waits for. Set the other options first.
    ///
    /// A run that waited for approval resumes typed too: give the decisions to a
    /// request of the session and call `output::<T>()` on it.
    pub fn output<T>(self) -> TypedRunRequest<T>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        TypedRunRequest {
            request: self,
            answer: PhantomData,
        }
    }
}

/// A [`RunRequest`] whose answer is a `T` (from [`RunRequest::output`]); awaiting it
/// gives a [`TypedOutcome`]: [`RunOutcome::Finished`] with the value and the
/// [`SessionOutcome`](crate::SessionOutcome), or [`RunOutcome::AwaitingApproval`]
/// when a call waits for a person (not an error: resume it with the decisions).
/// [`stream`](Self::stream) runs it with its events as they happen.
///
/// # Errors
/// As [`RunRequest`]; [`RuntimeError::Config`] when `T`'s schema does not compile
/// (before the run starts) or the checked answer does not deserialize.
#[must_use = "a run request does nothing until it is awaited"]
pub struct TypedRunRequest<T> {
    request: RunRequest,
    answer: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for TypedRunRequest<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedRunRequest")
            .field("request", &self.request)
            .field("answer", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T> TypedRunRequest<T>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// Runs the request on a spawned task and returns its events as a stream (as
    /// [`RunRequest::stream`]) and the run's [`RunHandle`], which gives the
    /// [`TypedOutcome`] as awaiting the request would have.
    ///
    /// Must be called within a tokio runtime.
    pub fn stream(self) -> (RuntimeEventStream, RunHandle<TypedOutcome<T>>) {
        self.request
            .stream_with(|request, channel| typed::<T>(request, Some(channel)))
    }
}

impl<T> IntoFuture for TypedRunRequest<T>
where
    T: DeserializeOwned + JsonSchema + 'static,
{
    type Output = Result<TypedOutcome<T>, RuntimeError>;
    type IntoFuture = RunFuture<TypedOutcome<T>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(typed::<T>(self.request, None))
    }
}

/// Runs `request` for a `T` (its events also over `channel` when given).
async fn typed<T>(
    request: RunRequest,
    channel: Option<mpsc::UnboundedSender<RuntimeEvent>>,
) -> Result<TypedOutcome<T>, RuntimeError>
where
    T: DeserializeOwned + JsonSchema + 'static,
{
    let output = OutputSchema::of::<T>()?;
    let ended = Box::pin(request.structured(output).execute(channel)).await;
    match RunOutcome::from_result(ended)? {
        RunOutcome::Finished(outcome) => {
            let value = outcome.output.clone().unwrap_or_default();
            let value = T::deserialize(value).map_err(|error| {
                RuntimeError::Config(format!("the checked answer does not deserialize: {error}"))
            })?;
            Ok(RunOutcome::Finished((value, outcome)))
        }
        RunOutcome::AwaitingApproval(pending) => Ok(RunOutcome::AwaitingApproval(pending)),
    }
}
