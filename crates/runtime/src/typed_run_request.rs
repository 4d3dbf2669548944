//! A run whose final answer is a typed value: [`TypedRunRequest`], from
//! [`RunRequest::output`]. The typed request is built on the untyped one, so this
//! module uses `run_request` and not the other way round.

use std::future::IntoFuture;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::RuntimeError;
use crate::run_request::{RunFuture, RunRequest};
use crate::session_outcome::SessionOutcome;
use crate::structured_output::OutputSchema;

impl RunRequest {
    /// The final answer must be a `T`: as [`structured`](Self::structured) with `T`'s
    /// JSON Schema, and the answer must also deserialize into `T`. The typed request
    /// resolves to the value and the outcome; set the other options first.
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
/// gives the value and the [`SessionOutcome`].
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

impl<T> IntoFuture for TypedRunRequest<T>
where
    T: DeserializeOwned + JsonSchema + 'static,
{
    type Output = Result<(T, SessionOutcome), RuntimeError>;
    type IntoFuture = RunFuture<(T, SessionOutcome)>;

    fn into_future(self) -> Self::IntoFuture {
        let request = self.request;
        Box::pin(async move {
            let output = OutputSchema::of::<T>()?;
            let outcome = request.structured(output).execute(None).await?;
            let value = outcome.output.clone().unwrap_or_default();
            let value = T::deserialize(value).map_err(|error| {
                RuntimeError::Config(format!("the checked answer does not deserialize: {error}"))
            })?;
            Ok((value, outcome))
        })
    }
}
