//! Configuration: the coordinator's own settings and the `[[agents]]` blueprint entries
//! of the config file (docs/configuration.md).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One MiB, the default request body limit.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// The default number of runs executing at once.
pub const DEFAULT_MAX_CONCURRENT_RUNS: usize = 4;

/// The default cap on connections the HTTP API serves at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The default time a client has to send a request's headers once it began: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time a client has to send a request's body once its headers came: 30 s.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default time a connection may stay open with nothing in flight: 60 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The default deepest run tree: a run started through the API is at depth 0, the
/// runs it starts at 1, theirs at 2, and so on up to this.
pub const DEFAULT_MAX_RUN_DEPTH: u32 = 3;

/// The default number of runs one run tree may start, its root not counted.
pub const DEFAULT_MAX_RUNS_PER_ROOT: u32 = 32;

/// The default period of the sweep that denies lapsed approval requests: 10 s.
pub const DEFAULT_APPROVAL_SWEEP: Duration = Duration::from_secs(10);

/// The longest period of that sweep: 30 s (a lapsed request is a denial within it).
pub const MAX_APPROVAL_SWEEP: Duration = Duration::from_secs(30);

/// The address the HTTP API listens on when nothing else is said.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// How long a consent request deferred to a person waits for a decision when nothing
/// else is said: a day.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(24 * 3600);

/// The longest wait for a decision on a consent request: 30 days.
pub const MAX_APPROVAL_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Settings of the coordinator (not of its blueprints). Its serde form is the `[serve]`
/// table of `oxydra.toml` (docs/configuration.md): every key optional, each default
/// written once, here; [`CoordinatorConfig::validate`] checks the values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoordinatorConfig {
    /// The address the HTTP API listens on, an IP address with its port or
    /// `host:port` (default [`DEFAULT_ADDR`]). The coordinator does not bind it itself:
    /// `oxydra serve` (or an embedder) binds it and hands the listener to
    /// [`Coordinator::serve`](crate::Coordinator::serve).
    pub addr: String,
    /// SQLite file holding blueprints and runs; `None` keeps them in memory (tests).
    /// Not a file key: the database is `[memory] db`.
    #[serde(skip)]
    pub db: Option<PathBuf>,
    /// How many runs execute at once; further runs wait `pending` (default 4).
    pub max_concurrent_runs: usize,
    /// Largest request body the HTTP API accepts, in bytes (default 1 MiB).
    pub body_limit_bytes: usize,
    /// When set, every HTTP route requires `Authorization: Bearer <token>`. Not a file
    /// key (a token is no thing to write in a file): see `auth_token_env`.
    #[serde(skip)]
    pub auth_token: Option<String>,
    /// The environment variable holding the bearer token, read by whoever starts the
    /// API (`oxydra serve`: absent, `OXYDRA_SERVE_TOKEN` if set, else no auth).
    pub auth_token_env: Option<String>,
    /// Whether a non-loopback address may be served without a token (anyone who can
    /// reach it may start runs); default `false`.
    pub allow_unauthenticated: bool,
    /// How long a run waits for a person's decision on a consent request deferred to
    /// them, in seconds (default a day, at most 30 days); past it the request is a
    /// denial.
    pub approval_ttl_secs: u64,
    /// How long `DELETE /runs/{id}` waits for a running run to stop before answering
    /// with its state at that moment, in milliseconds (default 5000).
    pub cancel_wait_ms: u64,
    /// Host names (`api.example.lan`, or `name:port` for one port only) accepted in the
    /// `Host` header besides the loopback names `localhost`, `127.0.0.1` and `[::1]`.
    /// Without a token the `Host` check always applies; with a token it applies only
    /// when this list is non-empty (the token is then what authenticates a client).
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://dash.example.lan`, `http://localhost:3000`) accepted in the
    /// `Origin` header besides the loopback origins of the port the API listens on.
    pub allowed_origins: Vec<String>,
    /// Whether `/` serves the web console (docs/coordinator.md, "Web console").
    /// Not a file key: `oxydra serve` turns it on for loopback addresses unless
    /// `--no-console`. Off by default in the library.
    #[serde(skip)]
    pub console: bool,
    /// With a store shared by several coordinators: how long a worker's claim on a run
    /// lasts unless renewed, in milliseconds (default 15000). A worker renews it every
    /// third of that; a run whose worker died is taken over once it lapses.
    pub run_lease_ttl_ms: u64,
    /// Most connections the HTTP API serves at once (default 256), lowered to fit the
    /// file limit; with all taken, a new one displaces the oldest never-authenticated
    /// connection without a request in flight, else waits in the kernel's accept queue
    /// until one ends.
    pub max_connections: usize,
    /// How long a client has to send a request's headers once it sent the first byte
    /// of it, in milliseconds (default 10000); the connection is closed otherwise.
    pub header_read_timeout_ms: u64,
    /// How long a client has to send a request's body once its headers came, in
    /// milliseconds (default 30000); it is answered `408` and closed otherwise.
    pub body_read_timeout_ms: u64,
    /// How long a connection may stay open with no request in flight and no byte of
    /// the next one, in milliseconds (default 60000); a fresh connection included.
    pub idle_timeout_ms: u64,
    /// Deepest a run tree may grow (default 3): `start_agent_run` from a run at this
    /// depth is refused with a tool error.
    pub max_run_depth: u32,
    /// Most runs one run tree may start, its root not counted (default 32); further
    /// `start_agent_run` calls in the tree are refused with a tool error.
    pub max_runs_per_root: u32,
    /// How often the coordinator denies the approval requests that lapsed (their
    /// `expires_at` passed undecided) and queues their runs again, in milliseconds
    /// (default 10000, at most [`MAX_APPROVAL_SWEEP`]).
    pub approval_sweep_ms: u64,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            addr: DEFAULT_ADDR.to_owned(),
            db: None,
            max_concurrent_runs: DEFAULT_MAX_CONCURRENT_RUNS,
            body_limit_bytes: DEFAULT_BODY_LIMIT,
            auth_token: None,
            auth_token_env: None,
            allow_unauthenticated: false,
            approval_ttl_secs: DEFAULT_APPROVAL_TTL.as_secs(),
            cancel_wait_ms: 5000,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            console: false,
            run_lease_ttl_ms: 15_000,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout_ms: millis(DEFAULT_HEADER_READ_TIMEOUT),
            body_read_timeout_ms: millis(DEFAULT_BODY_READ_TIMEOUT),
            idle_timeout_ms: millis(DEFAULT_IDLE_TIMEOUT),
            max_run_depth: DEFAULT_MAX_RUN_DEPTH,
            max_runs_per_root: DEFAULT_MAX_RUNS_PER_ROOT,
            approval_sweep_ms: millis(DEFAULT_APPROVAL_SWEEP),
        }
    }
}

/// `duration` in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl CoordinatorConfig {
    /// The cancel wait as a duration.
    pub fn cancel_wait(&self) -> Duration {
        Duration::from_millis(self.cancel_wait_ms)
    }

    /// The run lease's time to live as a duration.
    pub fn run_lease_ttl(&self) -> Duration {
        Duration::from_millis(self.run_lease_ttl_ms)
    }

    /// The period of the approval expiry sweep as a duration.
    pub fn approval_sweep(&self) -> Duration {
        Duration::from_millis(self.approval_sweep_ms)
    }

    /// How long a deferred consent request waits for a decision, as a duration.
    pub fn approval_ttl(&self) -> Duration {
        Duration::from_secs(self.approval_ttl_secs)
    }

    /// The body read timeout as a duration.
    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_millis(self.body_read_timeout_ms)
    }
}

/// The two kinds of blueprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlueprintKind {
    /// An AI agent: a model with tools, invoked with the implicit `{prompt}` schema.
    Agent,
    /// A fixed pipeline of tool calls with templated arguments; no model.
    Deterministic,
}

impl BlueprintKind {
    /// The wire name: `agent` or `deterministic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Deterministic => "deterministic",
        }
    }

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "agent" => Some(Self::Agent),
            "deterministic" => Some(Self::Deterministic),
            _ => None,
        }
    }
}

/// One `[[agents]]` entry of the config file.
///
/// Which fields apply depends on `type`; [`crate::Blueprint::from_config`] refuses a
/// field that does not belong to the kind (an AI agent with `steps`, a deterministic
/// blueprint with a `system_prompt`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlueprintConfig {
    /// Unique name, used as `agent_name` when starting runs.
    pub name: String,
    /// `agent` or `deterministic`.
    #[serde(rename = "type")]
    pub kind: BlueprintKind,
    /// What it does (shown in listings).
    #[serde(default)]
    pub description: String,
    /// AI agent: the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// AI agent: the name of a provider in [`crate::RunnerDeps::providers`] to use
    /// instead of the default one (the CLI names them `openai` / `anthropic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// AI agent: the model to use instead of the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// AI agent: the tools it may call. Absent: every tool of the registry (the
    /// coordinator's own `list_agent_blueprints` / `start_agent_run` / `get_agent_run`
    /// only when named here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The Privileged tools (`shell_exec`, …) this blueprint may use. A blueprint that
    /// names a Privileged tool in `tools` or a step without listing it here is refused
    /// at load; an AI agent without `tools` gets only the Privileged tools listed here.
    /// Each call still needs consent from the permission broker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_privileged: Vec<String>,
    /// Tool rules for this blueprint, on top of the global ones (same shape as `[[rules]]`).
    #[serde(default, skip_serializing)]
    pub rules: Vec<oxydra_executor::ToolRule>,
    /// AI agent: budgets overriding the runtime defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<BlueprintLimits>,
    /// Deterministic: JSON Schema (Draft 7) of the run parameters (required). AI agents
    /// must leave it out: the implicit `{prompt}` schema applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_schema: Option<serde_json::Value>,
    /// Deterministic: the tool calls, run in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepConfig>,
    /// Whether a run of this blueprint may be started from a run tree that already
    /// runs it (by itself, or further down: A starts B, B starts A). Default `false`:
    /// `start_agent_run` refuses with a tool error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_recursion: bool,
}

impl BlueprintConfig {
    /// An AI agent blueprint with a name, description and system prompt; every other
    /// field empty.
    pub fn agent(
        name: impl Into<String>,
        description: impl Into<String>,
        system_prompt: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            kind: BlueprintKind::Agent,
            description: description.into(),
            system_prompt: Some(system_prompt.into()),
            provider: None,
            model: None,
            tools: None,
            allow_privileged: Vec::new(),
            rules: Vec::new(),
            limits: None,
            parameters_schema: None,
            steps: Vec::new(),
            allow_recursion: false,
        }
    }

    /// A deterministic blueprint with a name, description, parameters schema and steps.
    pub fn deterministic(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters_schema: serde_json::Value,
        steps: Vec<StepConfig>,
    ) -> Self {
        Self {
            name: name.into(),
            kind: BlueprintKind::Deterministic,
            description: description.into(),
            system_prompt: None,
            provider: None,
            model: None,
            tools: None,
            allow_privileged: Vec::new(),
            rules: Vec::new(),
            limits: None,
            parameters_schema: Some(parameters_schema),
            steps,
            allow_recursion: false,
        }
    }
}

/// One `[[agents.steps]]` entry: a tool and its templated arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// The tool to call.
    pub tool: String,
    /// Its arguments (a table). A string that is exactly `{{name}}` becomes the
    /// parameter's value with its JSON type; `{{name}}` inside a longer string is
    /// replaced by the parameter as text.
    #[serde(default = "empty_object")]
    pub args: serde_json::Value,
}

impl StepConfig {
    /// A step calling `tool` with `args`.
    pub fn new(tool: impl Into<String>, args: serde_json::Value) -> Self {
        Self {
            tool: tool.into(),
            args,
        }
    }
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// `[agents.limits]`: budgets of an AI agent blueprint.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlueprintLimits {
    /// Most turns a run may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<usize>,
    /// Most a run may cost, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Longest a single turn may take, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_timeout_secs: Option<u64>,
}
