//! Tools served next to the coordinator's (`oxydra mcp serve --tools
//! file_read,file_list`), confined as `oxydra run` confines them: the caller builds the
//! registry from its configuration (workspace root, sandbox, protected paths), the
//! calls go through the same executor (argument validation, rules, consent,
//! timeouts), and every result is scrubbed as the runtime scrubs what it sends a
//! provider.
//!
//! No one sits at a terminal to answer a consent request: it is denied, and the error
//! says why, unless the server is given a broker that grants it.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_executor::{
    AlwaysDeny, ExecutionContext, NoopEventSink, PermissionBroker, ToolExecutionError,
    ToolExecutor, ToolExecutorConfig, ToolRule,
};
use oxydra_tools::ToolRegistry;
use oxydra_types::{CallId, SafetyTier, SessionId, ToolCall};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ToolAnnotations};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a denied consent request says over MCP.
const NO_ONE_TO_ASK: &str = "it needs consent, and no one can give it over MCP: this \
server denies such calls unless it is set to approve them (`approve = \"allow\"` in \
oxydra's configuration)";

/// Tools an MCP client may call directly (typically built-in ones such as
/// `file_read`), run through a [`ToolExecutor`] as an agent's calls are: argument
/// validation, rules, consent and timeouts; every result scrubbed.
pub struct BuiltinTools {
    registry: Arc<ToolRegistry>,
    rules: Vec<ToolRule>,
    broker: Arc<dyn PermissionBroker>,
    executor: ToolExecutor,
    workspace: PathBuf,
}

impl std::fmt::Debug for BuiltinTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinTools")
            .field("tools", &self.registry.names())
            .field("workspace", &self.workspace)
            .finish()
    }
}

impl BuiltinTools {
    /// The tools of `registry` (for the built-in ones confined to a workspace, build it
    /// with `ToolRegistry::with_builtin_subset`), run in `workspace`. No one sits at a
    /// terminal to answer a consent request, so every one is denied (the error says
    /// why) unless [`with_permission_broker`](Self::with_permission_broker) says
    /// otherwise.
    pub fn new(registry: ToolRegistry, workspace: impl Into<PathBuf>) -> Self {
        let registry = Arc::new(registry);
        let broker: Arc<dyn PermissionBroker> = Arc::new(AlwaysDeny);
        let executor = executor(&registry, &[], &broker);
        Self {
            registry,
            rules: Vec::new(),
            broker,
            executor,
            workspace: workspace.into(),
        }
    }

    /// The same tools under `rules` (the configuration's `[[rules]]`).
    pub fn with_rules(mut self, rules: Vec<ToolRule>) -> Self {
        self.rules = rules;
        self.executor = executor(&self.registry, &self.rules, &self.broker);
        self
    }

    /// The same tools, their consent requests answered by `broker` (for instance
    /// `oxydra_executor::AlwaysApprove` when the configuration approves every call).
    pub fn with_permission_broker(mut self, broker: Arc<dyn PermissionBroker>) -> Self {
        self.broker = broker;
        self.executor = executor(&self.registry, &self.rules, &self.broker);
        self
    }

    /// Each tool as MCP lists it, with annotations from its safety tier.
    pub(crate) fn listings(&self) -> Vec<rmcp::model::Tool> {
        let registry = &self.registry;
        registry
            .schemas()
            .into_iter()
            .map(|schema| {
                let input: JsonObject = match &schema.parameters {
                    Value::Object(object) => object.clone(),
                    _ => JsonObject::new(),
                };
                let tier = registry
                    .tier(&schema.name)
                    .unwrap_or(SafetyTier::Privileged);
                rmcp::model::Tool::new(schema.name.clone(), schema.description.clone(), input)
                    .annotate(annotations(&schema.name, tier))
            })
            .collect()
    }

    /// Whether `name` is one of these tools.
    pub fn contains(&self, name: &str) -> bool {
        self.registry.contains(name)
    }

    /// Runs one call as `oxydra run` would (a run of its own: no dedupe against other
    /// clients' calls, no grant carried over); the result scrubbed.
    pub(crate) async fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let call = ToolCall::new(CallId::generate(), name, args.to_string());
        let mut ctx = ExecutionContext::new(SessionId::generate(), self.workspace.clone());
        ctx.cancel = cancel;
        let mut process = self.executor.new_process_state();
        let batch = self
            .executor
            .execute_batch(
                std::slice::from_ref(&call),
                &mut process,
                &ctx,
                &NoopEventSink,
            )
            .await;
        let Some(record) = batch.records.into_iter().next() else {
            return CallToolResult::error(vec![ContentBlock::text("the call produced no result")]);
        };
        let text = match record.error() {
            Some(ToolExecutionError::PermissionDenied { tool_name, .. }) => {
                format!("`{tool_name}` was not run: {NO_ONE_TO_ASK}")
            }
            _ => record.content_for_model(),
        };
        let scrubbed = oxydra_scrubbing::scrub(&text).text.into_owned();
        if record.is_success() {
            CallToolResult::success(vec![ContentBlock::text(scrubbed)])
        } else {
            CallToolResult::error(vec![ContentBlock::text(scrubbed)])
        }
    }
}

/// A built-in tool's annotations: readers only read and may be repeated; the others
/// change the workspace (or run commands, or reach the network).
fn annotations(name: &str, tier: SafetyTier) -> ToolAnnotations {
    let read_only = tier == SafetyTier::ReadOnly;
    ToolAnnotations::with_title(name)
        .read_only(read_only)
        .destructive(!read_only)
        .idempotent(read_only)
        .open_world(name == "web_fetch" || name == "shell_exec")
}

/// The executor of `registry`'s tools under `rules`, consent from `broker`.
fn executor(
    registry: &Arc<ToolRegistry>,
    rules: &[ToolRule],
    broker: &Arc<dyn PermissionBroker>,
) -> ToolExecutor {
    ToolExecutor::new(
        Arc::clone(registry),
        rules.to_vec(),
        ToolExecutorConfig::default(),
    )
    .with_permission_broker(Arc::clone(broker))
}
