//! Run trees on any backend: the store's tree accounts, and whole scenarios of agents
//! starting agents (a blueprint that starts itself four times a turn, recursion, a
//! tree's cost), each on a coordinator built on the given store.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{CallId, MessageRole, SafetyTier, ToolCall, ToolSchema, Usage};
use serde_json::{Value, json};

use super::RunStoreBackend;
use crate::agent_tools::{START_AGENT_RUN, StartAgentRun};
use crate::config::{BlueprintConfig, BlueprintLimits, CoordinatorConfig};
use crate::coordinator::{Coordinator, CoordinatorHandle};
use crate::run::{Run, RunLineage};
use crate::runners::RunnerDeps;
use crate::store::{RunStore, TreeReservation};

/// Lineage round-trips; reservations stop at the run cap and at the cost cap, even
/// when many are asked for at once; charges add up on the root.
pub async fn run_trees_are_counted_and_charged_on_the_root<B: RunStoreBackend>(backend: &B) {
    let store = Arc::new(backend.open());
    store.insert_run(super::pending("root")).await.unwrap();
    let child = Run::pending(
        "child",
        "researcher",
        json!({"prompt": "hi"}),
        RunLineage {
            root_run_id: "root".into(),
            parent_run_id: Some("root".into()),
            depth: 1,
        },
    );
    store.insert_run(child.clone()).await.unwrap();
    let stored = store.get_run("child").await.unwrap().unwrap();
    assert_eq!(stored.lineage, child.lineage);
    let root = store.get_run("root").await.unwrap().unwrap();
    assert_eq!(root.lineage, RunLineage::root("root"));

    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.reserve_tree_run("root", 5, None).await.unwrap() })
        })
        .collect();
    let mut reserved = 0;
    for task in tasks {
        match task.await.unwrap() {
            TreeReservation::Reserved => reserved += 1,
            TreeReservation::TooManyRuns(usage) => assert_eq!(usage.tree_runs, 5),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(reserved, 5, "exactly the cap, however many ask at once");

    store.charge_tree("root", 0.25).await.unwrap();
    store.charge_tree("root", 0.5).await.unwrap();
    let root = store.get_run("root").await.unwrap().unwrap();
    assert_eq!(root.tree.tree_runs, 5);
    assert!((root.tree.tree_cost - 0.75).abs() < 1e-9, "{:?}", root.tree);
    assert!(matches!(
        store
            .reserve_tree_run("root", 50, Some(0.75))
            .await
            .unwrap(),
        TreeReservation::BudgetSpent(_)
    ));
    assert_eq!(
        store.reserve_tree_run("root", 50, Some(1.0)).await.unwrap(),
        TreeReservation::Reserved
    );
    assert_eq!(
        store.reserve_tree_run("missing", 50, None).await.unwrap(),
        TreeReservation::NoRoot
    );
}

/// `start_agent_run` that records the ids of the runs it started.
struct RecordingStart {
    handle: Arc<OnceLock<CoordinatorHandle>>,
    started: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for RecordingStart {
    fn schema(&self) -> ToolSchema {
        StartAgentRun(Arc::new(CoordinatorHandle::default())).schema()
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let handle = self.handle.get().cloned().unwrap_or_default();
        let output = StartAgentRun(Arc::new(handle)).execute(args, ctx).await?;
        if let Some(run_id) = output
            .structured
            .as_ref()
            .and_then(|value| value["run_id"].as_str())
        {
            self.started.lock().unwrap().push(run_id.to_owned());
        }
        Ok(output)
    }
}

/// A turn calling `start_agent_run` for `agent` `count` times (distinct prompts).
fn start_turn(turn: usize, agent: &str, count: usize) -> ScriptedTurn {
    let calls = (0..count)
        .map(|k| {
            let arguments = json!({
                "agent_name": agent,
                "parameters": {"prompt": format!("task {turn}-{k}")}
            });
            ToolCall::new(
                CallId::from(format!("call_{turn}_{k}")),
                START_AGENT_RUN,
                arguments.to_string(),
            )
        })
        .collect();
    ScriptedTurn::tool_calls(calls)
}

/// An agent blueprint that may call `start_agent_run`, on provider `provider`.
fn starter(name: &str, provider: &str) -> BlueprintConfig {
    let mut blueprint = BlueprintConfig::agent(name, "Starts agents", "You delegate.");
    blueprint.tools = Some(vec![START_AGENT_RUN.into()]);
    blueprint.provider = Some(provider.into());
    blueprint
}

/// A coordinator on `store` whose `start_agent_run` records what it started.
async fn coordinator(
    store: Arc<dyn RunStore>,
    config: CoordinatorConfig,
    blueprints: Vec<BlueprintConfig>,
    providers: Vec<(&str, Arc<ScriptedProvider>)>,
) -> (Coordinator, Arc<Mutex<Vec<String>>>) {
    let handle = Arc::new(OnceLock::new());
    let started = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    registry
        .register(RecordingStart {
            handle: Arc::clone(&handle),
            started: Arc::clone(&started),
        })
        .unwrap();
    let mut deps = RunnerDeps::new(registry, ".");
    deps.model = Some("gpt-4o-mini".into());
    for (name, provider) in providers {
        deps = deps.with_named_provider(name, provider);
    }
    let coordinator = Coordinator::with_deps_and_store(config, blueprints, deps, store)
        .await
        .unwrap();
    let _ = handle.set(coordinator.handle());
    (coordinator, started)
}

/// Waits until the root and every run started in its tree have ended (none can start
/// a run after that); returns them.
async fn settle(
    coordinator: &Coordinator,
    root: &str,
    started: &Mutex<Vec<String>>,
) -> (Run, Vec<Run>) {
    let mut seen = 0;
    loop {
        let ids: Vec<String> = std::iter::once(root.to_owned())
            .chain(started.lock().unwrap().iter().cloned())
            .collect();
        let mut runs = Vec::new();
        for id in &ids {
            let run = coordinator
                .wait_for_run(id, Duration::from_secs(30))
                .await
                .unwrap();
            assert!(run.status.is_terminal(), "{id} did not end: {run:?}");
            runs.push(run);
        }
        if ids.len() == seen {
            let root = runs.remove(0);
            return (root, runs);
        }
        seen = ids.len();
    }
}

/// The attack of issue 26 (5b): a blueprint whose model starts it four times every
/// turn. One run through the API stays one tree of at most `max_runs_per_root` more
/// runs, none deeper than `max_run_depth`, and the provider is called at most
/// `max_turns` times per run; the refusals reach the model as tool errors.
pub async fn a_self_starting_blueprint_is_bounded(store: Arc<dyn RunStore>) {
    const MAX_RUNS: u32 = 6;
    const MAX_DEPTH: u32 = 2;
    const MAX_TURNS: usize = 3;
    let provider = Arc::new(ScriptedProvider::new(
        (0..400).map(|turn| start_turn(turn, "looper", 4)).collect(),
    ));
    let mut looper = starter("looper", "scripted");
    looper.allow_recursion = true;
    looper.limits = Some(BlueprintLimits {
        max_turns: Some(MAX_TURNS),
        ..BlueprintLimits::default()
    });
    let config = CoordinatorConfig {
        max_run_depth: MAX_DEPTH,
        max_runs_per_root: MAX_RUNS,
        ..CoordinatorConfig::default()
    };
    let (coordinator, started) = coordinator(
        store,
        config,
        vec![looper],
        vec![("scripted", Arc::clone(&provider))],
    )
    .await;
    let root = coordinator
        .create_run("looper", json!({"prompt": "go"}))
        .await
        .unwrap();
    let (root, children) = settle(&coordinator, &root.run_id, &started).await;

    assert_eq!(root.lineage, RunLineage::root(&root.run_id));
    assert_eq!(children.len(), MAX_RUNS as usize, "the tree filled its cap");
    assert_eq!(root.tree.tree_runs, MAX_RUNS);
    for child in &children {
        assert_eq!(child.lineage.root_run_id, root.run_id);
        assert!((1..=MAX_DEPTH).contains(&child.lineage.depth), "{child:?}");
        assert!(child.lineage.parent_run_id.is_some());
    }
    let calls = provider.requests();
    let bound = (1 + MAX_RUNS as usize) * MAX_TURNS;
    assert!(
        calls.len() <= bound,
        "{} provider calls > {bound}",
        calls.len()
    );
    assert!(
        provider.remaining() > 0,
        "the caps, not the script, ended it"
    );
    let refusals: Vec<String> = calls
        .iter()
        .flat_map(|request| request.messages.iter())
        .filter(|message| message.role == MessageRole::Tool)
        .map(|message| message.text().to_owned())
        .filter(|text| text.contains("run_tree_limit"))
        .collect();
    assert!(!refusals.is_empty(), "the model saw no refusal");
    coordinator.shutdown().await;
}

/// A blueprint does not start itself, directly or through another (A → B → A),
/// unless it sets `allow_recursion`; the refusal is a tool error the model reads.
pub async fn a_blueprint_does_not_start_itself_unless_allowed(store: Arc<dyn RunStore>) {
    let alpha = Arc::new(ScriptedProvider::new(vec![
        start_turn(0, "beta", 1),
        start_turn(1, "alpha", 1),
        ScriptedTurn::text("done"),
    ]));
    let beta = Arc::new(ScriptedProvider::new(vec![
        start_turn(0, "alpha", 1),
        ScriptedTurn::text("done"),
    ]));
    let (coordinator, started) = coordinator(
        store,
        CoordinatorConfig::default(),
        vec![starter("alpha", "alpha"), starter("beta", "beta")],
        vec![("alpha", Arc::clone(&alpha)), ("beta", Arc::clone(&beta))],
    )
    .await;
    let root = coordinator
        .create_run("alpha", json!({"prompt": "go"}))
        .await
        .unwrap();
    let (root, children) = settle(&coordinator, &root.run_id, &started).await;
    assert_eq!(children.len(), 1, "only beta started: {children:?}");
    assert_eq!(children[0].agent_name, "beta");
    assert_eq!(root.tree.tree_runs, 1);
    for provider in [&alpha, &beta] {
        let refused = provider
            .requests()
            .iter()
            .flat_map(|request| request.messages.clone())
            .any(|message| {
                message.role == MessageRole::Tool
                    && message.text().contains("\"bound\":\"recursion\"")
            });
        assert!(refused, "the model was not told of the refused recursion");
    }
    coordinator.shutdown().await;
}

/// The root's `max_cost` covers its tree: a child's provider calls are charged to the
/// root, a run is not started once the tree spent the budget, and the root itself is
/// stopped by what its children spent.
pub async fn the_roots_max_cost_covers_its_tree(store: Arc<dyn RunStore>) {
    // gpt-4o-mini: $0.15 per million input tokens.
    let costing = |tokens: u64| Usage {
        input_tokens: tokens,
        ..Usage::default()
    };
    // The root's second answer waits for the test to open `gate`, once the worker
    // ended; its third call must never be made.
    let gate = Arc::new(tokio::sync::Notify::new());
    let root_provider = Arc::new(ScriptedProvider::new(vec![
        start_turn(0, "worker", 1).with_usage(costing(10_000)),
        ScriptedTurn::gated(
            Arc::clone(&gate),
            // Arguments the schema refuses: a tool error, and the run goes on.
            ScriptedTurn::tool_call("again", START_AGENT_RUN, "{}").with_usage(costing(10_000)),
        ),
        ScriptedTurn::text("should not be reached"),
    ]));
    let worker_provider = Arc::new(ScriptedProvider::new(vec![
        // $0.06, beyond the root's $0.05, then an attempt to start another run.
        start_turn(0, "leaf", 1).with_usage(costing(400_000)),
        ScriptedTurn::text("should not be reached"),
    ]));
    let mut spender = starter("spender", "root");
    spender.limits = Some(BlueprintLimits {
        max_cost: Some(0.05),
        ..BlueprintLimits::default()
    });
    let worker = starter("worker", "worker");
    let leaf = BlueprintConfig::agent("leaf", "Leaf", "You answer.");
    let (coordinator, started) = coordinator(
        store,
        CoordinatorConfig::default(),
        vec![spender, worker, leaf],
        vec![
            ("root", Arc::clone(&root_provider)),
            ("worker", Arc::clone(&worker_provider)),
        ],
    )
    .await;
    let root = coordinator
        .create_run("spender", json!({"prompt": "go"}))
        .await
        .unwrap();
    // The worker runs (and spends) while the root waits for its second turn.
    let worker_id = loop {
        if let Some(id) = started.lock().unwrap().first().cloned() {
            break id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let worker_run = coordinator
        .wait_for_run(&worker_id, Duration::from_secs(30))
        .await
        .unwrap();
    gate.notify_one();
    let (root, children) = settle(&coordinator, &root.run_id, &started).await;

    assert_eq!(children.len(), 1, "no leaf was started: {children:?}");
    assert_eq!(root.tree.tree_runs, 1);
    let error = worker_run.error.expect("the worker failed");
    assert_eq!(error.kind, "budget_exceeded", "{error:?}");
    assert_eq!(worker_provider.requests().len(), 1);
    let root_error = root.error.clone().expect("the root failed");
    assert_eq!(root_error.kind, "budget_exceeded", "{root_error:?}");
    assert!(
        root_provider.requests().len() <= 2,
        "the root went on past its tree's budget"
    );
    assert!(
        root.tree.tree_cost >= 0.05 && root.tree.tree_cost < 0.07,
        "{:?}",
        root.tree
    );
    coordinator.shutdown().await;
}
