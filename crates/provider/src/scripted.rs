//! [`ScriptedProvider`]: a provider that replays a script, for tests (feature `testing`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use oxydra_types::{CallId, FinishReason, Message, StreamItem, ToolCall, Usage};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::accumulator::{StreamAccumulator, response_to_stream_items};
use crate::error::ProviderError;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};

/// One scripted provider call. Each `complete` or `stream` call takes the next turn.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a test script: its few turns are built once and moved, never copied in bulk"
)]
pub enum ScriptedTurn {
    /// A whole response: `complete` returns it, `stream` yields it as items
    /// (text, one tool-call delta per call, usage, finish).
    Response(ProviderResponse),
    /// These stream items: `stream` yields them one by one, `complete` returns their
    /// assembly (or the assembly's error).
    Stream(Vec<StreamItem>),
    /// `stream` yields `items`, then `error`; `complete` returns `error`.
    StreamThenError {
        /// Items yielded before the error.
        items: Vec<StreamItem>,
        /// The error that ends the stream.
        error: ProviderError,
    },
    /// The call fails with this error (`stream` fails before returning a stream).
    Error(ProviderError),
    /// `stream` yields `items` and then hangs until the call's cancellation token
    /// fires, ending with [`ProviderError::Cancelled`]; `complete` hangs likewise.
    HangAfter(Vec<StreamItem>),
    /// Waits for `gate` to be notified (or for cancellation), then serves `then`.
    /// For `stream`, the stream is returned at once and its first item waits.
    Gated {
        /// Released with `notify_one` (a permit stored before the wait counts).
        gate: Arc<Notify>,
        /// The turn served once released.
        then: Box<ScriptedTurn>,
    },
    /// Waits `delay` (or for cancellation), then serves `then`.
    Delayed {
        /// How long to wait.
        delay: Duration,
        /// The turn served afterwards.
        then: Box<ScriptedTurn>,
    },
}

impl ScriptedTurn {
    /// A final answer: text, `Stop`, a small usage.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Response(ProviderResponse {
            fallbacks: Vec::new(),
            message: Message::assistant(text),
            finish_reason: FinishReason::Stop,
            usage: Usage::new(10, 5, 0),
            reasoning: None,
        })
    }

    /// An answer that calls these tools: `ToolCalls`, a small usage.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self::Response(ProviderResponse {
            fallbacks: Vec::new(),
            message: Message::assistant_with_tool_calls(None, calls),
            finish_reason: FinishReason::ToolCalls,
            usage: Usage::new(10, 5, 0),
            reasoning: None,
        })
    }

    /// An answer calling one tool: id `id`, tool `name`, raw `arguments`.
    pub fn tool_call(id: &str, name: &str, arguments: &str) -> Self {
        Self::tool_calls(vec![ToolCall::new(CallId::from(id), name, arguments)])
    }

    /// This turn, served only after `gate` is notified.
    pub fn gated(gate: Arc<Notify>, then: ScriptedTurn) -> Self {
        Self::Gated {
            gate,
            then: Box::new(then),
        }
    }

    /// This turn, served after `delay`.
    pub fn delayed(delay: Duration, then: ScriptedTurn) -> Self {
        Self::Delayed {
            delay,
            then: Box::new(then),
        }
    }

    /// The same response with a different usage (for `Response` turns; other turns
    /// are returned unchanged).
    pub fn with_usage(self, usage: Usage) -> Self {
        match self {
            Self::Response(mut response) => {
                response.usage = usage;
                Self::Response(response)
            }
            other => other,
        }
    }
}

/// A provider that replays a script of [`ScriptedTurn`]s and records every request.
///
/// Running out of script is a [`ProviderError::InvalidRequest`], not a panic.
///
/// ```
/// use oxydra_provider::{Provider, ProviderRequest, ScriptedProvider, ScriptedTurn};
/// use oxydra_types::Message;
/// use tokio_util::sync::CancellationToken;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let provider = ScriptedProvider::new(vec![ScriptedTurn::text("hi")]);
/// let request = ProviderRequest::new("test-model", vec![Message::user("hello")]);
/// let response = provider.complete(&request, &CancellationToken::new()).await.unwrap();
/// assert_eq!(response.message.text(), "hi");
/// assert_eq!(provider.requests().len(), 1);
/// assert!(provider.complete(&request, &CancellationToken::new()).await.is_err());
/// # });
/// ```
#[derive(Debug)]
pub struct ScriptedProvider {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    requests: Mutex<Vec<ProviderRequest>>,
    capabilities: ProviderCapabilities,
}

impl ScriptedProvider {
    /// A provider that serves `turns` in order.
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        Self {
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
            capabilities: ProviderCapabilities {
                streaming: true,
                tool_calling: true,
                parallel_tool_calls: true,
                context_window: 128_000,
                max_output_tokens: 4_096,
            },
        }
    }

    /// The same provider reporting `capabilities` (e.g. a small context window).
    pub fn with_capabilities(mut self, capabilities: ProviderCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Appends a turn to the script.
    pub fn push_turn(&self, turn: ScriptedTurn) {
        if let Ok(mut turns) = self.turns.lock() {
            turns.push_back(turn);
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// How many turns are left.
    pub fn remaining(&self) -> usize {
        self.turns.lock().map(|t| t.len()).unwrap_or(0)
    }

    fn next_turn(&self, request: &ProviderRequest) -> Result<ScriptedTurn, ProviderError> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone());
        }
        let turn = self
            .turns
            .lock()
            .ok()
            .and_then(|mut turns| turns.pop_front());
        turn.ok_or_else(|| ProviderError::InvalidRequest {
            message: format!(
                "ScriptedProvider ran out of script at request {}",
                self.requests.lock().map(|r| r.len()).unwrap_or(0)
            ),
        })
    }
}

/// Serves one turn as a whole response.
async fn complete_turn(
    turn: ScriptedTurn,
    cancel: CancellationToken,
) -> Result<ProviderResponse, ProviderError> {
    let mut turn = turn;
    loop {
        turn = match turn {
            ScriptedTurn::Response(response) => return Ok(response),
            ScriptedTurn::Stream(items) => {
                let mut acc = StreamAccumulator::new();
                items.iter().for_each(|item| acc.push(item));
                return acc.finish();
            }
            ScriptedTurn::StreamThenError { error, .. } | ScriptedTurn::Error(error) => {
                return Err(error);
            }
            ScriptedTurn::HangAfter(_) => {
                cancel.cancelled().await;
                return Err(ProviderError::Cancelled);
            }
            ScriptedTurn::Gated { gate, then } => {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                    () = gate.notified() => *then,
                }
            }
            ScriptedTurn::Delayed { delay, then } => {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                    () = tokio::time::sleep(delay) => *then,
                }
            }
        };
    }
}

/// Serves one turn as a stream (after any gate or delay has passed).
fn stream_turn(turn: ScriptedTurn, cancel: CancellationToken) -> ProviderStream {
    match turn {
        ScriptedTurn::Response(response) => Box::pin(futures::stream::iter(
            response_to_stream_items(&response).into_iter().map(Ok),
        )),
        ScriptedTurn::Stream(items) => Box::pin(futures::stream::iter(items.into_iter().map(Ok))),
        ScriptedTurn::StreamThenError { items, error } => Box::pin(
            futures::stream::iter(items.into_iter().map(Ok))
                .chain(futures::stream::once(async move { Err(error) })),
        ),
        ScriptedTurn::Error(error) => Box::pin(futures::stream::once(async move { Err(error) })),
        ScriptedTurn::HangAfter(items) => Box::pin(
            futures::stream::iter(items.into_iter().map(Ok)).chain(futures::stream::once(
                async move {
                    cancel.cancelled().await;
                    Err(ProviderError::Cancelled)
                },
            )),
        ),
        waiting @ (ScriptedTurn::Gated { .. } | ScriptedTurn::Delayed { .. }) => {
            let opened = async move {
                let (release, then) = match waiting {
                    ScriptedTurn::Gated { gate, then } => (
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => false,
                            () = gate.notified() => true,
                        },
                        then,
                    ),
                    ScriptedTurn::Delayed { delay, then } => (
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => false,
                            () = tokio::time::sleep(delay) => true,
                        },
                        then,
                    ),
                    other => (true, Box::new(other)),
                };
                if release {
                    stream_turn(*then, cancel)
                } else {
                    Box::pin(futures::stream::once(async {
                        Err(ProviderError::Cancelled)
                    })) as ProviderStream
                }
            };
            Box::pin(futures::stream::once(opened).flatten())
        }
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn capabilities(&self, _model: &str) -> ProviderCapabilities {
        self.capabilities
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let turn = self.next_turn(request)?;
        complete_turn(turn, cancel.clone()).await
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        match self.next_turn(request)? {
            ScriptedTurn::Error(error) => Err(error),
            turn => Ok(stream_turn(turn, cancel.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    fn request() -> ProviderRequest {
        ProviderRequest::new("m", vec![Message::user("hi")])
    }

    #[tokio::test]
    async fn replays_turns_and_records_requests() {
        let provider = ScriptedProvider::new(vec![
            ScriptedTurn::tool_call("c1", "file_read", "{\"path\":\"a\"}"),
            ScriptedTurn::text("done"),
        ]);
        let cancel = CancellationToken::new();
        let items: Vec<StreamItem> = provider
            .stream(&request(), &cancel)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let mut acc = StreamAccumulator::new();
        items.iter().for_each(|i| acc.push(i));
        let first = acc.finish().unwrap();
        assert_eq!(first.message.tool_calls[0].name, "file_read");
        let second = provider.complete(&request(), &cancel).await.unwrap();
        assert_eq!(second.message.text(), "done");
        assert_eq!(provider.requests().len(), 2);
        let err = provider.complete(&request(), &cancel).await.unwrap_err();
        assert!(err.to_string().contains("ran out of script"));
        assert_eq!(provider.requests().len(), 3);
    }

    #[tokio::test]
    async fn hang_ends_with_cancelled_when_cancelled() {
        let provider =
            ScriptedProvider::new(vec![ScriptedTurn::HangAfter(vec![StreamItem::Text(
                "partial".into(),
            )])]);
        let cancel = CancellationToken::new();
        let mut stream = provider.stream(&request(), &cancel).await.unwrap();
        assert_eq!(
            stream.next().await.unwrap().unwrap(),
            StreamItem::Text("partial".into())
        );
        cancel.cancel();
        assert!(matches!(
            stream.next().await,
            Some(Err(ProviderError::Cancelled))
        ));
    }

    #[tokio::test]
    async fn gate_holds_the_turn_until_notified() {
        let gate = Arc::new(Notify::new());
        let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::gated(
            gate.clone(),
            ScriptedTurn::text("released"),
        )]));
        let cancel = CancellationToken::new();
        let task = {
            let provider = provider.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move { provider.complete(&request(), &cancel).await })
        };
        tokio::task::yield_now().await;
        assert!(!task.is_finished());
        gate.notify_one();
        assert_eq!(task.await.unwrap().unwrap().message.text(), "released");

        let provider = ScriptedProvider::new(vec![ScriptedTurn::gated(
            Arc::new(Notify::new()),
            ScriptedTurn::text("never"),
        )]);
        let mut stream = provider.stream(&request(), &cancel).await.unwrap();
        cancel.cancel();
        assert!(matches!(
            stream.next().await,
            Some(Err(ProviderError::Cancelled))
        ));
    }
}
