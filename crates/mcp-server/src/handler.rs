//! The MCP server handler: lists the coordinator's tools with their annotations and
//! answers `tools/call` by running the coordinator's own tool objects, so a run started
//! over MCP is validated, stored and run exactly like one from `POST /runs`.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_coordinator::{
    CancelAgentRun, Coordinator, CoordinatorHandle, DecideApproval, ListPendingApprovals,
    ParameterValidator, ValidationIssue, agent_tools,
};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::CallId;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::annotations;
use crate::builtin_tools::BuiltinTools;
use crate::error::McpServerError;

/// Room for the JSON-RPC envelope around arguments of the largest accepted size.
pub const ENVELOPE_BYTES: usize = 64 * 1024;

/// One tool as served: the coordinator's tool object, its MCP listing and the
/// validator of its arguments.
struct ServedTool {
    tool: Arc<dyn Tool>,
    listing: rmcp::model::Tool,
    validator: ParameterValidator,
}

/// Oxydra's coordinator as an MCP server: `list_agent_blueprints`, `start_agent_run`,
/// `get_agent_run` (a bounded long poll: `wait_secs` of at most
/// [`oxydra_coordinator::MAX_WAIT_SECS`]) and `cancel_agent_run`; where runs wait for
/// approval, also `list_pending_approvals` and `decide_approval`. Built by
/// [`McpServer::builder`]; served by [`serve_io`](McpServer::serve_io),
/// [`serve_stdio`](McpServer::serve_stdio) or [`serve_http`](McpServer::serve_http),
/// or, as an `rmcp` [`ServerHandler`], on any transport of rmcp's.
#[derive(Clone)]
pub struct McpServer {
    coordinator: CoordinatorHandle,
    tools: Arc<[ServedTool]>,
    builtins: Option<Arc<BuiltinTools>>,
    workspace: PathBuf,
    max_argument_bytes: usize,
    approvals: bool,
    model_approvals: bool,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("workspace", &self.workspace)
            .field("max_argument_bytes", &self.max_argument_bytes)
            .field("approvals", &self.approvals)
            .finish_non_exhaustive()
    }
}

/// Builds an [`McpServer`]: which coordinator, which workspace the tools' calls run
/// in, whether runs may wait for approval, and which other tools are served beside the
/// coordinator's.
#[derive(Debug)]
pub struct McpServerBuilder {
    coordinator: Coordinator,
    workspace: PathBuf,
    approvals: bool,
    model_approvals: bool,
    builtins: Option<BuiltinTools>,
}

impl McpServerBuilder {
    /// The workspace the served tools' calls run in (the current directory unless
    /// set).
    pub fn workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = workspace.into();
        self
    }

    /// Whether runs may wait for a person (a permission broker that defers, such as
    /// `oxydra_executor::DeferAll`): then `list_pending_approvals` and
    /// `decide_approval` are served too. Off unless set.
    pub fn approvals(mut self, approvals: bool) -> Self {
        self.approvals = approvals;
        self
    }

    /// Whether the client may decide approvals itself (`decide_approval`). Off unless
    /// set: the client of an MCP server is usually a model, and a model must not
    /// approve the calls of the runs it started; a person decides them (`oxydra
    /// approvals`, the web console of `oxydra serve`). Only with
    /// [`approvals`](Self::approvals).
    pub fn model_approvals(mut self, allowed: bool) -> Self {
        self.model_approvals = allowed;
        self
    }

    /// Also serve `builtins` (`oxydra mcp serve --tools`).
    pub fn builtin_tools(mut self, builtins: BuiltinTools) -> Self {
        self.builtins = Some(builtins);
        self
    }

    /// The server. Arguments larger than the coordinator's request body limit are
    /// refused, as `POST /runs` refuses such a body.
    pub fn build(self) -> Result<McpServer, McpServerError> {
        let handle = self.coordinator.handle();
        let mut objects = agent_tools(&handle);
        objects.push(Arc::new(CancelAgentRun(handle.clone())));
        if self.approvals {
            objects.push(Arc::new(ListPendingApprovals(handle.clone())));
            if self.model_approvals {
                objects.push(Arc::new(DecideApproval(handle.clone())));
            }
        }
        let tools = objects
            .into_iter()
            .map(served)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(McpServer {
            coordinator: handle,
            tools: tools.into(),
            builtins: self.builtins.map(Arc::new),
            workspace: self.workspace,
            max_argument_bytes: self.coordinator.config().body_limit_bytes,
            approvals: self.approvals,
            model_approvals: self.approvals && self.model_approvals,
        })
    }
}

impl McpServer {
    /// A builder of the server of `coordinator`'s tools.
    pub fn builder(coordinator: &Coordinator) -> McpServerBuilder {
        McpServerBuilder {
            coordinator: coordinator.clone(),
            workspace: PathBuf::from("."),
            approvals: false,
            model_approvals: false,
            builtins: None,
        }
    }

    /// The largest JSON-RPC message this server reads: arguments of the largest
    /// accepted size and room for their envelope. A message up to this size reaches
    /// the handler, which answers arguments over the limit with a JSON-RPC error.
    pub fn max_message_bytes(&self) -> usize {
        self.max_argument_bytes.saturating_add(ENVELOPE_BYTES)
    }

    /// The coordinator served, while it runs.
    pub(crate) fn coordinator(&self) -> Result<Coordinator, McpServerError> {
        self.coordinator
            .upgrade()
            .ok_or(McpServerError::CoordinatorGone)
    }

    /// Every tool as listed: the coordinator's, then the built-in ones.
    fn listings(&self) -> Vec<rmcp::model::Tool> {
        let mut listed: Vec<rmcp::model::Tool> = self
            .tools
            .iter()
            .map(|served| served.listing.clone())
            .collect();
        if let Some(builtins) = &self.builtins {
            listed.extend(builtins.listings());
        }
        listed
    }

    /// What the server tells its client about its tools.
    fn instructions(&self) -> String {
        let mut text = String::from(
            "Oxydra's agent coordinator. list_agent_blueprints shows the agents you can \
             start; start_agent_run starts one (a refused run's error carries the \
             parameters_schema to correct from); get_agent_run with wait_secs waits for \
             it to end; cancel_agent_run stops it.",
        );
        if self.model_approvals {
            text.push_str(
                " A run whose tool call needs a person's consent stops with status \
                 waiting_approval: list_pending_approvals shows its requests and \
                 decide_approval answers each (approve_once, approve_for_session, or deny \
                 with a reason the run's model reads); then the run goes on.",
            );
        } else if self.approvals {
            text.push_str(
                " A run whose tool call needs a person's consent stops with status \
                 waiting_approval: list_pending_approvals shows its requests; a person \
                 decides them (oxydra approvals approve|deny, or the web console of \
                 oxydra serve), then the run goes on. Tell the user it waits.",
            );
        }
        text
    }

    fn find(&self, name: &str) -> Option<&ServedTool> {
        self.tools
            .iter()
            .find(|served| served.listing.name.as_ref() == name)
    }
}

fn served(tool: Arc<dyn Tool>) -> Result<ServedTool, McpServerError> {
    let schema = tool.schema();
    let invalid = |message: String| McpServerError::InvalidTool {
        name: schema.name.clone(),
        message,
    };
    let validator =
        ParameterValidator::compile(&schema.parameters).map_err(|p| invalid(p.message))?;
    let input: JsonObject = match &schema.parameters {
        Value::Object(object) => object.clone(),
        _ => return Err(invalid("not a JSON object".to_owned())),
    };
    let annotations = annotations::for_tool(&schema.name)
        .ok_or_else(|| invalid("no MCP annotations for this tool".to_owned()))?;
    let listing = rmcp::model::Tool::new(schema.name.clone(), schema.description.clone(), input)
        .annotate(annotations);
    Ok(ServedTool {
        tool,
        listing,
        validator,
    })
}

/// A tool error (`isError: true`) whose text is `body` and, when it is JSON, whose
/// structured content is that JSON.
fn tool_error(body: String) -> CallToolResult {
    let structured = serde_json::from_str::<Value>(&body)
        .ok()
        .filter(Value::is_object);
    let mut result = CallToolResult::error(vec![ContentBlock::text(body)]);
    result.structured_content = structured;
    result
}

fn success(output: ToolOutput) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.content)]);
    result.structured_content = output.structured.filter(Value::is_object);
    result
}

/// The body of a refusal of arguments that do not match the tool's input schema, in
/// the shape of the API's errors.
fn invalid_arguments(tool: &str, issues: Vec<ValidationIssue>, schema: &JsonObject) -> String {
    json!({
        "error": "invalid_arguments",
        "message": format!("the arguments do not match the input schema of `{tool}`"),
        "validation_errors": issues,
        "input_schema": schema,
    })
    .to_string()
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("oxydra", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listings()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.listings()
            .into_iter()
            .find(|listing| listing.name.as_ref() == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let builtin = self
            .builtins
            .as_ref()
            .filter(|builtins| builtins.contains(&request.name));
        let served = self.find(&request.name);
        if served.is_none() && builtin.is_none() {
            let known: Vec<String> = self
                .listings()
                .iter()
                .map(|listing| listing.name.to_string())
                .collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                Some(json!({"tools": known})),
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let size = serde_json::to_vec(&args).map_or(usize::MAX, |bytes| bytes.len());
        if size > self.max_argument_bytes {
            return Err(ErrorData::invalid_params(
                format!(
                    "the arguments of `{}` are {size} bytes; at most {} are accepted",
                    request.name, self.max_argument_bytes
                ),
                None,
            ));
        }
        let Some(served) = served else {
            return match builtin {
                Some(builtins) => Ok(builtins.call(&request.name, &args, context.ct).await.into()),
                None => Err(ErrorData::internal_error("the tool went away", None)),
            };
        };
        let issues = served.validator.issues(&args);
        if !issues.is_empty() {
            let body = invalid_arguments(&request.name, issues, &served.listing.input_schema);
            return Ok(tool_error(body).into());
        }
        let ctx = ToolContext::new(self.workspace.clone(), context.ct, CallId::generate());
        let result = match served.tool.execute(args, &ctx).await {
            Ok(output) => success(output),
            // The coordinator's tools fail with the API's JSON error body.
            Err(ToolError::Failed(body)) => tool_error(body),
            Err(error) => tool_error(
                json!({"error": "tool_failed", "message": error.to_string()}).to_string(),
            ),
        };
        Ok(result.into())
    }
}
