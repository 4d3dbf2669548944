//! Side effects once across a crash, through the binary: a side-effecting call's
//! intent is stored before it runs and its outcome after; the process is stopped at
//! each point between them (`OXYDRA_TEST_CRASH_AT`, a debug build's abort, as
//! `kill -9` leaves it; and a real `kill -9` while the command runs); the session is
//! continued; the command never ran twice, and the model is told what is known — the
//! outcome unknown where it is.

use std::path::Path;
use std::process::Output;

use crate::common;

use common::{KillOnDrop, Sandbox, poll_until, read_pid, stderr, wait_exit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_test_support::{MockServer, openai};

const FLAGS: &[&str] = &["--approve", "allow", "--sandbox", "full-access"];

/// How many times the counting command ran.
fn runs(workspace: &Path) -> usize {
    std::fs::read_to_string(workspace.join("count.txt"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn shell_call(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

/// `oxydra run` of the counting `command` with `OXYDRA_TEST_CRASH_AT=point`.
fn crashing_run(sandbox: &Sandbox, command: &str, point: &str) -> (MockServer, Output) {
    crashing_call(
        sandbox,
        "shell_exec",
        &shell_call(command),
        point,
        "count once",
    )
}

/// `oxydra run PROMPT` whose model calls `tool` with `arguments` once, with
/// `OXYDRA_TEST_CRASH_AT=point`.
fn crashing_call(
    sandbox: &Sandbox,
    tool: &str,
    arguments: &str,
    point: &str,
    prompt: &str,
) -> (MockServer, Output) {
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_0", tool, arguments)]),
        openai::text("never asked"),
    ])
    .unwrap();
    let mut run = sandbox.stored_command("run");
    run.args(["--base-url", &server.openai_url()])
        .args(FLAGS)
        .env("OXYDRA_TEST_CRASH_AT", point)
        .arg(prompt);
    let output = run.output().unwrap();
    (server, output)
}

/// Continues the workspace's session with a new prompt; returns the tool result the
/// model was sent for `call_0`. `settles`: this run settles the interrupted call (the
/// first after the crash), so the person sees the call's line.
fn continue_and_read_result_as(sandbox: &Sandbox, settles: bool) -> String {
    let server = MockServer::start(vec![openai::text("noted")]).unwrap();
    let mut run = sandbox.stored_command("run");
    run.args(["--base-url", &server.openai_url(), "--continue"])
        .args(FLAGS)
        .arg("what happened?");
    let output = run.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    // The person sees the settled call too, as the call's line.
    let shown = format!("{}{}", common::stdout(&output), stderr(&output));
    assert_eq!(
        shown.contains("(0 ms)"),
        settles,
        "the settled call's line: {shown}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the answer was asked for");
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    let results: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .collect();
    assert_eq!(
        results.len(),
        1,
        "one result for the one call: {messages:?}"
    );
    assert_eq!(results[0]["tool_call_id"], "call_0");
    // The result stands right after its call, before the new prompt.
    let at = messages
        .iter()
        .position(|message| message["role"] == "tool")
        .unwrap();
    assert_eq!(messages[at - 1]["tool_calls"][0]["id"], "call_0");
    assert_eq!(messages[at + 1]["content"], "what happened?");
    results[0]["content"].as_str().unwrap().to_owned()
}

fn continue_and_read_result(sandbox: &Sandbox) -> String {
    continue_and_read_result_as(sandbox, true)
}

fn aborted(output: &Output) -> bool {
    output.status.code().is_none() && stderr(output).contains("OXYDRA_TEST_CRASH_AT")
}

#[test]
fn a_crash_after_the_intent_leaves_the_command_unrun_and_its_outcome_unknown() {
    let sandbox = Sandbox::new();
    let (server, output) = crashing_run(&sandbox, "echo run >> count.txt", "after_intent");
    assert!(aborted(&output), "stderr: {}", stderr(&output));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        runs(&sandbox.workspace),
        0,
        "the process stopped before the tool started"
    );

    let result = continue_and_read_result(&sandbox);
    assert!(result.contains("outcome unknown"), "{result}");
    assert!(result.contains("was not run again"), "{result}");
    assert_eq!(runs(&sandbox.workspace), 0, "the resume did not run it");
    // Continued again: the settled result is stored, read the same, and still nothing runs.
    assert_eq!(continue_and_read_result_as(&sandbox, false), result);
    assert_eq!(runs(&sandbox.workspace), 0);
}

#[test]
fn a_crash_after_the_command_ran_does_not_run_it_again() {
    let sandbox = Sandbox::new();
    let (_server, output) = crashing_run(&sandbox, "echo run >> count.txt", "after_execution");
    assert!(aborted(&output), "stderr: {}", stderr(&output));
    assert_eq!(runs(&sandbox.workspace), 1);

    let result = continue_and_read_result(&sandbox);
    assert!(result.contains("outcome unknown"), "{result}");
    assert_eq!(runs(&sandbox.workspace), 1, "the side effect happened once");
}

#[test]
fn a_crash_after_the_outcome_says_the_command_completed_and_its_output_was_lost() {
    let sandbox = Sandbox::new();
    let (_server, output) = crashing_run(&sandbox, "echo run >> count.txt", "after_outcome");
    assert!(aborted(&output), "stderr: {}", stderr(&output));
    assert_eq!(runs(&sandbox.workspace), 1);

    let result = continue_and_read_result(&sandbox);
    assert!(result.contains("ran to completion"), "{result}");
    assert!(!result.contains("outcome unknown"), "{result}");
    assert_eq!(runs(&sandbox.workspace), 1);
}

#[test]
fn kill_9_while_the_command_runs_leaves_its_outcome_unknown_and_it_runs_once() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[(
            "call_0",
            "shell_exec",
            &shell_call("echo $$ > sh.pid; echo run >> count.txt; sleep 30"),
        )]),
        openai::text("never asked"),
    ])
    .unwrap();
    let mut run = sandbox.stored_command("run");
    run.args(["--base-url", &server.openai_url()])
        .args(FLAGS)
        .arg("count once")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = KillOnDrop(run.spawn().unwrap());
    let ws = sandbox.workspace.clone();
    poll_until(|| runs(&ws) == 1, &|| "the command never ran".to_owned());
    kill(
        Pid::from_raw(i32::try_from(child.0.id()).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    let status = wait_exit(&mut child.0, &|| String::new());
    assert_eq!(status.code(), None, "killed");
    // The command's shell outlives the binary: stop it too.
    if let Some(pid) = read_pid(&sandbox.workspace.join("sh.pid")) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }

    let result = continue_and_read_result(&sandbox);
    assert!(result.contains("outcome unknown"), "{result}");
    assert_eq!(runs(&sandbox.workspace), 1, "the side effect happened once");
}

/// `file_write` judges itself: stopped before it wrote, the file is untouched and the
/// model is told so; stopped after, the file holds its content and the model is told
/// it took effect. Neither is written again.
#[test]
fn an_interrupted_file_write_is_judged_against_the_file() {
    for (point, expect) in [
        ("after_intent", "before it took effect"),
        ("after_execution", "already holds its result"),
    ] {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.workspace.join("notes.md"), "old\n").unwrap();
        let (_server, output) = crashing_call(
            &sandbox,
            "file_write",
            r#"{"path":"notes.md","content":"new\n"}"#,
            point,
            "write",
        );
        assert!(aborted(&output), "{point}: {}", stderr(&output));
        let written = std::fs::read_to_string(sandbox.workspace.join("notes.md")).unwrap();

        let result = continue_and_read_result(&sandbox);
        assert!(result.contains(expect), "{point}: {result}");
        assert_eq!(
            std::fs::read_to_string(sandbox.workspace.join("notes.md")).unwrap(),
            written,
            "{point}: the resume wrote nothing"
        );
    }
}

/// An agent whose model runs the counting command, one run at a time, run leases of
/// one second (so that a dead worker's run is taken over quickly).
const COUNTER_CONFIG: &str = r#"
[serve]
max_concurrent_runs = 1
run_lease_ttl_ms = 1000

[[agents]]
name = "counter"
type = "agent"
description = "Counts"
system_prompt = "You count."
tools = ["shell_exec"]
allow_privileged = ["shell_exec"]
"#;

/// On PostgreSQL: a `serve` worker dies between running the command and storing its
/// outcome; another worker takes the run over, resumes its session, and does not run
/// the command again — the model is told the outcome is unknown and answers.
#[test]
fn a_worker_taking_over_a_crashed_run_on_postgres_does_not_repeat_the_command() {
    use common::serve::{Server, get_json, runtime, sandbox_with_config};
    use oxydra_postgres::testing::TestDatabase;
    use std::time::{Duration, Instant};

    let rt = runtime();
    let Some(database) = rt.block_on(TestDatabase::create()) else {
        return;
    };
    let provider = MockServer::builder()
        .respond_with(|request| {
            let body = request.body.to_string();
            if body.contains("outcome unknown") {
                openai::text("the count may have happened")
            } else if body.contains("\"role\":\"tool\"") {
                openai::text("unexpected result")
            } else {
                openai::tool_calls(&[(
                    "call_0",
                    "shell_exec",
                    &shell_call("echo run >> count.txt"),
                )])
            }
        })
        .start()
        .unwrap();
    let sandbox = sandbox_with_config(COUNTER_CONFIG);
    let db = database.url_with_schema();
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--base-url",
        &provider.openai_url(),
        "--approve",
        "allow",
    ];
    let mut first = Server::start_on(
        &sandbox,
        &[("OXYDRA_TEST_CRASH_AT", "after_execution")],
        &args,
        db.as_ref(),
    );
    let client = oxydra::http::client();
    let run_id = rt.block_on(async {
        let created = client
            .post(first.url("/runs"))
            .json(&serde_json::json!({"agent_name": "counter", "parameters": {"prompt": "count once"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let created: serde_json::Value = created.json().await.unwrap();
        created["run_id"].as_str().unwrap().to_owned()
    });
    let status = wait_exit(&mut first.child, &|| {
        "the first worker did not stop".to_owned()
    });
    assert_eq!(status.code(), None, "it aborted at the crash point");
    assert_eq!(runs(&sandbox.workspace), 1);

    let second = Server::start_on(&sandbox, &[], &args, db.as_ref());
    let run = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let run = get_json(&client, &second.url(&format!("/runs/{run_id}"))).await;
            if run["status"] != "pending" && run["status"] != "running" {
                break run;
            }
            assert!(
                Instant::now() < deadline,
                "the run was never finished: {run}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["result"]["text"], "the count may have happened",
        "{run}"
    );
    assert_eq!(runs(&sandbox.workspace), 1, "the side effect happened once");
    let told = provider
        .requests()
        .iter()
        .filter(|request| request.body.to_string().contains("outcome unknown"))
        .count();
    assert_eq!(told, 1, "the model was told once");
    let (code, rest) = second.terminate();
    assert_eq!(code, Some(0), "{rest}");
}
