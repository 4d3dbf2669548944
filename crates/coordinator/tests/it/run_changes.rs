//! A run's changes to the workspace and their revert, over real HTTP:
//! `GET /runs/{id}/changes` lists what each turn changed (kind, counts, diff) and
//! `POST /runs/{id}/revert` takes it back — refused while the run is active, refused
//! (unless forced) when someone changed a file since, for unknown runs and turns, and
//! bodies that are not JSON, and by a server of another workspace; the revert is
//! recorded, so it can be undone in turn.

use crate::support;

use std::sync::Arc;

use oxydra_coordinator::{BlueprintConfig, CoordinatorConfig, RunnerDeps};
use oxydra_executor::AlwaysApprove;
use oxydra_memory::{CheckpointStore, Memory, SqliteMemory};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::BuiltinToolsConfig;
use oxydra_tools::builtin::FileWrite;
use oxydra_tools::checkpoint::CheckpointConfig;
use serde_json::{Value, json};
use support::{Served, registry};

fn writer() -> BlueprintConfig {
    let mut agent = BlueprintConfig::agent("writer", "Writes files", "You write files.");
    agent.tools = Some(vec!["file_write".into(), "gate".into()]);
    agent
}

/// A coordinator over `workspace` whose `writer` agent follows `turns`, recording
/// checkpoints when `recorded`.
async fn served(
    workspace: &std::path::Path,
    turns: Vec<ScriptedTurn>,
    recorded: bool,
    config: CoordinatorConfig,
) -> (Served, support::GateControl) {
    let (gate, control) = support::gate();
    let tools = registry(vec![
        Arc::new(FileWrite::new(&BuiltinToolsConfig::default())),
        Arc::new(gate),
    ]);
    let provider = Arc::new(ScriptedProvider::new(turns));
    let mut deps = RunnerDeps::new(tools, workspace).with_provider(provider, "test-model");
    deps.permission_broker = Some(Arc::new(AlwaysApprove));
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    if recorded {
        let store: Arc<dyn CheckpointStore> = memory.clone();
        deps = deps.with_checkpoints(store, CheckpointConfig::default());
    }
    deps.memory = Some(memory as Arc<dyn Memory>);
    let server = Served::with(config, vec![writer()], deps).await;
    (server, control)
}

fn write(id: &str, path: &str, content: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(
        id,
        "file_write",
        &json!({"path": path, "content": content}).to_string(),
    )
}

async fn run(server: &Served) -> String {
    let (status, created) = server
        .post_run(json!({"agent_name": "writer", "parameters": {"prompt": "Write."}}))
        .await;
    assert_eq!(status, 201, "{created}");
    created["run_id"].as_str().unwrap().to_owned()
}

async fn revert(server: &Served, run_id: &str, body: Option<Value>) -> (u16, Value) {
    let request = server
        .client
        .post(server.url(&format!("/runs/{run_id}/revert")))
        .header("content-type", "application/json");
    let request = match body {
        Some(body) => request.body(body.to_string()),
        None => request,
    };
    server.send(request).await
}

fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "one\nold\n").unwrap();
    (dir, root)
}

fn path<'a>(turn: &'a Value, name: &str) -> &'a Value {
    turn["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == name)
        .unwrap_or_else(|| panic!("{name} not in {turn}"))
}

#[tokio::test]
async fn a_run_s_changes_are_listed_then_reverted_and_the_revert_is_recorded() {
    let (_dir, root) = workspace();
    let turns = vec![
        write("c1", "a.txt", "one\nnew\n"),
        write("c2", "made/b.txt", "made \u{1b}[31mred\u{1b}[0m\n"),
        ScriptedTurn::text("done"),
    ];
    let (server, _gate) = served(&root, turns, true, CoordinatorConfig::default()).await;
    let run_id = run(&server).await;
    assert_eq!(server.finished(&run_id).await["status"], "completed");

    let (status, changes) = server.get(&format!("/runs/{run_id}/changes")).await;
    assert_eq!(status, 200, "{changes}");
    assert_eq!(changes["run_id"], run_id.as_str());
    let turns = changes["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{changes}");
    assert_eq!(
        (turns[0]["turn"].as_u64(), turns[0]["undone"].as_bool()),
        (Some(1), Some(false))
    );
    let a = path(&turns[0], "a.txt");
    assert_eq!(a["kind"], "modified");
    assert_eq!(
        (a["lines_added"].as_u64(), a["lines_removed"].as_u64()),
        (Some(1), Some(1))
    );
    let diff = a["diff"].as_str().unwrap();
    assert!(diff.contains("-old") && diff.contains("+new"), "{diff}");
    let b = path(&turns[0], "made/b.txt");
    assert_eq!(b["kind"], "added");
    // An escape the model wrote is shown escaped, never sent as one.
    let diff = b["diff"].as_str().unwrap();
    assert!(diff.contains("+made \\u{1b}[31mred"), "{diff}");
    assert!(!changes.to_string().contains("\\u001b"), "{changes}");
    assert_eq!(path(&turns[0], "made")["kind"], "added");

    // No body at all: everything the run changed.
    let (status, reverted) = revert(&server, &run_id, None).await;
    assert_eq!(status, 200, "{reverted}");
    assert_eq!(reverted["turns"], json!([1]));
    let restored: Vec<&str> = reverted["restored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for name in ["a.txt", "made", "made/b.txt"] {
        assert!(restored.contains(&name), "{name}: {reverted}");
    }
    assert_eq!(reverted["forced"], false);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nold\n"
    );
    assert!(!root.join("made").exists());

    // The revert is the turn's checkpoint now, marked undone: it can be taken back.
    let (_, after) = server.get(&format!("/runs/{run_id}/changes")).await;
    let turns = after["turns"].as_array().unwrap();
    assert_eq!(
        (turns.len(), turns[0]["undone"].as_bool()),
        (1, Some(true)),
        "{after}"
    );
    // Reverting again has nothing left to revert, and keeps that record.
    let (status, again) = revert(&server, &run_id, Some(json!({}))).await;
    assert_eq!((status, &again["turns"]), (200, &json!([])), "{again}");
    let (_, kept) = server.get(&format!("/runs/{run_id}/changes")).await;
    assert_eq!(kept["turns"].as_array().unwrap().len(), 1, "{kept}");
    server.stop().await;
}

#[tokio::test]
async fn a_file_changed_since_is_not_overwritten_unless_forced() {
    let (_dir, root) = workspace();
    let turns = vec![
        write("c1", "a.txt", "one\nnew\n"),
        ScriptedTurn::text("done"),
    ];
    let (server, _gate) = served(&root, turns, true, CoordinatorConfig::default()).await;
    let run_id = run(&server).await;
    server.finished(&run_id).await;
    std::fs::write(root.join("a.txt"), "one\ntheirs\n").unwrap();

    let (status, refused) = revert(&server, &run_id, Some(json!({"to_turn": 1}))).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"], "revert_conflicts");
    let conflict = &refused["conflicts"][0];
    assert_eq!(conflict["path"], "a.txt");
    assert_eq!(conflict["found"]["kind"], "file");
    let diff = conflict["diff"].as_str().unwrap();
    assert!(diff.contains("-theirs") && diff.contains("+old"), "{diff}");
    // Nothing was changed.
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\ntheirs\n"
    );

    let (status, forced) = revert(&server, &run_id, Some(json!({"force": true}))).await;
    assert_eq!(status, 200, "{forced}");
    assert_eq!(
        (&forced["forced"], &forced["restored"]),
        (&json!(true), &json!(["a.txt"]))
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nold\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_active_run_is_not_reverted() {
    let (_dir, root) = workspace();
    let turns = vec![
        write("c1", "a.txt", "one\nnew\n"),
        ScriptedTurn::tool_call("c2", "gate", r#"{"label":"hold"}"#),
        ScriptedTurn::text("done"),
    ];
    let (server, mut gate) = served(&root, turns, true, CoordinatorConfig::default()).await;
    let run_id = run(&server).await;
    assert_eq!(gate.entered.recv().await.unwrap(), "hold");

    let (status, refused) = revert(&server, &run_id, None).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(
        (&refused["error"], &refused["status"]),
        (&json!("run_active"), &json!("running"))
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nnew\n"
    );
    // Listing is fine while it runs.
    let (status, _) = server.get(&format!("/runs/{run_id}/changes")).await;
    assert_eq!(status, 200);

    gate.release.add_permits(1);
    server.finished(&run_id).await;
    let (status, reverted) = revert(&server, &run_id, None).await;
    assert_eq!(status, 200, "{reverted}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nold\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_runs_turns_and_bodies_are_refused_with_json() {
    let (_dir, root) = workspace();
    let turns = vec![
        write("c1", "a.txt", "one\nnew\n"),
        ScriptedTurn::text("done"),
    ];
    let (server, _gate) = served(&root, turns, true, CoordinatorConfig::default()).await;
    let run_id = run(&server).await;
    server.finished(&run_id).await;

    let (status, body) = server.get("/runs/run_nope/changes").await;
    assert_eq!(
        (status, &body["error"]),
        (404, &json!("run_not_found")),
        "{body}"
    );
    let (status, body) = revert(&server, "run_nope", None).await;
    assert_eq!(
        (status, &body["error"]),
        (404, &json!("run_not_found")),
        "{body}"
    );
    let (status, body) = server.get("/runs/%FF/changes").await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_path")),
        "{body}"
    );
    for turn in [0, 2, u64::MAX] {
        let (status, body) = revert(&server, &run_id, Some(json!({"to_turn": turn}))).await;
        assert_eq!(
            (status, &body["error"]),
            (404, &json!("turn_not_found")),
            "{turn}: {body}"
        );
        assert_eq!(body["turns"], 1, "{body}");
    }
    let (status, body) = revert(&server, &run_id, Some(json!({"to_turn": -1}))).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_request")),
        "{body}"
    );
    let (status, body) = revert(&server, &run_id, Some(json!({"everything": true}))).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_request")),
        "{body}"
    );
    let bad = server
        .client
        .post(server.url(&format!("/runs/{run_id}/revert")))
        .header("content-type", "application/json")
        .body("{not json");
    let (status, body) = server.send(bad).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("malformed_json")),
        "{body}"
    );
    // A body a web page could send without asking (no JSON content type) is refused.
    let plain = server
        .client
        .post(server.url(&format!("/runs/{run_id}/revert")))
        .header("content-type", "text/plain")
        .body("{}");
    let (status, body) = server.send(plain).await;
    assert_eq!(
        (status, &body["error"]),
        (415, &json!("unsupported_media_type")),
        "{body}"
    );
    let bare = server
        .client
        .post(server.url(&format!("/runs/{run_id}/revert")));
    let (status, _) = server.send(bare).await;
    assert_eq!(status, 415);
    // None of it changed the file.
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nnew\n"
    );
    server.stop().await;
}

#[tokio::test]
async fn without_a_checkpoint_store_changes_are_not_recorded_and_say_so() {
    let (_dir, root) = workspace();
    let turns = vec![
        write("c1", "a.txt", "one\nnew\n"),
        ScriptedTurn::text("done"),
    ];
    let (server, _gate) = served(&root, turns, false, CoordinatorConfig::default()).await;
    let run_id = run(&server).await;
    server.finished(&run_id).await;
    let (status, body) = server.get(&format!("/runs/{run_id}/changes")).await;
    assert_eq!(
        (status, &body["error"]),
        (404, &json!("changes_not_recorded")),
        "{body}"
    );
    let (status, body) = revert(&server, &run_id, None).await;
    assert_eq!(
        (status, &body["error"]),
        (404, &json!("changes_not_recorded")),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_routes_need_the_token_and_are_in_the_openapi_document() {
    let (_dir, root) = workspace();
    let config = CoordinatorConfig {
        auth_token: Some("s3cret-token".into()),
        ..CoordinatorConfig::default()
    };
    let (server, _gate) = served(&root, vec![ScriptedTurn::text("done")], true, config).await;
    let (status, body) = server.get("/runs/run_x/changes").await;
    assert_eq!(
        (status, &body["error"]),
        (401, &json!("unauthorized")),
        "{body}"
    );
    let (status, body) = revert(&server, "run_x", None).await;
    assert_eq!(
        (status, &body["error"]),
        (401, &json!("unauthorized")),
        "{body}"
    );
    let document = server.coordinator.openapi();
    assert!(document["paths"]["/runs/{id}/changes"]["get"].is_object());
    let post = &document["paths"]["/runs/{id}/revert"]["post"];
    for code in ["200", "404", "409", "415"] {
        assert!(post["responses"][code].is_object(), "{code}: {post}");
    }
    assert!(document["components"]["schemas"]["TurnChanges"].is_object());
    server.stop().await;
}

#[tokio::test]
async fn a_run_recorded_in_another_workspace_is_not_reverted_here() {
    let (_dir, root) = workspace();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("a.txt"), "one\nnew\n").unwrap();
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let runs: Arc<dyn oxydra_coordinator::RunStore> =
        Arc::new(oxydra_coordinator::SqliteRunStore::open(None).unwrap());
    // Two servers on one database, each with its own workspace.
    let coordinator = |workspace: &std::path::Path, turns: Vec<ScriptedTurn>| {
        let tools = registry(vec![Arc::new(FileWrite::new(
            &BuiltinToolsConfig::default(),
        ))]);
        let provider = Arc::new(ScriptedProvider::new(turns));
        let store: Arc<dyn CheckpointStore> = memory.clone();
        let mut deps = RunnerDeps::new(tools, workspace)
            .with_provider(provider, "test-model")
            .with_checkpoints(store, CheckpointConfig::default());
        deps.permission_broker = Some(Arc::new(AlwaysApprove));
        deps.memory = Some(memory.clone() as Arc<dyn Memory>);
        let mut agent = writer();
        agent.tools = Some(vec!["file_write".into()]);
        oxydra_coordinator::Coordinator::with_deps_and_store(
            CoordinatorConfig::default(),
            vec![agent],
            deps,
            Arc::clone(&runs),
        )
    };
    let turns = vec![
        write("c1", "a.txt", "one\nnew\n"),
        ScriptedTurn::text("done"),
    ];
    let here = Served::start(coordinator(&root, turns).await.unwrap()).await;
    let run_id = run(&here).await;
    here.finished(&run_id).await;
    let there = Served::start(coordinator(other.path(), vec![]).await.unwrap()).await;

    let (status, refused) = revert(&there, &run_id, Some(json!({"force": true}))).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"], "workspace_mismatch");
    assert_eq!(refused["recorded"], root.to_string_lossy().as_ref());
    // Neither tree was touched; the server of the run's workspace reverts it.
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nnew\n"
    );
    assert_eq!(
        std::fs::read_to_string(other.path().join("a.txt")).unwrap(),
        "one\nnew\n"
    );
    let (status, reverted) = revert(&here, &run_id, None).await;
    assert_eq!(status, 200, "{reverted}");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nold\n"
    );
    there.stop().await;
    here.stop().await;
}
