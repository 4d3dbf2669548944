//! Small real tools and helpers for the executor's integration tests.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use oxydra_executor::{
    ExecutionContext, NoopEventSink, ProcessToolState, ToolBatchResult, ToolCallRecord,
    ToolExecutionError, ToolExecutor, ToolExecutorConfig, ToolRule, ToolRuleViolation,
};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{CallId, SafetyTier, SessionId, ToolCall, ToolSchema};
use serde_json::{Value, json};

type Body = Arc<
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync,
>;

/// A tool whose behaviour is a closure; it counts its runs.
#[derive(Clone)]
pub struct FnTool {
    pub name: String,
    pub tier: SafetyTier,
    pub schema: Value,
    pub runs: Arc<AtomicUsize>,
    /// What [`Tool::max_execution_time`] answers.
    pub own_limit: Option<std::time::Duration>,
    /// What [`Tool::consent`] answers.
    pub consent: Option<oxydra_executor::PermissionScope>,
    body: Body,
}

impl FnTool {
    pub fn new<F, Fut>(name: &str, tier: SafetyTier, body: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        Self {
            name: name.to_owned(),
            tier,
            schema: json!({"type": "object"}),
            runs: Arc::new(AtomicUsize::new(0)),
            own_limit: None,
            consent: None,
            body: Arc::new(move |args, ctx| Box::pin(body(args, ctx))),
        }
    }

    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }

    /// The tool bounds its own calls to `limit`.
    pub fn with_own_limit(mut self, limit: std::time::Duration) -> Self {
        self.own_limit = Some(limit);
        self
    }

    /// The tool declares it needs consent of `scope`.
    pub fn with_consent(mut self, scope: oxydra_executor::PermissionScope) -> Self {
        self.consent = Some(scope);
        self
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for FnTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(self.name.clone(), "test tool", self.schema.clone())
    }
    fn safety_tier(&self) -> SafetyTier {
        self.tier
    }
    fn max_execution_time(&self) -> Option<std::time::Duration> {
        self.own_limit
    }
    fn consent(&self) -> Option<oxydra_executor::PermissionScope> {
        self.consent
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        (self.body)(args, ctx.clone()).await
    }
}

/// A tool answering `{name}:{args}`.
pub fn echo(name: &str, tier: SafetyTier) -> FnTool {
    let label = name.to_owned();
    FnTool::new(name, tier, move |args, _| {
        let text = format!("{label}:{args}");
        async move { Ok(ToolOutput::text(text)) }
    })
}

pub fn registry(tools: &[FnTool]) -> Arc<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool.clone()).unwrap();
    }
    Arc::new(registry)
}

pub fn executor(tools: &[FnTool], rules: Vec<ToolRule>) -> ToolExecutor {
    executor_with(tools, rules, ToolExecutorConfig::default())
}

pub fn executor_with(
    tools: &[FnTool],
    rules: Vec<ToolRule>,
    config: ToolExecutorConfig,
) -> ToolExecutor {
    ToolExecutor::new(registry(tools), rules, config)
}

pub fn ctx() -> ExecutionContext {
    ExecutionContext::new(SessionId::generate(), std::env::temp_dir())
}

pub fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall::new(CallId::from(id), name, args)
}

/// Runs `calls` as one batch of `process`, with no event sink: the call most tests make.
pub async fn batch(
    ex: &ToolExecutor,
    calls: &[ToolCall],
    process: &mut ProcessToolState,
    ctx: &ExecutionContext,
) -> ToolBatchResult {
    ex.execute_batch(calls, process, ctx, &NoopEventSink).await
}

/// Counts calls in flight and remembers the most seen at once.
#[derive(Default)]
pub struct InFlight {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl InFlight {
    /// Enter; returns how many are in flight including this one.
    pub fn enter(&self) -> usize {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        now
    }
    pub fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
    pub fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

/// The rule violation `result` ended in; fails the test on any other outcome.
pub fn violation(result: &ToolCallRecord) -> &ToolRuleViolation {
    match &result.outcome {
        Err(ToolExecutionError::RuleViolation(v)) => v,
        other => panic!("expected a rule violation, got {other:?}"),
    }
}

/// A tool that remembers the arguments of each run.
pub fn recorder(name: &str, tier: SafetyTier) -> (FnTool, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = Arc::clone(&seen);
    let tool = FnTool::new(name, tier, move |args, _| {
        log.lock().unwrap().push(args);
        async { Ok(ToolOutput::text("ok")) }
    });
    (tool, seen)
}
