//! Three `oxydra serve` workers on one PostgreSQL database: 100 runs posted across
//! them, one worker killed with `kill -9` mid-run, and every run completes exactly once
//! with its whole conversation (the killed worker's runs taken over and continued from
//! their stored sessions). And a run waiting for approval that outlives every worker.

use crate::common;

use std::time::{Duration, Instant};

use common::serve::{Server, get_json, runtime, sandbox_with_config};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_postgres::testing::TestDatabase;
use oxydra_test_support::{MockServer, openai};
use serde_json::{Value, json};

use common::approvals::{
    ASK_CONFIG, WRITTEN, decide, start_run, the_pending_write, wait_for_status, writer_provider,
};

const RUNS: usize = 100;

const CONFIG: &str = r#"
[[agents]]
name = "researcher"
type = "agent"
description = "Research assistant"
system_prompt = "You research questions."
tools = ["file_read"]

[serve]
max_concurrent_runs = 40
run_lease_ttl_ms = 1000
"#;

/// The provider: a run's first call gets a `file_read` tool call, its second (which
/// carries the tool result) the final answer, held until the test opens the gate.
fn provider() -> (MockServer, oxydra_test_support::Release) {
    let (held, release) = openai::text("finished").held_at(0);
    let server = MockServer::builder()
        .respond_with(move |request| {
            let body = request.body.to_string();
            if body.contains("\"role\":\"tool\"") {
                held.clone()
            } else {
                openai::tool_calls(&[("call_1", "file_read", r#"{"path":"notes.txt"}"#)])
            }
        })
        .start()
        .unwrap();
    (server, release)
}

#[test]
fn three_workers_lose_one_and_every_run_completes_exactly_once() {
    let rt = runtime();
    let Some(database) = rt.block_on(TestDatabase::create()) else {
        return;
    };
    let (provider, release) = provider();
    let sandbox = sandbox_with_config(CONFIG);
    std::fs::write(sandbox.workspace.join("notes.txt"), "the notes").unwrap();
    let db = database.url_with_schema();
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--base-url",
        &provider.openai_url(),
        "--approve",
        "allow",
    ];
    let mut workers: Vec<Server> = (0..3)
        .map(|_| Server::start_on(&sandbox, &[], &args, db.as_ref()))
        .collect();

    let client = oxydra::http::client();
    let run_ids: Vec<String> = rt.block_on(async {
        let mut ids = Vec::new();
        for i in 0..RUNS {
            let worker = &workers[i % workers.len()];
            let created = client
                .post(worker.url("/runs"))
                .json(&json!({"agent_name": "researcher", "parameters": {"prompt": format!("task {i}")}}))
                .send()
                .await
                .unwrap();
            assert_eq!(created.status(), 201);
            let created: Value = created.json().await.unwrap();
            ids.push(created["run_id"].as_str().unwrap().to_owned());
        }
        ids
    });

    // Mid-run: every run has stored its prompt, tool call and tool result and waits
    // for its final answer.
    let deadline = Instant::now() + Duration::from_secs(60);
    while provider
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("\"role\":\"tool\""))
        .count()
        < RUNS
    {
        assert!(
            Instant::now() < deadline,
            "runs never reached their final call"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut victim = workers.remove(0);
    kill(
        Pid::from_raw(i32::try_from(victim.child.id()).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    victim.child.wait().unwrap();
    release.release();

    let runs: Vec<Value> = rt.block_on(async {
        let mut runs = Vec::new();
        for id in &run_ids {
            let deadline = Instant::now() + Duration::from_secs(60);
            let run = loop {
                let run = get_json(&client, &workers[0].url(&format!("/runs/{id}"))).await;
                if run["status"] != "pending" && run["status"] != "running" {
                    break run;
                }
                assert!(Instant::now() < deadline, "run never finished: {run}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            // Every worker answers the same.
            assert_eq!(
                get_json(&client, &workers[1].url(&format!("/runs/{id}"))).await,
                run
            );
            runs.push(run);
        }
        runs
    });
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run["status"], "completed", "{run}");
        assert_eq!(run["result"]["text"], "finished", "{run}");
        assert_eq!(run["parameters"]["prompt"], format!("task {i}"));
    }

    // Each conversation whole, nothing lost or duplicated; some runs were taken over.
    let (resumed, conversations) = rt.block_on(async {
        let (pg, connection) = tokio_postgres::connect(database.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let schema = database.schema();
        let resumed: i64 = pg
            .query_one(
                &format!("SELECT count(*) FROM {schema}.coordinator_runs WHERE attempts > 1"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        let mut conversations = Vec::new();
        for run in &runs {
            let session = run["result"]["session_id"].as_str().unwrap().to_owned();
            let rows = pg
                .query(
                    &format!(
                        "SELECT sequence, role, payload FROM {schema}.conversation_events
                         WHERE session_id = $1 ORDER BY sequence"
                    ),
                    &[&session],
                )
                .await
                .unwrap();
            let messages: Vec<(i64, String, Value)> = rows
                .iter()
                .map(|row| {
                    let payload: String = row.get(2);
                    (
                        row.get(0),
                        row.get(1),
                        serde_json::from_str(&payload).unwrap(),
                    )
                })
                .collect();
            conversations.push(messages);
        }
        (resumed, conversations)
    });
    assert!(resumed >= 1, "the killed worker held no run");
    for (i, messages) in conversations.iter().enumerate() {
        let roles: Vec<&str> = messages.iter().map(|(_, role, _)| role.as_str()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "assistant"],
            "run {i}: {messages:?}"
        );
        let sequences: Vec<i64> = messages.iter().map(|(s, _, _)| *s).collect();
        assert_eq!(sequences, [1, 2, 3, 4]);
        assert_eq!(messages[0].2["content"], format!("task {i}"));
        let tool_output = messages[2].2["content"].as_str().unwrap();
        assert!(tool_output.contains("the notes"), "run {i}: {tool_output}");
        assert_eq!(messages[3].2["content"], "finished");
    }
    for worker in workers {
        let (code, rest) = worker.terminate();
        assert_eq!(code, Some(0), "{rest}");
    }
}

/// The headline of approvals that wait: a run asks for consent on one of two workers
/// sharing the database, both are killed with `kill -9`, and a worker started
/// afterwards takes the decision and completes the run (the waiting run is only rows,
/// and recovery after the crash leaves it waiting).
#[test]
fn a_run_waiting_for_approval_survives_kill_9_of_every_worker_and_completes_on_a_new_one() {
    let rt = runtime();
    let Some(database) = rt.block_on(TestDatabase::create()) else {
        return;
    };
    let provider = writer_provider();
    let sandbox =
        sandbox_with_config(&ASK_CONFIG.replace("[serve]\n", "[serve]\nrun_lease_ttl_ms = 1000\n"));
    let db = database.url_with_schema();
    let workers: Vec<Server> = (0..2)
        .map(|_| Server::start_against_on(&sandbox, &provider, db.as_ref()))
        .collect();
    let client = oxydra::http::client();
    let (run_id, approval_id) = rt.block_on(async {
        let run_id = start_run(&client, &workers[0], "write out.txt").await;
        // Seen waiting from the other worker too: it is stored, not held in memory.
        let run = wait_for_status(&client, &workers[1].base, &run_id, "waiting_approval").await;
        let approval_id = the_pending_write(&run);
        let same = get_json(&client, &workers[0].url(&format!("/runs/{run_id}"))).await;
        assert_eq!(same["pending_approvals"], run["pending_approvals"]);
        (run_id, approval_id)
    });
    for mut worker in workers {
        kill(
            Pid::from_raw(i32::try_from(worker.child.id()).unwrap()),
            Signal::SIGKILL,
        )
        .unwrap();
        worker.child.wait().unwrap();
    }
    assert!(!sandbox.workspace.join("out.txt").exists(), "ran unasked");

    let fresh = Server::start_against_on(&sandbox, &provider, db.as_ref());
    rt.block_on(async {
        let run = get_json(&client, &fresh.url(&format!("/runs/{run_id}"))).await;
        assert_eq!(run["status"], "waiting_approval", "{run}");
        assert_eq!(the_pending_write(&run), approval_id);
        let (status, decided) = decide(
            &client,
            &fresh.base,
            &run_id,
            &approval_id,
            &json!({"decision": "approve_once"}),
        )
        .await;
        assert_eq!(status, 200, "{decided}");
        let run = wait_for_status(&client, &fresh.base, &run_id, "completed").await;
        assert_eq!(run["result"]["text"], "done", "{run}");
    });
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
        WRITTEN
    );
    // The model was asked once for the call and once with its result: the resumed run
    // did not start over.
    assert_eq!(provider.requests().len(), 2, "{:?}", provider.requests());
    let (code, rest) = fresh.terminate();
    assert_eq!(code, Some(0), "{rest}");
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A malformed URL, an unreachable server: errors naming the flag or the config key
/// the database came from, and the server, never the password.
#[test]
fn bad_database_urls_are_errors_naming_where_they_came_from() {
    let sandbox = common::Sandbox::new();
    let malformed = sandbox
        .command()
        .args([
            "sessions",
            "list",
            "--all",
            "--db",
            "postgres://h:notaport/db",
        ])
        .output()
        .unwrap();
    assert!(!malformed.status.success());
    let text = stderr_of(&malformed);
    assert!(text.contains("--db") && text.contains("invalid"), "{text}");

    let unreachable = sandbox
        .command()
        .args([
            "sessions",
            "list",
            "--db",
            "postgres://bob:s3cret@127.0.0.1:1/oxydra",
        ])
        .output()
        .unwrap();
    assert!(!unreachable.status.success());
    let text = stderr_of(&unreachable);
    assert!(
        text.contains("--db") && text.contains("127.0.0.1:1/oxydra"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");

    let configured = common::serve::sandbox_with_config(
        "[memory]\ndb = \"postgres://127.0.0.1:1/fromconfig\"\n",
    );
    let output = configured
        .command()
        .args(["sessions", "list", "--all"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = stderr_of(&output);
    assert!(
        text.contains("[memory] db") && text.contains("fromconfig"),
        "{text}"
    );
}

/// `run` and `sessions` on PostgreSQL: a session stored by `run` is listed and shown.
#[test]
fn run_and_sessions_work_on_postgres() {
    let rt = runtime();
    let Some(database) = rt.block_on(TestDatabase::create()) else {
        return;
    };
    let provider = MockServer::start(vec![openai::text("stored in postgres")]).unwrap();
    let sandbox = common::Sandbox::new();
    let db = database.url_with_schema();
    let run = sandbox
        .command()
        .args([
            "run",
            "hello there",
            "--base-url",
            &provider.openai_url(),
            "--db",
            &db,
        ])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr_of(&run));
    let list = sandbox
        .command()
        .args([
            "sessions", "list", "--all", "--output", "jsonl", "--db", &db,
        ])
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", stderr_of(&list));
    let listed: Value = serde_json::from_str(
        String::from_utf8_lossy(&list.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(listed["messages"], 2);
    let session = listed["session_id"].as_str().unwrap();
    let show = sandbox
        .command()
        .args([
            "sessions", "show", session, "--output", "jsonl", "--db", &db,
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("hello there") && shown.contains("stored in postgres"),
        "{shown}"
    );
}
