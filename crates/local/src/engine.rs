//! The decoding loop, on the model's own thread: prompt in, pieces of text out,
//! one token at a time. The KV cache keeps the last conversation, so the next
//! turn of the same conversation only decodes what is new.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use oxydra_provider::ProviderError;
use oxydra_types::FinishReason;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::config::LocalConfig;
use crate::error::LocalError;
use crate::grammar::{ROOT_RULE, ToolGrammar};
use crate::model_info::ModelInfo;
use crate::repetition_guard::RepetitionGuard;
use crate::sampling::{LocalSampling, Sampling, SamplingOverrides};
use crate::template::ChatTemplate;

/// The finish reason of a generation the repetition guard ended.
pub const REPETITION_FINISH: &str = "repetition";

/// The context's batch (`n_batch`, and llama.cpp's default `n_ubatch`): the most
/// tokens one llama.cpp call may take, which its compute buffers are sized for. The
/// prompt is submitted in smaller chunks ([`LocalConfig::prompt_chunk`]) so that a
/// stop, checked between calls, lands sooner.
const BATCH: u32 = 512;

/// One generation.
#[derive(Debug)]
pub struct Job {
    /// The rendered prompt.
    pub prompt: String,
    /// The tool-call grammar, if tools are offered.
    pub grammar: Option<ToolGrammar>,
    /// Whether the grammar only starts at its trigger (the model may answer in
    /// text) or holds from the first token (a call is required).
    pub lazy: bool,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// How tokens are picked.
    pub sampling: Sampling,
    /// Stops decoding when cancelled.
    pub cancel: CancellationToken,
    /// Where the output goes.
    pub events: UnboundedSender<Event>,
}

/// What the worker reports about a job.
#[derive(Debug)]
pub enum Event {
    /// The next piece of generated text (whole UTF-8 characters).
    Piece(String),
    /// The generation ended.
    Done(Done),
    /// The generation failed.
    Failed(ProviderError),
}

/// How a generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Prompt tokens that were already in the KV cache.
    pub cached_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Why it stopped.
    pub finish: FinishReason,
}

/// Loads the model at `path`, reports it on `ready`, then runs the jobs from
/// `jobs` until every sender is gone. Once `stop` is set, the running job ends at
/// its next token (or prompt chunk) and queued ones end before they start.
pub fn serve(
    backend: &LlamaBackend,
    path: &Path,
    config: &LocalConfig,
    ready: &mpsc::Sender<Result<ModelInfo, LocalError>>,
    jobs: &mpsc::Receiver<Job>,
    stop: &Arc<AtomicBool>,
) {
    let load_error = |message: String| LocalError::Load {
        path: path.to_path_buf(),
        message,
    };
    let model = match LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()) {
        Ok(model) => model,
        Err(error) => {
            let _ = ready.send(Err(load_error(format!("{error} (not a GGUF model?)"))));
            return;
        }
    };
    let context = model.n_ctx_train().clamp(256, config.max_context.max(256));
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(context))
        .with_n_batch(BATCH.min(context))
        .with_n_threads(config.thread_count())
        .with_n_threads_batch(config.thread_count());
    let ctx = match model.new_context(backend, params) {
        Ok(ctx) => ctx,
        Err(error) => {
            let _ = ready.send(Err(load_error(error.to_string())));
            return;
        }
    };
    let template = match model_template(&model) {
        Ok(template) => template,
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    let context = ctx.n_ctx();
    let recommended = SamplingOverrides::from_model(&model);
    let parameters = model.n_params();
    let info = ModelInfo {
        context,
        template: Arc::new(template),
        recommended,
        parameters,
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let mut engine = Engine {
        model: &model,
        ctx,
        cached: Vec::new(),
        batch: LlamaBatch::new(BATCH.min(context) as usize, 1),
        prompt_chunk: config.prompt_chunk,
        stop: Arc::clone(stop),
    };
    while let Ok(job) = jobs.recv() {
        engine.run(job);
    }
}

fn model_template(model: &LlamaModel) -> Result<ChatTemplate, LocalError> {
    let source = model
        .meta_val_str("tokenizer.chat_template")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let vocab = model.vocab();
    let text = |token: LlamaToken| {
        if token.0 < 0 {
            String::new()
        } else {
            String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned()
        }
    };
    ChatTemplate::new(source.as_deref(), text(vocab.bos()), text(vocab.eos()))
}

struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    /// The tokens whose keys and values are in the cache, in order.
    cached: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    /// The most prompt tokens per llama.cpp call, as configured.
    prompt_chunk: u32,
    stop: Arc<AtomicBool>,
}

impl Engine<'_> {
    /// Whether `job` should end now: cancelled, its reader gone, or the process
    /// stopping the model.
    fn abandoned(&self, job: &Job) -> bool {
        job.cancel.is_cancelled() || job.events.is_closed() || self.stop.load(Ordering::Acquire)
    }

    fn run(&mut self, job: Job) {
        let events = job.events.clone();
        match self.generate(&job) {
            Ok(done) => {
                let _ = events.send(Event::Done(done));
            }
            Err(error) => {
                // The cache may hold half a batch: start afresh next time.
                self.ctx.clear_kv_cache();
                self.cached.clear();
                let _ = events.send(Event::Failed(error));
            }
        }
    }

    fn generate(&mut self, job: &Job) -> Result<Done, ProviderError> {
        let vocab = self.model.vocab();
        let template_bos = !job.prompt.is_empty()
            && vocab.bos().0 >= 0
            && job
                .prompt
                .as_bytes()
                .starts_with(&vocab.token_to_piece(vocab.bos(), true, None));
        let tokens = vocab.tokenize(job.prompt.as_bytes(), !template_bos, true);
        let context = self.ctx.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(ProviderError::InvalidRequest {
                message: "the prompt is empty".into(),
            });
        }
        if tokens.len() >= context {
            return Err(ProviderError::ContextLengthExceeded {
                message: format!(
                    "the prompt is {} tokens; the model's context holds {context}",
                    tokens.len()
                ),
            });
        }
        let mut sampler = self.sampler(job)?;

        // Reuse the cached prefix; at least the last prompt token is decoded again,
        // for its logits.
        let common = self
            .cached
            .iter()
            .zip(&tokens)
            .take_while(|(a, b)| a == b)
            .count()
            .min(tokens.len() - 1);
        if common < self.cached.len() {
            self.ctx
                .clear_kv_cache_seq(Some(0), Some(to_u32(common)), None)
                .map_err(server_error)?;
            self.cached.truncate(common);
        }
        let rest = tokens.get(common..).unwrap_or_default();
        // The stop is checked between chunks: a chunk is as long as a stop may wait.
        let chunk = self.prompt_chunk();
        for (index, piece) in rest.chunks(chunk).enumerate() {
            if self.abandoned(job) {
                return Err(ProviderError::Cancelled);
            }
            let last_chunk = (index + 1) * chunk >= rest.len();
            self.batch.clear();
            for (offset, token) in piece.iter().enumerate() {
                let logits = last_chunk && offset + 1 == piece.len();
                self.batch
                    .add(*token, to_i32(self.cached.len() + offset), &[0], logits)
                    .map_err(server_error)?;
            }
            self.ctx.decode(&mut self.batch).map_err(server_error)?;
            self.cached.extend_from_slice(piece);
        }

        let mut pending = Vec::new();
        let mut output_tokens = 0u64;
        let mut guard = RepetitionGuard::new();
        let finish = loop {
            if self.abandoned(job) {
                return Err(ProviderError::Cancelled);
            }
            let token = sampler.sample(&self.ctx, self.batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                break FinishReason::Stop;
            }
            output_tokens += 1;
            let looping = guard.push(token.0);
            pending.extend_from_slice(&vocab.token_to_piece(token, true, None));
            let text = take_utf8(&mut pending);
            if !text.is_empty() && job.events.send(Event::Piece(text)).is_err() {
                return Err(ProviderError::Cancelled);
            }
            if looping {
                tracing::warn!(output_tokens, "the local model repeats itself: answer cut");
                break FinishReason::Other(REPETITION_FINISH.into());
            }
            if output_tokens >= u64::from(job.max_tokens) || self.cached.len() + 1 >= context {
                break FinishReason::Length;
            }
            self.batch.clear();
            self.batch
                .add(token, to_i32(self.cached.len()), &[0], true)
                .map_err(server_error)?;
            self.ctx.decode(&mut self.batch).map_err(server_error)?;
            self.cached.push(token);
        };
        if !pending.is_empty() {
            let _ = job
                .events
                .send(Event::Piece(String::from_utf8_lossy(&pending).into_owned()));
        }
        Ok(Done {
            input_tokens: tokens.len() as u64,
            cached_tokens: common as u64,
            output_tokens,
            finish,
        })
    }

    /// The prompt tokens per llama.cpp call: the configured chunk, within the
    /// context's batch.
    fn prompt_chunk(&self) -> usize {
        let batch = (self.ctx.n_batch() as usize).clamp(1, BATCH as usize);
        (self.prompt_chunk as usize).clamp(1, batch)
    }

    fn sampler(&self, job: &Job) -> Result<LlamaSampler, ProviderError> {
        let mut chain = Vec::new();
        if let Some(grammar) = &job.grammar {
            let sampler = if job.lazy {
                // The trigger as a pattern that matches its text anywhere in the
                // output (what llama.cpp's `common` did with a trigger word). llama.cpp
                // compiles it as a `std::regex` and aborts on a bad one; an escaped
                // literal is always a good one.
                LlamaSampler::grammar_lazy_patterns(
                    self.model,
                    &grammar.gbnf,
                    ROOT_RULE,
                    &[regex_escape(&grammar.trigger)],
                    &[],
                )
            } else {
                LlamaSampler::grammar(self.model, &grammar.gbnf, ROOT_RULE)
            }
            .map_err(|error| ProviderError::InvalidRequest {
                message: format!("the tool-call grammar was refused: {error}"),
            })?;
            chain.push(sampler);
        }
        chain.extend(job.sampling.samplers(self.model, rand_seed()));
        Ok(LlamaSampler::chain_simple(chain))
    }
}

/// Takes the longest prefix of `bytes` that is whole UTF-8 characters; bytes that
/// can never be valid are replaced, an incomplete character at the end waits.
fn take_utf8(bytes: &mut Vec<u8>) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let text = text.to_owned();
            bytes.clear();
            text
        }
        Err(error) => {
            let valid = error.valid_up_to();
            let cut = match error.error_len() {
                Some(bad) => valid + bad,
                None => valid,
            };
            let head: Vec<u8> = bytes.drain(..cut.min(bytes.len())).collect();
            String::from_utf8_lossy(&head).into_owned()
        }
    }
}

/// `text` as an ECMAScript regular expression matching exactly it: a backslash
/// before each character the syntax gives a meaning.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if matches!(
            c,
            '.' | '^' | '$' | '|' | '(' | ')' | '*' | '+' | '?' | '[' | ']' | '{' | '}' | '\\'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn rand_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn server_error(error: impl std::fmt::Display) -> ProviderError {
    ProviderError::Server {
        status: 500,
        message: format!("llama.cpp: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{regex_escape, take_utf8};

    #[test]
    fn triggers_are_escaped_as_literals() {
        assert_eq!(regex_escape("[TOOL_CALLS]"), "\\[TOOL_CALLS\\]");
        assert_eq!(regex_escape("{\"name\""), "\\{\"name\"");
        assert_eq!(regex_escape("<tool_call>"), "<tool_call>");
        assert_eq!(regex_escape("a.b|c\\d$"), "a\\.b\\|c\\\\d\\$");
    }

    #[test]
    fn split_characters_wait_for_their_last_byte() {
        let mut bytes = "hé".as_bytes()[..2].to_vec();
        assert_eq!(take_utf8(&mut bytes), "h");
        bytes.push("é".as_bytes()[1]);
        assert_eq!(take_utf8(&mut bytes), "é");
        assert!(bytes.is_empty());
    }

    #[test]
    fn invalid_bytes_are_replaced_not_held_forever() {
        let mut bytes = vec![b'a', 0xff, b'b'];
        let first = take_utf8(&mut bytes);
        assert_eq!(first, "a\u{fffd}");
        assert_eq!(take_utf8(&mut bytes), "b");
    }
}
