//! [`LocalProvider`]: the embedded model behind the [`Provider`] trait.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use oxydra_provider::{
    Provider, ProviderCapabilities, ProviderError, ProviderRequest, ProviderResponse,
    ProviderStream, StreamAccumulator, ToolChoice,
};
use oxydra_types::{FinishReason, Message, StreamItem, ToolCallDelta, ToolSchema, Usage};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::choices::{self, ArgumentChoices};
use crate::config::LocalConfig;
use crate::engine::{Event, Job, REPETITION_FINISH};
use crate::error::LocalError;

/// The name the local provider reports, in errors too.
const LOCAL_PROVIDER_NAME: &str = "local";

/// Why the local provider takes no image or document: it loads no multimodal
/// projector (mmproj), so the model reads text only.
const NO_PROJECTOR: &str = "the embedded llama.cpp model has no multimodal projector (mmproj) loaded and reads text only; \
     use a provider with vision (openai, anthropic, gemini, ollama) for images and documents";
use crate::grammar::{ToolGrammar, answer_grammar, one_call_grammar, tool_grammar};
use crate::model::{self, LoadedModel};
use crate::output::{OutputSplitter, Split, next_call_id};
use crate::sampling::{LocalSampling, Sampling, SamplingOverrides};
use crate::small_schema;
use crate::tool_format::ToolFormat;
use crate::workspace_paths::{self, WorkspacePaths};

/// The note that ends an answer the repetition guard cut, so that whoever reads
/// it (the user, the stored session, the model on its next turn) knows why.
pub const REPETITION_NOTE: &str =
    "\n\n[oxydra: the local model kept repeating itself; its answer was cut here]";

/// How many times a generation whose tool call does not parse (even once repaired)
/// is run again within the same request before the request fails: a malformed call
/// is never passed on as the answer.
pub const MALFORMED_CALL_RETRIES: u32 = 2;

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
    sampling: Sampling,
    choices: Option<Arc<dyn ArgumentChoices>>,
    /// The workspace of the file tools, once [`with_workspace`](Self::with_workspace)
    /// gave one.
    workspace: Option<PathBuf>,
}

impl LocalProvider {
    /// Loads (or finds already loaded) the model of `config`. Blocks while the
    /// model is read: call it from a blocking thread, or use
    /// [`load_async`](Self::load_async).
    pub fn load(config: &LocalConfig) -> Result<Self, LocalError> {
        let model = model::load(config)?;
        // A small model without a recommendation samples cooler than llama.cpp's default.
        let fallback = if model.info.parameters < SMALL_MODEL_PARAMETERS {
            model.info.recommended.or(SamplingOverrides::small_model())
        } else {
            model.info.recommended
        };
        let sampling = config.sampling.or(fallback).resolve()?;
        Ok(Self {
            model,
            sampling,
            choices: None,
            workspace: None,
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

    /// The sampling this provider decodes with: the configuration's, else the
    /// GGUF's recommendation, else the defaults.
    pub fn sampling(&self) -> Sampling {
        self.sampling
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

    /// The same provider holding the string arguments of tool calls to the values
    /// `choices` gives for each request (see [`ArgumentChoices`]): the paths of the
    /// workspace for a file tool's `path`, say. Only this provider's requests see
    /// them; the tools' own schemas do not change.
    pub fn with_argument_choices(mut self, choices: Arc<dyn ArgumentChoices>) -> Self {
        self.choices = Some(choices);
        self
    }

    /// The same provider for file tools working under `workspace`. For a small model
    /// ([`is_small`](Self::is_small)) the file tools' `path` arguments are held to the
    /// workspace's paths ([`WorkspacePaths`]), so it names a file that exists rather
    /// than the placeholder of its training (`/path/to/file.txt`), and a run whose
    /// prompt names a path that exists opens with a call
    /// ([`Provider::opening_tool_choice`]). A larger model is returned as it is. The
    /// runtime calls this (through [`Provider::for_workspace`]) with its workspace
    /// root.
    pub fn with_workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        if !self.is_small() {
            return self;
        }
        let workspace = workspace.into();
        self.choices = Some(Arc::new(WorkspacePaths::new(workspace.clone())));
        self.workspace = Some(workspace);
        self
    }

    /// The tool choice of a run opening with `messages` (see
    /// [`Provider::opening_tool_choice`]): with a workspace, when the last user message
    /// names files of it that exist, `file_read` (their content is what the question
    /// is about, and the grammar holds the path to them); when it names only
    /// directories that exist, any call (the grammar holds each file tool's path to the
    /// workspace's paths). Nothing otherwise: a greeting or a question the model can
    /// answer itself is not made into a call.
    fn opening_choice(&self, messages: &[Message]) -> Option<ToolChoice> {
        workspace_paths::opening_choice(self.workspace.as_deref()?, messages)
    }

    /// Applies the argument choices to `tools` (and, for a small model, keeps only the
    /// arguments a call needs: [`small_schema`]) and renders the prompt, on a blocking
    /// thread (the choices may read the disk; a chat template is code that came with
    /// the model file). Returns the prompt and the tools as the model sees them. The
    /// wait ends when `cancel` fires, even while a template still burns its fuel.
    async fn render(
        &self,
        messages: &[Message],
        tools: Vec<ToolSchema>,
        cancel: &CancellationToken,
    ) -> Result<(String, Vec<ToolSchema>), ProviderError> {
        let template = Arc::clone(&self.model.info.template);
        let messages = messages.to_vec();
        let source = self.choices.clone().filter(|_| !tools.is_empty());
        let small = self.is_small();
        let render = tokio::task::spawn_blocking(move || {
            let chosen = source
                .map(|source| source.choices(&messages))
                .unwrap_or_default();
            let tools = choices::apply(&tools, &chosen);
            let tools = if small {
                small_schema::required_only(&tools, &chosen)
            } else {
                tools
            };
            template
                .render(&messages, &tools)
                .map(|prompt| (prompt, tools))
        });
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            rendered = render => Ok(rendered.map_err(|_| LocalError::WorkerGone)??),
        }
    }

    async fn job(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<(UnboundedReceiver<Event>, OutputSplitter, Generation), ProviderError> {
        oxydra_provider::refuse_all_parts(LOCAL_PROVIDER_NAME, NO_PROJECTOR, &request.messages)?;
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
        let format: ToolFormat = self.model.info.template.tool_format();
        let (prompt, tools) = self.render(&request.messages, tools, cancel).await?;
        // A small model's answer turn (tool choice `none`) is held to text that opens
        // no tag: it imitates the calls of the earlier turns otherwise.
        let grammar = if !tools.is_empty() && self.is_small() {
            Some(one_call_grammar(format, &tools)?)
        } else if !tools.is_empty() {
            Some(tool_grammar(format, &tools)?)
        } else if self.is_small() && request.tool_choice == ToolChoice::None {
            Some(answer_grammar())
        } else {
            None
        };
        let generation = Generation {
            model: Arc::clone(&self.model),
            prompt,
            grammar,
            lazy: matches!(request.tool_choice, ToolChoice::Auto),
            max_tokens: request
                .max_tokens
                .unwrap_or(self.sampling.max_tokens)
                .max(1),
            sampling: Sampling {
                temperature: request.temperature.unwrap_or(self.sampling.temperature),
                ..self.sampling
            },
            format,
            tools: !tools.is_empty(),
        };
        let (receiver, splitter) = generation.submit(cancel)?;
        Ok((receiver, splitter, generation))
    }
}

/// One generation of a request, kept so that it can be run again when its tool call
/// does not parse.
#[derive(Debug, Clone)]
struct Generation {
    model: Arc<LoadedModel>,
    prompt: String,
    grammar: Option<ToolGrammar>,
    lazy: bool,
    max_tokens: u32,
    sampling: Sampling,
    format: ToolFormat,
    tools: bool,
}

impl Generation {
    /// Starts the generation on the model's thread.
    fn submit(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(UnboundedReceiver<Event>, OutputSplitter), LocalError> {
        let (events, receiver) = unbounded_channel();
        self.model.submit(Job {
            prompt: self.prompt.clone(),
            grammar: self.grammar.clone(),
            lazy: self.lazy,
            max_tokens: self.max_tokens,
            sampling: self.sampling,
            cancel: cancel.clone(),
            events,
        })?;
        Ok((receiver, OutputSplitter::new(self.format, self.tools)))
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        LOCAL_PROVIDER_NAME
    }

    fn is_small_model(&self) -> bool {
        self.is_small()
    }

    fn for_workspace(&self, workspace: &Path) -> Option<Arc<dyn Provider>> {
        self.is_small()
            .then(|| Arc::new(self.clone().with_workspace(workspace)) as Arc<dyn Provider>)
    }

    fn opening_tool_choice(&self, messages: &[Message]) -> Option<ToolChoice> {
        self.opening_choice(messages)
    }

    fn capabilities(&self, _model: &str) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            context_window: self.model.info.context,
            max_output_tokens: self.sampling.max_tokens.min(self.model.info.context),
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
        let (receiver, splitter, generation) = self.job(request, cancel).await?;
        let state = StreamState {
            receiver,
            splitter: Some(splitter),
            cancel: cancel.clone(),
            queue: VecDeque::new(),
            ended: false,
            generation,
            retries_left: MALFORMED_CALL_RETRIES,
            streamed_text: false,
            retried: false,
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
    /// What to run again when the tool call does not parse.
    generation: Generation,
    retries_left: u32,
    /// Whether text was streamed already (a retry then streams none of its own).
    streamed_text: bool,
    /// Whether this is a retry.
    retried: bool,
}

/// What a generation's end becomes: the items and the finish reason, a retry, or an
/// error.
enum Ending {
    Items(Vec<StreamItem>, FinishReason),
    Retry,
    Failed(ProviderError),
}

/// The end of a generation whose output `split` gave.
///
/// A tool call that does not parse is never the answer: the generation is run again
/// (at most [`MALFORMED_CALL_RETRIES`] times); a call the output-token limit cut
/// after its name is passed on with empty arguments and finish reason `length`, so
/// the runtime does not run it and tells the model (the retry would be cut the same
/// way); otherwise the request fails with a decode error that is not retried.
fn ending(split: Split, retries_left: u32) -> Ending {
    let (text, raw, name, finish) = match split {
        Split::Done(items, finish) => return Ending::Items(items, finish),
        Split::Malformed {
            text,
            raw,
            name,
            finish,
        } => (text, raw, name, finish),
    };
    let cut = finish == FinishReason::Length;
    if !cut && retries_left > 0 {
        tracing::warn!(
            excerpt = %excerpt(&raw),
            "the local model's tool call does not parse; generating again"
        );
        return Ending::Retry;
    }
    match name.filter(|_| cut) {
        Some(name) => {
            tracing::warn!(tool = %name, "the output-token limit cut the local model's tool call");
            let mut items = text;
            items.push(StreamItem::ToolCallDelta(ToolCallDelta {
                index: 0,
                id: Some(next_call_id()),
                name: Some(name),
                arguments: String::new(),
            }));
            Ending::Items(items, FinishReason::Length)
        }
        None => {
            let error = LocalError::MalformedToolCall {
                attempts: MALFORMED_CALL_RETRIES + 1 - retries_left,
                excerpt: excerpt(&raw),
            };
            tracing::warn!(%error, "giving up on the local model's tool call");
            Ending::Failed(error.into())
        }
    }
}

/// The start of `raw`, for a message.
fn excerpt(raw: &str) -> String {
    const MAX: usize = 120;
    match raw.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", raw.get(..end).unwrap_or(raw)),
        None => raw.to_owned(),
    }
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
                let text = state.splitter.as_mut().and_then(|s| s.push(&piece));
                if let Some(text) = text.filter(|_| !(state.retried && state.streamed_text)) {
                    state.streamed_text = true;
                    return Some((Ok(StreamItem::Text(text)), state));
                }
            }
            Event::Done(done) => {
                let splitter = state.splitter.take()?;
                let cut = done.finish == FinishReason::Other(REPETITION_FINISH.into());
                let (mut items, finish) =
                    match ending(splitter.finish(done.finish), state.retries_left) {
                        Ending::Items(items, finish) => (items, finish),
                        Ending::Retry => {
                            state.retries_left = state.retries_left.saturating_sub(1);
                            state.retried = true;
                            match state.generation.submit(&state.cancel) {
                                Ok((receiver, splitter)) => {
                                    state.receiver = receiver;
                                    state.splitter = Some(splitter);
                                    continue;
                                }
                                Err(error) => {
                                    state.ended = true;
                                    return Some((Err(error.into()), state));
                                }
                            }
                        }
                        Ending::Failed(error) => {
                            state.ended = true;
                            return Some((Err(error), state));
                        }
                    };
                state.ended = true;
                if state.retried && state.streamed_text {
                    items.retain(|item| !matches!(item, StreamItem::Text(_)));
                }
                state.queue.extend(items);
                if cut && finish != FinishReason::ToolCalls {
                    state
                        .queue
                        .push_back(StreamItem::Text(REPETITION_NOTE.to_owned()));
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn malformed(raw: &str, name: Option<&str>, finish: FinishReason) -> Split {
        Split::Malformed {
            text: Vec::new(),
            raw: raw.to_owned(),
            name: name.map(str::to_owned),
            finish,
        }
    }

    #[test]
    fn a_call_that_does_not_parse_is_generated_again_then_an_error() {
        let raw = "<tool_call>[{\"name\":\"file_write\" oops";
        let split = || malformed(raw, Some("file_write"), FinishReason::Stop);
        assert!(matches!(ending(split(), 1), Ending::Retry));
        let Ending::Failed(error) = ending(split(), 0) else {
            panic!("not failed")
        };
        let message = error.to_string();
        assert!(message.contains("does not parse"), "{message}");
        assert!(message.contains("file_write"), "{message}");
        // Neither retried again nor answered by a fallback request.
        assert!(!oxydra_provider::is_retryable(&error), "{error:?}");
    }

    #[test]
    fn a_call_the_token_limit_cut_after_its_name_is_passed_on_as_cut() {
        let split = malformed(
            "<tool_call>[{\"name\": \"file_write\", \"arguments\": {\"con",
            Some("file_write"),
            FinishReason::Length,
        );
        let Ending::Items(items, finish) = ending(split, 2) else {
            panic!("not passed on")
        };
        assert_eq!(finish, FinishReason::Length);
        let [StreamItem::ToolCallDelta(call)] = items.as_slice() else {
            panic!("{items:?}")
        };
        assert_eq!(call.name.as_deref(), Some("file_write"));
        assert!(call.arguments.is_empty());
        // Cut before its name: an error.
        let split = malformed("<tool_call>[{\"na", None, FinishReason::Length);
        assert!(matches!(ending(split, 2), Ending::Failed(_)));
    }

    #[test]
    fn text_and_calls_that_parsed_pass_as_they_are() {
        let items = vec![StreamItem::Text("hi".into())];
        let Ending::Items(passed, finish) =
            ending(Split::Done(items.clone(), FinishReason::Stop), 0)
        else {
            panic!()
        };
        assert_eq!((passed, finish), (items, FinishReason::Stop));
    }
}
