//! [`LocalProvider`]: the embedded model behind the [`Provider`] trait.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use oxydra_provider::{
    Provider, ProviderCapabilities, ProviderError, ProviderRequest, ProviderResponse,
    ProviderStream, StreamAccumulator, ToolChoice,
};
use oxydra_types::{StreamItem, ToolSchema, Usage};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::config::LocalConfig;
use crate::engine::{Event, Job};
use crate::error::LocalError;
use crate::grammar::tool_grammar;
use crate::model::{self, LoadedModel};
use crate::output::OutputSplitter;

/// Below this many parameters a model counts as small
/// ([`LocalProvider::is_small`]): SmolLM2-135M and -360M, Qwen2.5-0.5B.
pub const SMALL_MODEL_PARAMETERS: u64 = 1_000_000_000;

/// A GGUF model run in-process by llama.cpp.
///
/// The model is loaded once per process (by path) and shared by every provider
/// built for it; generations run one at a time on the model's own thread, and
/// the next turn of a conversation reuses the KV cache of the previous one.
#[derive(Debug, Clone)]
pub struct LocalProvider {
    model: Arc<LoadedModel>,
}

impl LocalProvider {
    /// Loads (or finds already loaded) the model of `config`. Blocks while the
    /// model is read: call it from a blocking thread, or use
    /// [`load_async`](Self::load_async).
    pub fn load(config: &LocalConfig) -> Result<Self, LocalError> {
        Ok(Self {
            model: model::load(config)?,
        })
    }

    /// [`load`](Self::load) on a blocking thread.
    pub async fn load_async(config: LocalConfig) -> Result<Self, LocalError> {
        tokio::task::spawn_blocking(move || Self::load(&config))
            .await
            .map_err(|_| LocalError::WorkerGone)?
    }

    /// The model file.
    pub fn model_path(&self) -> &Path {
        &self.model.path
    }

    /// The context the model runs with, in tokens.
    pub fn context_window(&self) -> u32 {
        self.model.info.context
    }

    /// The model's parameter count.
    pub fn parameters(&self) -> u64 {
        self.model.info.parameters
    }

    /// Whether the model is small (under [`SMALL_MODEL_PARAMETERS`]): such a model
    /// rarely decides to call a tool on its own, so a caller may want its first turn
    /// to require one (tool choice `required`) and its later turns to answer.
    pub fn is_small(&self) -> bool {
        self.parameters() < SMALL_MODEL_PARAMETERS
    }

    fn job(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<(UnboundedReceiver<Event>, OutputSplitter), ProviderError> {
        let tools: Vec<ToolSchema> = match &request.tool_choice {
            ToolChoice::None => Vec::new(),
            ToolChoice::Tool(name) => request
                .tools
                .iter()
                .filter(|tool| &tool.name == name)
                .cloned()
                .collect(),
            ToolChoice::Auto | ToolChoice::Required => request.tools.clone(),
        };
        if let ToolChoice::Tool(name) = &request.tool_choice
            && tools.is_empty()
        {
            return Err(ProviderError::InvalidRequest {
                message: format!("tool_choice names `{name}`, which is not among the tools"),
            });
        }
        let template = &self.model.info.template;
        let format = template.tool_format();
        let prompt = template.render(&request.messages, &tools)?;
        let grammar = if tools.is_empty() {
            None
        } else {
            Some(tool_grammar(format, &tools)?)
        };
        let (events, receiver) = unbounded_channel();
        self.model.submit(Job {
            prompt,
            grammar,
            lazy: matches!(request.tool_choice, ToolChoice::Auto),
            max_tokens: request.max_tokens.unwrap_or(self.model.info.context).max(1),
            temperature: request.temperature,
            cancel: cancel.clone(),
            events,
        })?;
        Ok((receiver, OutputSplitter::new(format, !tools.is_empty())))
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn capabilities(&self, _model: &str) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            context_window: self.model.info.context,
            max_output_tokens: self.model.info.context,
        }
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let mut stream = self.stream(request, cancel).await?;
        let mut accumulator = StreamAccumulator::new();
        while let Some(item) = stream.next().await {
            accumulator.push(&item?);
        }
        accumulator.finish()
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let (receiver, splitter) = self.job(request, cancel)?;
        let state = StreamState {
            receiver,
            splitter: Some(splitter),
            cancel: cancel.clone(),
            queue: VecDeque::new(),
            ended: false,
        };
        Ok(Box::pin(futures::stream::unfold(state, next_item)))
    }
}

struct StreamState {
    receiver: UnboundedReceiver<Event>,
    splitter: Option<OutputSplitter>,
    cancel: CancellationToken,
    queue: VecDeque<StreamItem>,
    ended: bool,
}

async fn next_item(
    mut state: StreamState,
) -> Option<(Result<StreamItem, ProviderError>, StreamState)> {
    loop {
        if let Some(item) = state.queue.pop_front() {
            return Some((Ok(item), state));
        }
        if state.ended {
            return None;
        }
        let event = tokio::select! {
            () = state.cancel.cancelled() => Event::Failed(ProviderError::Cancelled),
            event = state.receiver.recv() => event.unwrap_or(Event::Failed(LocalError::WorkerGone.into())),
        };
        match event {
            Event::Piece(piece) => {
                if let Some(text) = state.splitter.as_mut().and_then(|s| s.push(&piece)) {
                    return Some((Ok(StreamItem::Text(text)), state));
                }
            }
            Event::Done(done) => {
                state.ended = true;
                let splitter = state.splitter.take()?;
                let (items, finish) = splitter.finish(done.finish);
                state.queue.extend(items);
                state.queue.push_back(StreamItem::Usage(Usage::new(
                    done.input_tokens,
                    done.output_tokens,
                    done.cached_tokens,
                )));
                state.queue.push_back(StreamItem::Finish(finish));
            }
            Event::Failed(error) => {
                state.ended = true;
                return Some((Err(error), state));
            }
        }
    }
}
