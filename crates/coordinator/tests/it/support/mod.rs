//! Shared pieces of the integration tests: small tools, a served coordinator and a
//! client.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use oxydra_coordinator::{BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps, StepConfig};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;

/// Echoes `text`, with `{"echoed": text}` as structured output.
pub struct Echo;

#[async_trait]
impl Tool for Echo {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "echo",
            "Echoes `text`",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = args["text"].as_str().unwrap_or_default().to_owned();
        Ok(ToolOutput::structured(
            text.clone(),
            json!({"echoed": text, "args": args}),
        ))
    }
}

/// Always fails.
pub struct Broken;

#[async_trait]
impl Tool for Broken {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("broken", "Fails", json!({"type": "object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed("the disk is on fire".into()))
    }
}

/// Blocks until the test releases a permit (or the call is cancelled), counting how
/// many calls are inside at once and announcing each entry.
pub struct Gate {
    pub release: Arc<Semaphore>,
    pub in_flight: Arc<AtomicUsize>,
    pub max_in_flight: Arc<AtomicUsize>,
    pub entered: mpsc::UnboundedSender<String>,
}

#[async_trait]
impl Tool for Gate {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "gate",
            "Waits for the test",
            json!({"type": "object", "properties": {"label": {"type": "string"}}}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        // Leaves the count even when the executor drops this future on cancellation.
        let _leave = Leave(Arc::clone(&self.in_flight));
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let _ = self
            .entered
            .send(args["label"].as_str().unwrap_or_default().to_owned());
        let outcome = tokio::select! {
            permit = self.release.acquire() => {
                permit.map(|p| p.forget()).map_err(|_| ToolError::Failed("closed".into()))
            }
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        };
        outcome.map(|()| ToolOutput::text("released"))
    }
}

struct Leave(Arc<AtomicUsize>);

impl Drop for Leave {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The test's handle on a [`Gate`].
pub struct GateControl {
    pub release: Arc<Semaphore>,
    pub in_flight: Arc<AtomicUsize>,
    pub max_in_flight: Arc<AtomicUsize>,
    pub entered: mpsc::UnboundedReceiver<String>,
}

impl GateControl {
    /// Waits (up to 1 s) until no call is inside the gate.
    pub async fn wait_empty(&self) {
        for _ in 0..100 {
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("calls are still inside the gate");
    }
}

pub fn gate() -> (Gate, GateControl) {
    let release = Arc::new(Semaphore::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Gate {
            release: Arc::clone(&release),
            in_flight: Arc::clone(&in_flight),
            max_in_flight: Arc::clone(&max_in_flight),
            entered: tx,
        },
        GateControl {
            release,
            in_flight,
            max_in_flight,
            entered: rx,
        },
    )
}

pub fn crawler_schema() -> Value {
    json!({
        "type": "object",
        "required": ["url"],
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "depth": {"type": "integer", "minimum": 1}
        },
        "additionalProperties": false
    })
}

/// `researcher` (AI agent) and `web-crawler` (deterministic, one `echo` step).
pub fn standard_blueprints() -> Vec<BlueprintConfig> {
    vec![
        BlueprintConfig::agent(
            "researcher",
            "Research assistant",
            "You research questions.",
        ),
        BlueprintConfig::deterministic(
            "web-crawler",
            "Crawls websites",
            crawler_schema(),
            vec![StepConfig::new(
                "echo",
                json!({"text": "fetch {{url}} to depth {{depth}}"}),
            )],
        ),
    ]
}

/// A gate blueprint `waiter` taking an optional `label`.
pub fn gate_blueprint() -> BlueprintConfig {
    BlueprintConfig::deterministic(
        "waiter",
        "Waits at the gate",
        json!({"type": "object", "properties": {"label": {"type": "string"}}}),
        vec![StepConfig::new("gate", json!({"label": "{{label}}"}))],
    )
}

pub fn registry(extra: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.register(Echo).unwrap();
    tools.register(Broken).unwrap();
    for tool in extra {
        tools.register_arc(tool).unwrap();
    }
    tools
}

/// A coordinator served on an ephemeral loopback port.
pub struct Served {
    pub coordinator: Coordinator,
    pub base: String,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    pub server: Option<JoinHandle<Result<(), oxydra_coordinator::CoordinatorError>>>,
}

impl Served {
    pub async fn start(coordinator: Coordinator) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = coordinator.clone();
        let server = tokio::spawn(async move {
            serving
                .serve(listener, async move {
                    let _ = stopped.await;
                })
                .await
        });
        Self {
            coordinator,
            base,
            client: oxydra_http::client(),
            stop: Some(stop),
            server: Some(server),
        }
    }

    pub async fn with(
        config: CoordinatorConfig,
        blueprints: Vec<BlueprintConfig>,
        deps: RunnerDeps,
    ) -> Self {
        Self::start(Coordinator::new(config, blueprints, deps).await.unwrap()).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `(status, JSON body)` of a request.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("status {status}: body is not JSON: {text:?}"));
        (status, body)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.client.get(self.url(path))).await
    }

    pub async fn post_run(&self, body: Value) -> (u16, Value) {
        self.send(self.client.post(self.url("/runs")).json(&body))
            .await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.send(self.client.delete(self.url(path))).await
    }

    /// Waits for the run to end (returning as soon as it does; at most 30 s, so that a
    /// run that never ends fails its test by its status), then returns
    /// `GET /runs/{id}`. It waited 1 s at most, and a run of four shell steps under
    /// zsh took longer on the loaded CI machine.
    pub async fn finished(&self, run_id: &str) -> Value {
        self.coordinator
            .wait_for_run(run_id, std::time::Duration::from_secs(30))
            .await
            .unwrap();
        let (status, body) = self.get(&format!("/runs/{run_id}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Stops serving (gracefully) and waits for the server and the workers.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
    }
}
