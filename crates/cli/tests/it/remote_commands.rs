//! `oxydra runs …` and `oxydra approvals …` against a real `oxydra serve`: a person
//! lists what waits, sees what it will do, approves or denies it by its id alone, and
//! follows the run to its end; bad filters, unknown ids and a missing token exit 2
//! with the server's error.

use crate::common;

use std::process::{Command, Output};

use common::approvals::{
    ASK_CONFIG, WRITTEN, last_tool_result, start_run, the_pending_write, wait_for_status,
    writer_provider,
};
use common::serve::{Server, runtime, sandbox_with_config};
use common::{Sandbox, stderr, stdout};
use serde_json::Value;

/// `oxydra ARGS --server SERVER` in `sandbox`, the token `token` (or none).
fn client(sandbox: &Sandbox, server: &Server, token: Option<&str>, args: &[&str]) -> Output {
    let mut command: Command = sandbox.command();
    command.args(args);
    if !args.contains(&"--server") {
        command.args(["--server", &server.base]);
    }
    command
        .env_remove("OXYDRA_TOKEN")
        .env_remove("OXYDRA_SERVE_TOKEN")
        .env_remove("OXYDRA_SERVER");
    if let Some(token) = token {
        command.env("OXYDRA_TOKEN", token);
    }
    command.output().unwrap()
}

fn ok(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

#[test]
fn a_person_lists_approves_and_denies_waiting_calls_and_watches_runs_end() {
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ASK_CONFIG);
    let server = Server::start_against(&sandbox, &provider);
    let http = oxydra::http::client();
    let (first, first_approval) = rt.block_on(async {
        let run_id = start_run(&http, &server, "write out.txt").await;
        let run = wait_for_status(&http, &server.base, &run_id, "waiting_approval").await;
        (run_id, the_pending_write(&run))
    });

    // What waits, and what it will do: the file's diff, escapes shown escaped.
    let listed = ok(&client(&sandbox, &server, None, &["approvals", "list"]));
    assert!(listed.contains(&first_approval), "{listed}");
    assert!(listed.contains(&first), "{listed}");
    assert!(listed.contains("+++ b/out.txt"), "{listed}");
    assert!(listed.contains("+hello"), "{listed}");
    assert!(!listed.contains('\u{1b}'), "{listed:?}");
    // Why a person decides: file_write asks for consent (no untrusted text was read).
    assert!(
        listed.contains("  why: the tool has a requires_consent rule\n"),
        "{listed}"
    );
    let json = ok(&client(
        &sandbox,
        &server,
        None,
        &["approvals", "list", "--json"],
    ));
    let approval: Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(approval["preview"]["kind"], "diff", "{approval}");
    assert_eq!(
        approval["reason"], "the tool has a requires_consent rule",
        "{approval}"
    );

    let waiting = ok(&client(
        &sandbox,
        &server,
        None,
        &["runs", "list", "--status", "waiting_approval", "--json"],
    ));
    let runs: Vec<Value> = waiting
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(runs.len(), 1, "{waiting}");
    assert_eq!(runs[0]["run_id"], first.as_str());

    // Approved by its id alone; the run completes and `watch` ends with it.
    let approved = ok(&client(
        &sandbox,
        &server,
        None,
        &["approvals", "approve", &first_approval],
    ));
    assert!(
        approved.contains(&format!("approve_once: {first_approval}")),
        "{approved}"
    );
    let watched = ok(&client(&sandbox, &server, None, &["runs", "watch", &first]));
    assert!(watched.trim_end().ends_with("done"), "{watched}");
    assert!(watched.contains("[completed]"), "{watched}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
        WRITTEN
    );
    let shown = ok(&client(
        &sandbox,
        &server,
        None,
        &["runs", "show", &first, "--json"],
    ));
    let run: Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(run["status"], "completed");

    // Denied with a reason the model reads.
    let second = rt.block_on(async {
        let run_id = start_run(&http, &server, "write out.txt").await;
        let run = wait_for_status(&http, &server.base, &run_id, "waiting_approval").await;
        (run_id, the_pending_write(&run))
    });
    ok(&client(
        &sandbox,
        &server,
        None,
        &[
            "approvals",
            "deny",
            &second.1,
            "--reason",
            "not on a friday",
        ],
    ));
    rt.block_on(wait_for_status(&http, &server.base, &second.0, "completed"));
    assert!(
        last_tool_result(&provider).contains("not on a friday"),
        "{}",
        last_tool_result(&provider)
    );

    // Deciding twice, an unknown id, a bad filter: exit 2 with the server's word.
    let again = client(
        &sandbox,
        &server,
        None,
        &["approvals", "approve", &first_approval],
    );
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("approval_not_found"),
        "{}",
        stderr(&again)
    );
    let bad = client(
        &sandbox,
        &server,
        None,
        &["runs", "list", "--status", "done"],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("invalid_query"), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("field `status`"), "{}", stderr(&bad));
    let missing = client(&sandbox, &server, None, &["runs", "show", "run_nope"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("run_not_found"),
        "{}",
        stderr(&missing)
    );
    let listed = ok(&client(&sandbox, &server, None, &["runs", "list"]));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        listed.lines().nth(1).unwrap().starts_with(&first),
        "{listed}"
    );
}

#[test]
fn without_the_token_a_client_command_is_refused_and_says_which_variable_to_set() {
    const TOKEN: &str = "a-long-random-token-for-the-client-test";
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox, &[("OXYDRA_SERVE_TOKEN", TOKEN)]);
    let refused = client(&sandbox, &server, None, &["runs", "list"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("401"), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("OXYDRA_TOKEN"),
        "{}",
        stderr(&refused)
    );
    let listed = ok(&client(&sandbox, &server, Some(TOKEN), &["runs", "list"]));
    assert_eq!(listed.trim(), "no runs");
    let unreachable = client(
        &sandbox,
        &server,
        Some(TOKEN),
        &["approvals", "list", "--server", "http://127.0.0.1:9"],
    );
    assert_eq!(
        unreachable.status.code(),
        Some(1),
        "{}",
        stderr(&unreachable)
    );
}
