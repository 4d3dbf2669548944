//! Built-in tools served next to the coordinator's (`oxydra mcp serve --tools
//! file_read,file_list`), confined to the workspace exactly as `oxydra run` confines
//! them: the same registry built from the configuration's `[tools]` (workspace root,
//! sandbox, protected paths), the same executor (argument validation, `[[rules]]`,
//! consent, timeouts), and every result scrubbed as the runtime scrubs what it sends a
//! provider.
//!
//! No one sits at a terminal to answer a consent request: it is granted only with
//! `approve = "always"`, otherwise denied, and the error says why.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra::executor::{
    AlwaysApprove, AlwaysDeny, ExecutionContext, NoopEventSink, PermissionBroker,
    ToolExecutionError, ToolExecutor, ToolExecutorConfig,
};
use oxydra::tools::{BUILTIN_TOOL_NAMES, ToolRegistry};
use oxydra::types::{CallId, SafetyTier, SessionId, ToolCall};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ToolAnnotations};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{self, ApproveMode, ServiceConfig};
use crate::error::CliError;

/// What a denied consent request says over MCP.
const NO_ONE_TO_ASK: &str = "it needs consent, and no one can give it over MCP: `oxydra mcp \
serve` denies such calls unless the configuration says `approve = \"always\"`";

/// The `--tools` list, checked: every name a built-in tool, none twice.
pub fn parse_names(list: &str) -> Result<Vec<String>, CliError> {
    let flag = |message: String| CliError::Flag {
        flag: "--tools",
        message,
    };
    let mut names: Vec<String> = Vec::new();
    for name in list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        if !BUILTIN_TOOL_NAMES.contains(&name) {
            return Err(flag(format!(
                "`{name}` is no built-in tool; the built-in tools are {}",
                BUILTIN_TOOL_NAMES.join(", ")
            )));
        }
        if names.iter().any(|seen| seen == name) {
            return Err(flag(format!("`{name}` is named twice")));
        }
        names.push(name.to_owned());
    }
    if names.is_empty() {
        return Err(flag(format!(
            "name at least one built-in tool ({})",
            BUILTIN_TOOL_NAMES.join(", ")
        )));
    }
    Ok(names)
}

/// The built-in tools an MCP client may call, run through the executor.
pub struct BuiltinTools {
    executor: ToolExecutor,
    workspace: PathBuf,
}

impl std::fmt::Debug for BuiltinTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinTools")
            .field("tools", &self.executor.registry().names())
            .field("workspace", &self.workspace)
            .finish()
    }
}

impl BuiltinTools {
    /// The tools `names` (checked by [`parse_names`]) as `settings` configures them.
    pub fn new(names: &[String], settings: &ServiceConfig) -> Result<Self, CliError> {
        let registry =
            ToolRegistry::with_builtin_subset(&settings.tools, names).map_err(|error| {
                CliError::Flag {
                    flag: "--tools",
                    message: error.to_string(),
                }
            })?;
        let broker: Arc<dyn PermissionBroker> = match settings.runtime.approve {
            ApproveMode::Always => Arc::new(AlwaysApprove),
            ApproveMode::Ask | ApproveMode::Never => Arc::new(AlwaysDeny),
        };
        let executor = ToolExecutor::new(
            Arc::new(registry),
            config::rules(&settings.rules),
            ToolExecutorConfig::default(),
        )
        .with_permission_broker(broker);
        Ok(Self {
            executor,
            workspace: settings.runtime.workspace.clone(),
        })
    }

    /// Each tool as MCP lists it, with annotations from its safety tier.
    pub fn listings(&self) -> Vec<rmcp::model::Tool> {
        let registry = self.executor.registry();
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
        self.executor.registry().contains(name)
    }

    /// Runs one call as `oxydra run` would (a run of its own: no dedupe against other
    /// clients' calls, no grant carried over); the result scrubbed.
    pub async fn call(
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
        let scrubbed = oxydra::scrubbing::scrub(&text).text.into_owned();
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
