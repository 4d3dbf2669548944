#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

//! Loop overhead per turn: an instant in-process provider (a tool call, then an
//! answer) and a no-op tool, with 10, 100 and 1,000 messages of history; in process
//! and with SQLite memory. Each iteration is one run of two turns on a
//! session that already holds the history (set up outside the timing).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_memory::{SqliteConfig, SqliteMemory};
use oxydra_provider::{
    Provider, ProviderCapabilities, ProviderError, ProviderRequest, ProviderResponse,
    ProviderStream, response_to_stream_items,
};
use oxydra_runtime::AgentRuntime;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{
    CallId, FinishReason, Message, MessageRole, SafetyTier, SessionId, ToolCall, ToolSchema, Usage,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers a user message with a call of `noop`, anything else with text.
struct InstantProvider {
    calls: AtomicU64,
}

impl InstantProvider {
    fn respond(&self, request: &ProviderRequest) -> ProviderResponse {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let last_is_user = request.messages.last().map(|m| m.role) == Some(MessageRole::User);
        if last_is_user {
            ProviderResponse {
                fallbacks: Vec::new(),
                message: Message::assistant_with_tool_calls(
                    None,
                    vec![ToolCall::new(
                        CallId::from(format!("call_{n}")),
                        "noop",
                        format!("{{\"n\":{n}}}"),
                    )],
                ),
                finish_reason: FinishReason::ToolCalls,
                usage: Usage::new(100, 10, 0),
                reasoning: None,
            }
        } else {
            ProviderResponse {
                fallbacks: Vec::new(),
                message: Message::assistant("done"),
                finish_reason: FinishReason::Stop,
                usage: Usage::new(120, 5, 0),
                reasoning: None,
            }
        }
    }
}

#[async_trait]
impl Provider for InstantProvider {
    fn name(&self) -> &str {
        "instant"
    }
    fn capabilities(&self, _model: &str) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            context_window: 1_000_000,
            max_output_tokens: 4_096,
        }
    }
    async fn complete(
        &self,
        request: &ProviderRequest,
        _cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        Ok(self.respond(request))
    }
    async fn stream(
        &self,
        request: &ProviderRequest,
        _cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let items = response_to_stream_items(&self.respond(request));
        Ok(Box::pin(futures::stream::iter(items.into_iter().map(Ok))))
    }
}

struct NoopTool;

#[async_trait]
impl Tool for NoopTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "noop",
            "Does nothing",
            json!({"type":"object","properties":{"n":{"type":"integer"}}}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn history(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!(
                    "question {i}: what does the function on line {i} do?"
                ))
            } else {
                Message::assistant(format!(
                    "answer {i}: it parses the configuration and returns the settings."
                ))
            }
        })
        .collect()
}

fn runtime(memory: Option<Arc<SqliteMemory>>) -> AgentRuntime {
    let mut tools = ToolRegistry::new();
    tools.register(NoopTool).unwrap();
    let mut builder = AgentRuntime::builder()
        .provider(Arc::new(InstantProvider {
            calls: AtomicU64::new(0),
        }))
        .model("bench-model")
        .system_prompt("You are a benchmark.")
        .tools(tools)
        .workspace_root(std::env::temp_dir());
    if let Some(memory) = memory {
        builder = builder.memory(memory);
    }
    builder.build().unwrap()
}

fn in_process(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("turn_loop/in_process");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(2));
    for n in [10usize, 100, 1_000] {
        group.bench_function(format!("{n}_messages"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let runtime = runtime(None);
                    let cancel = CancellationToken::new();
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let session = SessionId::generate();
                        runtime.append_messages(&session, history(n)).await.unwrap();
                        // Warm the session (its prompt is built once, then kept up to date).
                        runtime
                            .session(&session)
                            .prompt("warm up")
                            .cancel(&cancel)
                            .await
                            .unwrap();
                        let start = Instant::now();
                        let outcome = runtime
                            .session(&session)
                            .prompt("go")
                            .cancel(&cancel)
                            .await
                            .unwrap();
                        total += start.elapsed();
                        assert_eq!(outcome.turns, 2);
                        runtime.forget_session(&session);
                    }
                    total
                })
            });
        });
    }
    group.finish();
}

fn with_sqlite(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("turn_loop/sqlite");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(2));
    for n in [10usize, 100, 1_000] {
        // A template database holding one session with the history, copied per iteration.
        let template = dir.path().join(format!("template_{n}.db"));
        let session = SessionId::generate();
        rt.block_on(async {
            let memory = Arc::new(SqliteMemory::open(&template, SqliteConfig::default()).unwrap());
            runtime(Some(memory))
                .append_messages(&session, history(n))
                .await
                .unwrap();
        });
        let copies = AtomicU64::new(0);
        group.bench_function(format!("{n}_messages"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let cancel = CancellationToken::new();
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let copy = dir
                            .path()
                            .join(format!("run_{}.db", copies.fetch_add(1, Ordering::Relaxed)));
                        std::fs::copy(&template, &copy).unwrap();
                        let memory =
                            Arc::new(SqliteMemory::open(&copy, SqliteConfig::default()).unwrap());
                        let runtime = runtime(Some(memory));
                        let start = Instant::now();
                        let outcome = runtime
                            .session(&session)
                            .prompt("go")
                            .cancel(&cancel)
                            .await
                            .unwrap();
                        total += start.elapsed();
                        assert_eq!(outcome.turns, 2);
                        drop(runtime);
                        let _ = std::fs::remove_file(&copy);
                    }
                    total
                })
            });
        });
    }
    group.finish();
}

/// SQLite with a warm database and runtime: consecutive runs on one session that starts
/// at 100 messages (and grows by four per run), to separate the loop's cost from
/// opening a cold database copy.
fn with_sqlite_warm(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let memory =
        Arc::new(SqliteMemory::open(dir.path().join("warm.db"), SqliteConfig::default()).unwrap());
    let runtime = runtime(Some(memory));
    let session = SessionId::generate();
    rt.block_on(runtime.append_messages(&session, history(100)))
        .unwrap();
    let mut group = c.benchmark_group("turn_loop/sqlite_warm");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(2));
    group.bench_function("from_100_messages", |b| {
        let cancel = CancellationToken::new();
        b.iter(|| {
            rt.block_on(
                runtime
                    .session(&session)
                    .prompt("go")
                    .cancel(&cancel)
                    .into_future(),
            )
            .unwrap()
        });
    });
    group.finish();
}

criterion_group!(benches, in_process, with_sqlite, with_sqlite_warm);
criterion_main!(benches);
